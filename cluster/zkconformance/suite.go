// Package zkconformance is the one test suite every implementation of
// cluster.ZK passes: the production client over a real ZooKeeper
// (cluster.ZKConn) and the simulated ZooKeeper (package zksim). It checks
// create modes, versions and conditional writes, multi atomicity and per-op
// errors, each kind of watch and its one-shot nature, ephemeral cleanup on
// close and on expiry, disconnection without expiry, and chroot.
//
// A Backend opens sessions and causes the faults; Run runs every check as a
// subtest, each under a znode of its own so a backend may share one server.
package zkconformance

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
)

// OpenOptions say what session a check needs.
type OpenOptions struct {
	// Chroot, when set, is the session's chroot (created when missing).
	Chroot string
	// Expiring: the check will Expire the session, so a backend with real
	// timeouts should make the session timeout short.
	Expiring bool
}

// Backend is a ZooKeeper under test.
type Backend struct {
	// Open opens a new session. Run closes it at the end of the check.
	Open func(t *testing.T, o OpenOptions) cluster.ZK
	// Expire makes the server expire z's session and returns once the
	// server has dropped it (its ephemerals are gone); z learns of it on
	// its own (Expired, then Connected with a new session).
	Expire func(t *testing.T, z cluster.ZK)
	// Disconnect cuts z's connection without expiring the session;
	// Reconnect restores it.
	Disconnect func(t *testing.T, z cluster.ZK)
	Reconnect  func(t *testing.T, z cluster.ZK)
	// Wait bounds every wait for an event (default 30 s).
	Wait time.Duration
	// Quiet is how long a check waits, after a later event that ZooKeeper
	// orders after it, to be sure an event did not come (default 100 ms;
	// a simulation with immediate delivery can use 0).
	Quiet time.Duration
}

var roots atomic.Int64

// h is one check's context.
type h struct {
	t    *testing.T
	b    Backend
	root string
}

// Run runs the suite over b.
func Run(t *testing.T, b Backend) {
	if b.Wait == 0 {
		b.Wait = 30 * time.Second
	}
	if b.Quiet < 0 {
		b.Quiet = 0
	} else if b.Quiet == 0 {
		b.Quiet = 100 * time.Millisecond
	}
	run := func(name string, f func(*h)) {
		t.Run(name, func(t *testing.T) {
			x := &h{t: t, b: b, root: fmt.Sprintf("/zkconformance-%d", roots.Add(1))}
			f(x)
		})
	}
	run("CreateModes", testCreateModes)
	run("BadPaths", testBadPaths)
	run("Sequential", testSequential)
	run("Versions", testVersions)
	run("MultiCommit", testMultiCommit)
	run("MultiRollback", testMultiRollback)
	run("DataWatch", testDataWatch)
	run("ChildWatch", testChildWatch)
	run("ExistsWatch", testExistsWatch)
	run("WatchOtherSession", testWatchOtherSession)
	run("MultiWatch", testMultiWatch)
	run("CloseCleansUp", testCloseCleansUp)
	run("ExpiryCleansUp", testExpiryCleansUp)
	run("DisconnectKeepsSession", testDisconnectKeepsSession)
	run("Chroot", testChroot)
	run("BigMulti", testBigMulti)
}

// open opens a session, closed at the check's end, and waits for its
// first Connected event.
func (x *h) open(o OpenOptions) cluster.ZK {
	x.t.Helper()
	z := x.b.Open(x.t, o)
	x.t.Cleanup(z.Close)
	ev := x.event(z)
	if ev.State != cluster.SessionConnected || ev.SessionID == 0 || ev.SessionID != z.SessionID() {
		x.t.Fatalf("first session event %+v (session 0x%x), want Connected", ev, z.SessionID())
	}
	return z
}

// session opens a session with the check's root created.
func (x *h) session() cluster.ZK {
	x.t.Helper()
	z := x.open(OpenOptions{})
	if _, err := z.Create(x.root, nil, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
		x.t.Fatalf("create root %s: %v", x.root, err)
	}
	return z
}

