package zksim_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
)

func events(h *zksim.Session) []cluster.SessionEvent {
	var evs []cluster.SessionEvent
	for {
		select {
		case ev := <-h.Events():
			evs = append(evs, ev)
		default:
			return evs
		}
	}
}

func pending(ch <-chan cluster.WatchEvent) (cluster.WatchEvent, bool) {
	select {
	case ev := <-ch:
		return ev, true
	default:
		return cluster.WatchEvent{}, false
	}
}

// TestHoldAndDeliver: a held watch event stays queued (in order with what
// follows for the same handle) until Deliver, while another handle's events
// go out; the holder's own next call delivers it first (ZooKeeper shows a
// client a watch event before the data that caused it).
func TestHoldAndDeliver(t *testing.T) {
	var srv *zksim.Server
	holdClient := 1
	srv = zksim.NewServer(zksim.Options{Hold: func(d zksim.Delivery) bool { return d.Client == holdClient && d.Watch != nil }})
	a, b := srv.Connect(), srv.Connect()
	if b.Client() != holdClient {
		t.Fatalf("client numbers %d %d", a.Client(), b.Client())
	}
	if _, err := a.Create("/x", nil, cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	_, _, wa, _ := a.GetW("/x")
	_, _, wb, _ := b.GetW("/x")
	_, _, wb2, _ := b.ChildrenW("/x")
	if _, err := a.Set("/x", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create("/x/c", nil, cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	if ev, ok := pending(wa); !ok || ev.Type != cluster.NodeDataChanged {
		t.Fatalf("a's watch: %v %v", ev, ok)
	}
	if _, ok := pending(wb); ok {
		t.Fatal("b's held watch event was delivered")
	}
	ps := srv.Pending()
	if len(ps) != 2 || ps[0].Client != holdClient || ps[0].Watch.Type != cluster.NodeDataChanged ||
		ps[1].Watch.Type != cluster.NodeChildrenChanged || ps[0].Seq >= ps[1].Seq {
		t.Fatalf("pending %+v", ps)
	}
	// delivering the second delivers the first too: a handle's order holds
	if n := srv.Deliver(ps[1].Seq); n != 2 {
		t.Fatalf("delivered %d", n)
	}
	if ev, ok := pending(wb); !ok || ev.Type != cluster.NodeDataChanged {
		t.Fatalf("b's data watch: %v %v", ev, ok)
	}
	if ev, ok := pending(wb2); !ok || ev.Type != cluster.NodeChildrenChanged {
		t.Fatalf("b's child watch: %v %v", ev, ok)
	}
	// a held event goes out before b's next call answers
	_, _, wb3, _ := b.GetW("/x")
	if _, err := a.Set("/x", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if _, ok := pending(wb3); ok {
		t.Fatal("held event delivered early")
	}
	if data, _, _ := b.Get("/x"); string(data) != "2" {
		t.Fatalf("data %q", data)
	}
	if ev, ok := pending(wb3); !ok || ev.Type != cluster.NodeDataChanged {
		t.Fatal("b read the new data before its watch event")
	}
	if len(srv.Pending()) != 0 || srv.DeliverAll() != 0 {
		t.Fatal("something still pending")
	}
}

// TestExpireConnected: the handle's next call fails with ErrSessionExpired
// and does not run, then the handle works on the new session.
func TestExpireConnected(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	a := srv.Connect()
	old := a.SessionID()
	events(a)
	if _, err := a.Create("/e", nil, cluster.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if !srv.ExpireSession(old) || srv.ExpireSession(old) {
		t.Fatal("ExpireSession: expired twice or not at all")
	}
	if _, err := a.Create("/p", nil, cluster.Persistent); !errors.Is(err, cluster.ErrSessionExpired) {
		t.Fatalf("first call after expiry: %v", err)
	}
	if ok, _, _ := a.Exists("/p"); ok {
		t.Fatal("the call that reported the expiry ran")
	}
	if ok, _, _ := a.Exists("/e"); ok {
		t.Fatal("the expired session's ephemeral is still there")
	}
	evs := events(a)
	want := []cluster.SessionEvent{{State: cluster.SessionDisconnected, SessionID: old},
		{State: cluster.SessionExpired, SessionID: old}, {State: cluster.SessionConnected, SessionID: a.SessionID()}}
	if !reflect.DeepEqual(evs, want) || a.SessionID() == old {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	if got := srv.Sessions(); !reflect.DeepEqual(got, []int64{a.SessionID()}) {
		t.Fatalf("live sessions %v", got)
	}
}

// TestExpireWhileDisconnected: the handle learns of the expiry only when it
// reconnects; watch events of the old session that were waiting are
// dropped, its watches end WatchLost.
func TestExpireWhileDisconnected(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	a, b := srv.Connect(), srv.Connect()
	if _, err := a.Create("/w", nil, cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	_, _, w, _ := a.GetW("/w")
	old := a.SessionID()
	events(a)
	a.Disconnect()
	if _, err := b.Set("/w", []byte("x"), -1); err != nil { // fires a's watch, held while disconnected
		t.Fatal(err)
	}
	if _, ok := pending(w); ok {
		t.Fatal("watch event delivered while disconnected")
	}
	srv.ExpireSession(old)
	if _, _, err := a.Get("/w"); !errors.Is(err, cluster.ErrConnectionLoss) {
		t.Fatalf("get while disconnected: %v", err)
	}
	if a.SessionID() != 0 {
		t.Fatalf("session 0x%x after expiry, before reconnect", a.SessionID())
	}
	a.Reconnect()
	if ev, ok := pending(w); !ok || ev.Type != cluster.WatchLost {
		t.Fatalf("watch: %+v %v", ev, ok)
	}
	evs := events(a)
	if len(evs) != 3 || evs[0].State != cluster.SessionDisconnected || evs[1] != (cluster.SessionEvent{State: cluster.SessionExpired, SessionID: old}) ||
		evs[2].State != cluster.SessionConnected || evs[2].SessionID == old {
		t.Fatalf("events %+v", evs)
	}
	if _, _, err := a.Get("/w"); err != nil {
		t.Fatalf("get after reconnect: %v", err)
	}
}

// TestFaults: a lost request does not run, a lost response does; both
// report ErrConnectionLoss with a Disconnected/Connected pair of the same
// session.
func TestFaults(t *testing.T) {
	var next zksim.Fault
	var calls []zksim.Call
	srv := zksim.NewServer(zksim.Options{Fault: func(c zksim.Call) zksim.Fault {
		calls = append(calls, c)
		f := next
		next = zksim.NoFault
		return f
	}})
	a := srv.Connect()
	id := a.SessionID()
	events(a)
	next = zksim.LoseRequest
	if _, err := a.Create("/r", nil, cluster.Persistent); !errors.Is(err, cluster.ErrConnectionLoss) {
		t.Fatalf("lost request: %v", err)
	}
	if ok, _, _ := a.Exists("/r"); ok {
		t.Fatal("a lost request ran")
	}
	next = zksim.LoseResponse
	if _, err := a.Create("/r", nil, cluster.Persistent); !errors.Is(err, cluster.ErrConnectionLoss) {
		t.Fatalf("lost response: %v", err)
	}
	if ok, _, _ := a.Exists("/r"); !ok {
		t.Fatal("a request whose response was lost did not run")
	}
	want := []cluster.SessionEvent{{State: cluster.SessionDisconnected, SessionID: id}, {State: cluster.SessionConnected, SessionID: id},
		{State: cluster.SessionDisconnected, SessionID: id}, {State: cluster.SessionConnected, SessionID: id}}
	if evs := events(a); !reflect.DeepEqual(evs, want) {
		t.Fatalf("events %+v", evs)
	}
	if len(calls) != 4 || calls[0] != (zksim.Call{Session: id, Op: "create", Path: "/r"}) || calls[1].Op != "exists" {
		t.Fatalf("calls %+v", calls)
	}
}

// TestDeterministic: the same history gives the same zxids, session ids,
// sequence numbers and event order every time.
func TestDeterministic(t *testing.T) {
	run := func() string {
		srv := zksim.NewServer(zksim.Options{Hold: func(d zksim.Delivery) bool { return d.Seq%3 == 0 }})
		var out []string
		hs := []*zksim.Session{srv.Connect(), srv.Connect(), srv.Connect()}
		for i, h := range hs {
			if _, err := h.Create(fmt.Sprintf("/n%d", i), nil, cluster.Persistent); err != nil {
				t.Fatal(err)
			}
			for j := range hs {
				h.ExistsW(fmt.Sprintf("/n%d/e", j))
			}
		}
		for i, h := range hs {
			p, _ := h.Create(fmt.Sprintf("/n%d/e", i), nil, cluster.EphemeralSequential)
			out = append(out, p)
		}
		srv.ExpireSession(hs[1].SessionID())
		for _, d := range srv.Pending() {
			out = append(out, fmt.Sprintf("%d:%d:%v:%v", d.Seq, d.Client, d.Watch, d.Event))
		}
		srv.DeliverAll()
		out = append(out, fmt.Sprint(srv.Zxid(), srv.Sessions(), srv.Dump()))
		return fmt.Sprint(out)
	}
	first := run()
	for i := 0; i < 5; i++ {
		if again := run(); again != first {
			t.Fatalf("run %d differs:\n%s\n%s", i, again, first)
		}
	}
}

// TestEventsBufferFull: session events that do not fit wait in the queue
// instead of blocking or getting lost.
func TestEventsBufferFull(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{EventBuffer: 1})
	a := srv.Connect() // Connected fills the buffer
	for i := 0; i < 3; i++ {
		a.Disconnect()
		a.Reconnect()
	}
	var got []cluster.SessionState
	for i := 0; i < 7; i++ {
		got = append(got, (<-a.Events()).State)
		srv.DeliverAll()
	}
	want := []cluster.SessionState{cluster.SessionConnected, cluster.SessionDisconnected, cluster.SessionConnected,
		cluster.SessionDisconnected, cluster.SessionConnected, cluster.SessionDisconnected, cluster.SessionConnected}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v", got)
	}
}

func TestZxid(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	a := srv.Connect()
	z0 := srv.Zxid()
	a.Create("/a", nil, cluster.Persistent)
	a.Multi(cluster.Op{Kind: cluster.OpCreate, Path: "/b", Mode: cluster.Persistent}, cluster.Op{Kind: cluster.OpSet, Path: "/a", Version: -1})
	a.Get("/a")
	a.Set("/a", nil, 99) // fails: no transaction
	if srv.Zxid() != z0+2 {
		t.Fatalf("zxid %d, want %d", srv.Zxid(), z0+2)
	}
	_, st, _ := a.Get("/b")
	if st.Czxid != z0+2 {
		t.Fatalf("czxid %d", st.Czxid)
	}
}
