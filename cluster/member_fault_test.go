package cluster_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMemberDeposedControllerFenced: /controller is deleted behind the
// controller's back while its /controller watch events are held (it does
// not know), so another broker is elected with epoch 2. The deposed
// controller then decides a write (an AlterPartition): its multi fails on
// the /controller_epoch check, nothing lands, and it resigns.
//
// The /controller watch is held by the member's handle (controllerWatchGate),
// not by zksim's Options.Hold: zksim delivers a handle's held events before
// its next call (as ZooKeeper sends a watch event before a later answer), and
// the deposed controller may still read something (its topic's follow-up
// reads under load), which let it notice before the test made it write.
func TestMemberDeposedControllerFenced(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	c := &simCluster{srv: srv}
	var gates []*controllerWatchGate
	for i := 1; i <= 3; i++ {
		b := startTestBroker(t, int32(i))
		h := srv.Connect()
		g := newControllerWatchGate(h)
		t.Cleanup(g.release)
		c.brokers, c.handles, gates = append(c.brokers, b), append(c.handles, h), append(gates, g)
		c.members = append(c.members, startMember(t, memberConfig(t, g, b)))
	}
	a := srv.Connect()
	defer a.Close()
	c.admin = cluster.NewAdmin(a)
	old := c.waitController(t)
	if _, err := c.admin.CreateTopic("f", [][]int32{{1, 2, 3}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "led", func() bool { return allLed(t, c.admin, "f", 1, map[int32]bool{1: true, 2: true, 3: true}) })
	before, _ := c.admin.PartitionState("f", 0)

	gate := gates[slices.Index(c.members, old)]
	// the deposed controller must not be reading /controller when it is
	// deleted: wait until it has read it after setting its last watch
	waitFor(t, 10*time.Second, "the controller to watch /controller", gate.holdWhenSettled)
	if err := a.Delete(cluster.ControllerPath, -1); err != nil {
		t.Fatal(err)
	}
	var next *cluster.Member
	waitFor(t, 10*time.Second, "another controller", func() bool {
		for _, m := range c.members {
			if m != old && m.IsController() {
				next = m
				return true
			}
		}
		return false
	})
	if !old.IsController() {
		t.Fatal("the deposed controller noticed before the test made it write")
	}
	req := alterISR("f", 0, old.BrokerID(), c.members[0].BrokerEpoch(), before, []int32{1, 2})
	req.BrokerID, req.BrokerEpoch = 1, c.members[0].BrokerEpoch()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := old.AlterPartition(ctx, req)
	if err != nil || resp.ErrorCode != 41 {
		t.Fatalf("deposed controller answered %+v, %v; want NOT_CONTROLLER", resp, err)
	}
	after, _ := c.admin.PartitionState("f", 0)
	if after.Version != before.Version || !slices.Equal(after.ISR, before.ISR) {
		t.Fatalf("a deposed controller's write landed: %+v -> %+v", before, after)
	}
	gate.release()
	waitFor(t, 10*time.Second, "the deposed controller to resign", func() bool { return !old.IsController() })
	if controllerOf(t, c.members) != next {
		t.Fatal("the controller changed again")
	}
}

// controllerWatchGate is a member's ZooKeeper handle that, once held,
// keeps the events of its /controller watches back until release (the
// controller has not yet seen the change); everything else passes.
type controllerWatchGate struct {
	*zksim.Session
	mu      sync.Mutex
	held    bool
	gate    chan struct{} // closed by release
	watched bool          // an ExistsW of /controller found it
	settled bool          // and a Get of it followed, with no ExistsW since
}

func newControllerWatchGate(s *zksim.Session) *controllerWatchGate {
	return &controllerWatchGate{Session: s, gate: make(chan struct{})}
}

// holdWhenSettled holds, and reports true, once the member has set its
// /controller watch and read /controller after it (Kafka's controller
// does the same: exists watch, then read), with no read of it since.
func (g *controllerWatchGate) holdWhenSettled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.settled {
		g.held = true
	}
	return g.held
}

func (g *controllerWatchGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		g.held = false
		close(g.gate)
	}
}

// relay forwards a /controller watch's event, after release when it fires
// while held.
func (g *controllerWatchGate) relay(path string, in <-chan cluster.WatchEvent) <-chan cluster.WatchEvent {
	if path != cluster.ControllerPath || in == nil {
		return in
	}
	out := make(chan cluster.WatchEvent, 1)
	go func() {
		defer close(out)
		ev, ok := <-in
		if !ok {
			return
		}
		g.mu.Lock()
		held, gate := g.held, g.gate
		g.mu.Unlock()
		if held {
			<-gate
		}
		out <- ev
	}()
	return out
}

func (g *controllerWatchGate) ExistsW(p string) (bool, cluster.Stat, <-chan cluster.WatchEvent, error) {
	if p == cluster.ControllerPath {
		g.mu.Lock()
		g.watched, g.settled = false, false
		g.mu.Unlock()
	}
	ok, st, w, err := g.Session.ExistsW(p)
	if p == cluster.ControllerPath {
		g.mu.Lock()
		g.watched = ok && err == nil
		g.mu.Unlock()
	}
	return ok, st, g.relay(p, w), err
}

