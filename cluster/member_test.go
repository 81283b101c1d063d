package cluster_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// simCluster is n members over one zksim server, each with a test broker.
type simCluster struct {
	srv     *zksim.Server
	brokers []*testBroker
	members []*cluster.Member
	handles []*zksim.Session
	admin   *cluster.Admin
}

func newSimCluster(t *testing.T, n int, edit func(*cluster.MemberConfig)) *simCluster {
	t.Helper()
	c := &simCluster{srv: zksim.NewServer(zksim.Options{})}
	for i := 1; i <= n; i++ {
		b := startTestBroker(t, int32(i))
		h := c.srv.Connect()
		cfg := memberConfig(t, h, b)
		if edit != nil {
			edit(&cfg)
		}
		c.brokers = append(c.brokers, b)
		c.handles = append(c.handles, h)
		c.members = append(c.members, startMember(t, cfg))
	}
	admin := c.srv.Connect()
	t.Cleanup(admin.Close)
	c.admin = cluster.NewAdmin(admin)
	return c
}

// waitController waits for an active controller that told every broker
// of every broker.
func (c *simCluster) waitController(t *testing.T) *cluster.Member {
	t.Helper()
	var ctrl *cluster.Member
	waitFor(t, 10*time.Second, "an active controller", func() bool {
		ctrl = controllerOf(t, c.members)
		return ctrl != nil
	})
	for _, b := range c.brokers {
		waitFor(t, 10*time.Second, "UpdateMetadata with every broker", func() bool { return b.liveBrokers() == len(c.brokers) })
	}
	return ctrl
}

// TestMemberJoin: members register with Kafka's znodes, agree on one
// cluster id and one controller (named by every member), and
// /controller_epoch was moved to 1 by the election.
func TestMemberJoin(t *testing.T) {
	c := newSimCluster(t, 3, nil)
	ctrl := c.waitController(t)
	for _, m := range c.members {
		if m.ClusterID() != c.members[0].ClusterID() || len(m.ClusterID()) != 22 {
			t.Fatalf("cluster ids %q and %q", m.ClusterID(), c.members[0].ClusterID())
		}
		waitFor(t, 5*time.Second, "members to see the controller", func() bool { return m.ControllerID() == ctrl.BrokerID() })
		if m.BrokerEpoch() == 0 {
			t.Fatalf("broker %d: no broker epoch", m.BrokerID())
		}
	}
	brokers, _, err := c.admin.LiveBrokers()
	if err != nil || len(brokers) != 3 {
		t.Fatalf("live brokers %v, %v", brokers, err)
	}
	for i, b := range brokers {
		if b.Epoch != c.members[i].BrokerEpoch() {
			t.Fatalf("broker %d: epoch %d, member says %d", b.ID, b.Epoch, c.members[i].BrokerEpoch())
		}
	}
	h := c.srv.Connect()
	defer h.Close()
	data, _, err := h.Get(cluster.ControllerEpochPath)
	if err != nil || string(data) != "1" {
		t.Fatalf("/controller_epoch %q, %v", data, err)
	}
	for _, p := range cluster.PersistentPaths {
		if ok, _, _ := h.Exists(p); !ok {
			t.Fatalf("%s not created", p)
		}
	}
}

// TestMemberCreateTopic: a topic written through Admin is picked up by the
// controller: every partition gets a state (first replica leads, ISR = the
// replicas) and every replica a LeaderAndIsr.
func TestMemberCreateTopic(t *testing.T) {
	c := newSimCluster(t, 3, nil)
	c.waitController(t)
	assign := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}}
	if _, err := c.admin.CreateTopic("orders", assign, map[string]string{"retention.ms": "1000"}, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	live := map[int32]bool{1: true, 2: true, 3: true}
	waitFor(t, 10*time.Second, "all partitions led", func() bool { return allLed(t, c.admin, "orders", 4, live) })
	for p, rs := range assign {
		st, _ := c.admin.PartitionState("orders", int32(p))
		if st.Leader != rs[0] || !slices.Equal(st.ISR, rs) || st.LeaderEpoch != 0 {
			t.Fatalf("partition %d state %+v, want leader %d isr %v", p, st, rs[0], rs)
		}
	}
	for _, b := range c.brokers {
		waitFor(t, 10*time.Second, "LeaderAndIsr at every replica", func() bool {
			parts, _, _ := b.state()
			return len(parts) == 4
		})
	}
}

