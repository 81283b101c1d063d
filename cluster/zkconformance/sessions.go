package zkconformance

import (
	"errors"
	"strings"

	"github.com/stratalog/strata/cluster"
)

var errorsIs = errors.Is

func testCloseCleansUp(x *h) {
	a := x.session()
	b := x.open(OpenOptions{})
	x.create(a, x.p("/eph"), "", cluster.Ephemeral)
	x.create(a, x.p("/per"), "", cluster.Persistent)
	_, gone := x.existsW(b, x.p("/eph"))
	own := x.getW(a, x.p("/per"))
	a.Close()
	x.fire(gone, cluster.NodeDeleted, x.p("/eph"))
	x.fire(own, cluster.WatchLost, x.p("/per"))
	if x.exists(b, x.p("/eph")) || !x.exists(b, x.p("/per")) {
		x.t.Fatal("close: the ephemeral stayed or the persistent went")
	}
	_, _, err := a.Get(x.p("/per"))
	x.is(err, cluster.ErrClosed, "get after close")
	_, err = a.Create(x.p("/x"), nil, cluster.Persistent)
	x.is(err, cluster.ErrClosed, "create after close")
	if a.SessionID() != 0 {
		x.t.Fatalf("session 0x%x after close", a.SessionID())
	}
	a.Close() // twice is fine
}

func testExpiryCleansUp(x *h) {
	b := x.session()
	a := x.open(OpenOptions{Expiring: true})
	old := a.SessionID()
	x.create(a, x.p("/eph"), "", cluster.Ephemeral)
	_, est := x.get(a, x.p("/eph"))
	x.create(a, x.p("/per"), "", cluster.Persistent)
	_, gone := x.existsW(b, x.p("/eph"))
	own := x.getW(a, x.p("/per"))
	x.b.Expire(x.t, a)
	x.fire(gone, cluster.NodeDeleted, x.p("/eph"))
	if x.exists(b, x.p("/eph")) || !x.exists(b, x.p("/per")) {
		x.t.Fatal("expiry: the ephemeral stayed or the persistent went")
	}
	ev := x.eventState(a, cluster.SessionExpired, cluster.SessionDisconnected)
	if ev.SessionID != old {
		x.t.Fatalf("expired event for 0x%x, want 0x%x", ev.SessionID, old)
	}
	x.fire(own, cluster.WatchLost, x.p("/per"))
	ev = x.eventState(a, cluster.SessionConnected)
	if ev.SessionID == 0 || ev.SessionID == old {
		x.t.Fatalf("new session 0x%x after expiry of 0x%x", ev.SessionID, old)
	}
	// the handle works again on the new session (a call may still report
	// the expiry first)
	var path string
	x.poll("re-create the ephemeral", func() bool {
		var err error
		path, err = a.Create(x.p("/eph"), nil, cluster.Ephemeral)
		if err != nil && !errors.Is(err, cluster.ErrSessionExpired) && !errors.Is(err, cluster.ErrConnectionLoss) {
			x.t.Fatalf("create after expiry: %v", err)
		}
		return err == nil
	})
	_, st := x.get(b, path)
	if st.EphemeralOwner != ev.SessionID || st.EphemeralOwner != a.SessionID() || st.Czxid <= est.Czxid {
		x.t.Fatalf("re-created ephemeral %+v, session 0x%x (old czxid %d)", st, a.SessionID(), est.Czxid)
	}
}

func testDisconnectKeepsSession(x *h) {
	if x.b.Disconnect == nil {
		x.t.Skip("backend cannot disconnect")
	}
	b := x.session()
	a := x.open(OpenOptions{})
	id := a.SessionID()
	x.create(a, x.p("/eph"), "", cluster.Ephemeral)
	x.create(a, x.p("/w"), "", cluster.Persistent)
	w := x.getW(a, x.p("/w"))
	x.b.Disconnect(x.t, a)
	if ev := x.event(a); ev.State != cluster.SessionDisconnected {
		x.t.Fatalf("event %+v, want Disconnected", ev)
	}
	_, _, err := a.Get(x.p("/w"))
	x.is(err, cluster.ErrConnectionLoss, "get while disconnected")
	// a change while a is away fires its watch once it is back
	_, err = b.Set(x.p("/w"), []byte("1"), -1)
	x.must(err, "set")
	x.b.Reconnect(x.t, a)
	if ev := x.eventState(a, cluster.SessionConnected, cluster.SessionDisconnected); ev.SessionID != id {
		x.t.Fatalf("reconnected to session 0x%x, want 0x%x", ev.SessionID, id)
	}
	x.fire(w, cluster.NodeDataChanged, x.p("/w"))
	var st cluster.Stat
	x.poll("read after reconnect", func() bool {
		_, s, err := a.Get(x.p("/eph"))
		if err != nil && !errors.Is(err, cluster.ErrConnectionLoss) {
			x.t.Fatalf("get after reconnect: %v", err)
		}
		st = s
		return err == nil
	})
	if st.EphemeralOwner != id || a.SessionID() != id {
		x.t.Fatalf("after reconnect: owner 0x%x session 0x%x, want 0x%x", st.EphemeralOwner, a.SessionID(), id)
	}
}

func testChroot(x *h) {
	root := x.session()
	chroot := x.p("/ch/root")
	c := x.open(OpenOptions{Chroot: chroot})
	if !x.exists(root, chroot) {
		x.t.Fatal("the chroot was not created")
	}
	x.create(c, "/a", "in", cluster.Persistent)
	if data, _ := x.get(root, chroot+"/a"); data != "in" {
		x.t.Fatalf("through the root: %q", data)
	}
	if got := x.create(c, "/a/s-", "", cluster.PersistentSequential); got != "/a/s-0000000000" {
		x.t.Fatalf("sequential path in a chroot: %s", got)
	}
	w := x.childrenW(c, "/a")
	x.create(root, chroot+"/a/b", "", cluster.Persistent)
	x.fire(w, cluster.NodeChildrenChanged, "/a")
	if got := children(x, c, "/"); got != "a" {
		x.t.Fatalf("children of the chroot: %q", got)
	}
	res, err := c.Multi(cluster.Op{Kind: cluster.OpCreate, Path: "/m", Mode: cluster.Persistent})
	if err != nil || res[0].Path != "/m" || !strings.HasPrefix(chroot+res[0].Path, chroot) || !x.exists(root, chroot+"/m") {
		x.t.Fatalf("multi in a chroot: %+v %v", res, err)
	}
}