func (g *controllerWatchGate) Get(p string) ([]byte, cluster.Stat, error) {
	if p == cluster.ControllerPath {
		g.mu.Lock()
		g.settled = false
		g.mu.Unlock()
	}
	data, st, err := g.Session.Get(p)
	if p == cluster.ControllerPath {
		g.mu.Lock()
		g.settled = g.watched && err == nil
		g.mu.Unlock()
	}
	return data, st, err
}

func (g *controllerWatchGate) GetW(p string) ([]byte, cluster.Stat, <-chan cluster.WatchEvent, error) {
	data, st, w, err := g.Session.GetW(p)
	return data, st, g.relay(p, w), err
}

func alterISR(topic string, p int32, leader int32, epoch int64, st *cluster.PartitionState, isr []int32) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = leader, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.NewISR, rp.PartitionEpoch = p, st.LeaderEpoch, isr, st.Version
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// expiringZK expires its own session just before a chosen call, as a
// session that dies mid-election.
type expiringZK struct {
	*zksim.Session
	srv  *zksim.Server
	mu   sync.Mutex
	when func(op string, ops []cluster.Op, path string) bool
	hits int
}

func (z *expiringZK) maybe(op string, ops []cluster.Op, path string) {
	z.mu.Lock()
	hit := z.when != nil && z.when(op, ops, path)
	if hit {
		z.when = nil
		z.hits++
	}
	z.mu.Unlock()
	if hit {
		z.srv.ExpireSession(z.Session.SessionID())
	}
}

func (z *expiringZK) Multi(ops ...cluster.Op) ([]cluster.OpResult, error) {
	z.maybe("multi", ops, "")
	return z.Session.Multi(ops...)
}

func (z *expiringZK) Get(p string) ([]byte, cluster.Stat, error) {
	z.maybe("get", nil, p)
	return z.Session.Get(p)
}

// TestMemberSessionLostMidElection: a broker's session expires between
// reading /controller_epoch and its election multi (the multi fails), or
// right after winning (its activation's first read fails). Either way it
// does not act as controller with that epoch: another broker is elected
// (or it wins again in its new session, with a new epoch), exactly one is
// active, and the one active holds the epoch in ZooKeeper.
func TestMemberSessionLostMidElection(t *testing.T) {
	electionMulti := func(op string, ops []cluster.Op) bool {
		return op == "multi" && len(ops) > 0 && ops[0].Path == cluster.ControllerPath
	}
	for _, tc := range []struct {
		name  string
		epoch int32 // broker 2's election, then broker 1's that counted
		when  func() func(op string, ops []cluster.Op, path string) bool
	}{
		{"before the multi", 2, func() func(string, []cluster.Op, string) bool {
			return func(op string, ops []cluster.Op, _ string) bool { return electionMulti(op, ops) }
		}},
		{"after winning", 3, func() func(string, []cluster.Op, string) bool {
			won := false
			return func(op string, ops []cluster.Op, p string) bool {
				if electionMulti(op, ops) {
					won = true
					return false
				}
				return won && op == "get" && p == cluster.ControllerPath
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := zksim.NewServer(zksim.Options{})
			// broker 1 starts alone and is the one whose session dies
			b1 := startTestBroker(t, 1)
			z1 := &expiringZK{Session: srv.Connect(), srv: srv}
			var armed atomic.Bool
			when := tc.when()
			z1.when = func(op string, ops []cluster.Op, p string) bool { return armed.Load() && when(op, ops, p) }
			cfg := memberConfig(t, z1, b1)
			b2 := startTestBroker(t, 2)
			m2 := startMember(t, memberConfig(t, srv.Connect(), b2))
			waitFor(t, 5*time.Second, "broker 2 controller", m2.IsController)
			armed.Store(true)
			m1 := startMember(t, cfg)
			// make broker 1 run for controller: broker 2 leaves
			m2.Close()
			ms := []*cluster.Member{m1}
			waitFor(t, 10*time.Second, "broker 1 controller in its new session", func() bool { return m1.IsController() })
			z1.mu.Lock()
			hits := z1.hits
			z1.mu.Unlock()
			if hits != 1 {
				t.Fatalf("the session was expired %d times, want 1", hits)
			}
			h := srv.Connect()
			defer h.Close()
			data, _, err := h.Get(cluster.ControllerEpochPath)
			if err != nil {
				t.Fatal(err)
			}
			epoch, _ := cluster.DecodeControllerEpoch(data)
			if epoch != tc.epoch {
				t.Fatalf("controller epoch %d, want %d", epoch, tc.epoch)
			}
			cdata, st, err := h.Get(cluster.ControllerPath)
			if err != nil || st.EphemeralOwner != z1.SessionID() {
				t.Fatalf("/controller %s owned by 0x%x, broker 1's session is 0x%x (%v)", cdata, st.EphemeralOwner, z1.SessionID(), err)
			}
			_ = controllerOf(t, ms)
		})
	}
}