func (x *h) p(rel string) string { return x.root + rel }

// event waits for z's next session event.
func (x *h) event(z cluster.ZK) cluster.SessionEvent {
	x.t.Helper()
	select {
	case ev, ok := <-z.Events():
		if !ok {
			x.t.Fatal("Events closed")
		}
		return ev
	case <-time.After(x.b.Wait):
		x.t.Fatalf("no session event within %v", x.b.Wait)
	}
	return cluster.SessionEvent{}
}

// eventState waits for an event of state st, skipping others listed in
// skip; it returns the event.
func (x *h) eventState(z cluster.ZK, st cluster.SessionState, skip ...cluster.SessionState) cluster.SessionEvent {
	x.t.Helper()
	for {
		ev := x.event(z)
		if ev.State == st {
			return ev
		}
		ok := false
		for _, s := range skip {
			ok = ok || ev.State == s
		}
		if !ok {
			x.t.Fatalf("session event %+v while waiting for state %d", ev, st)
		}
	}
}

// fire waits for ch's one event, checks it and that ch is then closed.
func (x *h) fire(ch <-chan cluster.WatchEvent, typ cluster.WatchEventType, path string) {
	x.t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			x.t.Fatalf("watch closed without an event; want %v %s", typ, path)
		}
		if ev.Type != typ || ev.Path != path {
			x.t.Fatalf("watch event %+v, want type %v path %s", ev, typ, path)
		}
	case <-time.After(x.b.Wait):
		x.t.Fatalf("no watch event within %v; want %v %s", x.b.Wait, typ, path)
	}
	select {
	case ev, ok := <-ch:
		if ok {
			x.t.Fatalf("a one-shot watch fired again: %+v", ev)
		}
	case <-time.After(x.b.Wait):
		x.t.Fatal("watch channel not closed after its event")
	}
}

// quiet checks ch has no event: call it after waiting for an event that
// ZooKeeper orders after the one that must not have come.
func (x *h) quiet(ch <-chan cluster.WatchEvent, what string) {
	x.t.Helper()
	var after <-chan time.Time
	if x.b.Quiet > 0 {
		after = time.After(x.b.Quiet)
	} else {
		c := make(chan time.Time)
		close(c)
		after = c
	}
	select {
	case ev, ok := <-ch:
		x.t.Fatalf("%s: unexpected watch event %+v (open %v)", what, ev, ok)
	case <-after:
	}
}

func (x *h) must(err error, what string) {
	x.t.Helper()
	if err != nil {
		x.t.Fatalf("%s: %v", what, err)
	}
}

func (x *h) is(err, want error, what string) {
	x.t.Helper()
	if !errors.Is(err, want) {
		x.t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

func (x *h) create(z cluster.ZK, p string, data string, mode cluster.CreateMode) string {
	x.t.Helper()
	got, err := z.Create(p, []byte(data), mode)
	x.must(err, "create "+p)
	return got
}

func (x *h) get(z cluster.ZK, p string) (string, cluster.Stat) {
	x.t.Helper()
	b, st, err := z.Get(p)
	x.must(err, "get "+p)
	return string(b), st
}

func (x *h) exists(z cluster.ZK, p string) bool {
	x.t.Helper()
	ok, _, err := z.Exists(p)
	x.must(err, "exists "+p)
	return ok
}

// poll retries f until it reports true or the wait passes.
func (x *h) poll(what string, f func() bool) {
	x.t.Helper()
	deadline := time.Now().Add(x.b.Wait)
	for !f() {
		if time.Now().After(deadline) {
			x.t.Fatalf("%s: not within %v", what, x.b.Wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func children(x *h, z cluster.ZK, p string) string {
	x.t.Helper()
	cs, _, err := z.Children(p)
	x.must(err, "children "+p)
	sort.Strings(cs)
	return strings.Join(cs, ",")
}