// TestMemberControllerFailover: the controller's session expires; another
// member takes over, the old controller's partitions move to live ISR
// members, and the old one registers again (new broker epoch, told
// through OnReregistered) and gets its replicas back as a follower.
func TestMemberControllerFailover(t *testing.T) {
	rereg := make(chan int64, 4)
	c := newSimCluster(t, 3, func(cfg *cluster.MemberConfig) {
		cfg.OnReregistered = func(e int64) { rereg <- e }
	})
	old := c.waitController(t)
	assign := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	if _, err := c.admin.CreateTopic("t", assign, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	live := map[int32]bool{1: true, 2: true, 3: true}
	waitFor(t, 10*time.Second, "all led", func() bool { return allLed(t, c.admin, "t", 3, live) })
	oldEpoch := old.BrokerEpoch()
	i := slices.Index(c.members, old)
	// cut off first, so it cannot come back before the others took over
	c.handles[i].Disconnect()
	c.srv.ExpireSession(c.handles[i].SessionID())

	var next *cluster.Member
	waitFor(t, 10*time.Second, "a new controller", func() bool {
		// the old one, cut off, cannot know it was deposed
		next = controllerOf(t, slices.DeleteFunc(slices.Clone(c.members), func(m *cluster.Member) bool { return m == old }))
		return next != nil
	})
	others := map[int32]bool{1: true, 2: true, 3: true}
	delete(others, old.BrokerID())
	waitFor(t, 10*time.Second, "its partitions led by the others", func() bool { return allLed(t, c.admin, "t", 3, others) })
	for p := range assign {
		st, _ := c.admin.PartitionState("t", int32(p))
		if assign[p][0] == old.BrokerID() && (st.LeaderEpoch != 1 || slices.Contains(st.ISR, old.BrokerID())) {
			t.Fatalf("partition %d after its leader died: %+v", p, st)
		}
	}
	c.handles[i].Reconnect()
	select {
	case e := <-rereg:
		if e <= oldEpoch {
			t.Fatalf("re-registered with epoch %d, had %d", e, oldEpoch)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnReregistered after the expiry")
	}
	waitFor(t, 10*time.Second, "the old controller to resign", func() bool { return !old.IsController() })
	if old.BrokerEpoch() <= oldEpoch || controllerOf(t, c.members) != next {
		t.Fatalf("old controller: epoch %d (was %d); controller changed", old.BrokerEpoch(), oldEpoch)
	}
	// back as a follower: the controller tells it its replicas' states
	b := c.brokers[i]
	waitFor(t, 10*time.Second, "LeaderAndIsr for its replicas", func() bool {
		parts, _, _ := b.state()
		for p := range assign {
			st, _ := c.admin.PartitionState("t", int32(p))
			got, ok := parts[cluster.TopicPartition{Topic: "t", Partition: int32(p)}]
			if !ok || got.leader != st.Leader || got.leaderEpoch != st.LeaderEpoch {
				return false
			}
		}
		return true
	})
}

// TestMemberDuplicateBrokerID: a second broker with a broker.id in use is
// refused with a clear error; the first keeps its registration.
func TestMemberDuplicateBrokerID(t *testing.T) {
	c := newSimCluster(t, 1, nil)
	first := c.members[0]
	h := c.srv.Connect()
	defer h.Close()
	b := startTestBroker(t, 1)
	_, err := cluster.StartMember(memberConfig(t, h, b))
	if !errors.Is(err, cluster.ErrBrokerIDTaken) || err == nil ||
		!contains(err.Error(), "broker.id 1 is already registered by another broker") {
		t.Fatalf("second broker 1: %v", err)
	}
	_, st, err := h.Get(cluster.BrokerPath(1))
	if err != nil || st.Czxid != first.BrokerEpoch() {
		t.Fatalf("first registration: %+v %v (epoch %d)", st, err, first.BrokerEpoch())
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || len(s) >= len(sub) && indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestMemberGeneratedBrokerID: broker.id=-1 takes /brokers/seqid's new
// version + 1000: 1001, then 1002.
func TestMemberGeneratedBrokerID(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	for want := int32(1001); want <= 1002; want++ {
		b := startTestBroker(t, -1)
		cfg := memberConfig(t, srv.Connect(), b)
		m := startMember(t, cfg)
		if m.BrokerID() != want {
			t.Fatalf("generated id %d, want %d", m.BrokerID(), want)
		}
	}
}

// TestMemberClusterIDRefused: CheckClusterID refusing the cluster id fails
// the start before the broker registers.
func TestMemberClusterIDRefused(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	h := srv.Connect()
	defer h.Close()
	b := startTestBroker(t, 4)
	cfg := memberConfig(t, h, b)
	refuse := errors.New("meta.properties has cluster id X")
	var got string
	cfg.CheckClusterID = func(id string) error { got = id; return refuse }
	if _, err := cluster.StartMember(cfg); !errors.Is(err, refuse) {
		t.Fatalf("StartMember: %v", err)
	}
	data, _, err := h.Get(cluster.ClusterIDPath)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := cluster.DecodeClusterID(data); id != got {
		t.Fatalf("CheckClusterID got %q, /cluster/id holds %q", got, id)
	}
	if ok, _, _ := h.Exists(cluster.BrokerPath(4)); ok {
		t.Fatal("registered despite the refusal")
	}
}

// TestMemberControlRequests: AlterPartition on the controller changes the
// ISR (held until written); on another member it answers NOT_CONTROLLER at
// once.
func TestMemberControlRequests(t *testing.T) {
	c := newSimCluster(t, 3, nil)
	ctrl := c.waitController(t)
	if _, err := c.admin.CreateTopic("a", [][]int32{{1, 2, 3}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	live := map[int32]bool{1: true, 2: true, 3: true}
	waitFor(t, 10*time.Second, "led", func() bool { return allLed(t, c.admin, "a", 1, live) })
	st, _ := c.admin.PartitionState("a", 0)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = 1, c.members[0].BrokerEpoch()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = "a"
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.NewISR, rp.PartitionEpoch = 0, st.LeaderEpoch, []int32{1, 2}, st.Version
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range c.members {
		if m == ctrl {
			continue
		}
		resp, err := m.AlterPartition(ctx, req)
		if err != nil || resp.ErrorCode != 41 {
			t.Fatalf("broker %d (not the controller): %+v %v", m.BrokerID(), resp, err)
		}
	}
	resp, err := ctrl.AlterPartition(ctx, req)
	if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("controller: %+v %v", resp, err)
	}
	now, _ := c.admin.PartitionState("a", 0)
	if !slices.Equal(now.ISR, []int32{1, 2}) || now.Version != st.Version+1 ||
		resp.Topics[0].Partitions[0].PartitionEpoch != now.Version {
		t.Fatalf("state after AlterPartition %+v, response %+v", now, resp.Topics[0].Partitions[0])
	}
}
