package cluster_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is a settable clock for the config notification purge.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time       { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration)  { c.ns.Add(int64(d)) }
func newFakeClock(t time.Time) *fakeClock { c := &fakeClock{}; c.ns.Store(t.UnixNano()); return c }

// TestMemberConfigChanges: config change notifications are processed in
// sequence order, each once, from the ones present at start (a malformed
// one among them skipped) to those written later; notifications are
// deleted once older than 15 minutes, the newer ones kept.
func TestMemberConfigChanges(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	h := srv.Connect()
	defer h.Close()
	admin := cluster.NewAdmin(h)
	if err := cluster.EnsurePersistentPaths(h, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := admin.CreateTopic(name, [][]int32{{1}}, nil, [16]byte{}); err != nil {
			t.Fatal(err)
		}
	}
	// before the member starts: b, garbage, a (sequence order)
	if err := admin.ChangeTopicConfig("b", map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(cluster.ConfigChangeCreatePath(), []byte(`{"version":2,`), cluster.PersistentSequential); err != nil {
		t.Fatal(err)
	}
	if err := admin.ChangeTopicConfig("a", map[string]string{"retention.ms": "2"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	clock := newFakeClock(time.Unix(1700000000, 0))
	b := startTestBroker(t, 1)
	cfg := memberConfig(t, srv.Connect(), b)
	cfg.Now = clock.now
	cfg.OnTopicConfigChange = func(ts []string) {
		mu.Lock()
		got = append(got, ts...)
		mu.Unlock()
	}
	startMember(t, cfg)
	seen := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n }
	}
	waitFor(t, 5*time.Second, "the notifications present at start", seen(2))
	for _, name := range []string{"c", "a"} {
		if err := admin.ChangeTopicConfig(name, map[string]string{"cleanup.policy": "compact"}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the later notifications", seen(4))
	mu.Lock()
	if want := []string{"b", "a", "c", "a"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	mu.Unlock()
	notes := func() []string {
		kids, _, err := h.Children(cluster.ConfigChangesPath)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(kids)
		return kids
	}
	if n := len(notes()); n != 5 {
		t.Fatalf("%d notifications before the purge, want 5", n)
	}
	clock.add(16 * time.Minute)
	if err := admin.ChangeTopicConfig("b", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the purge", func() bool { return len(notes()) == 1 })
	last := notes()[0]
	if seq, _ := cluster.SequenceNumber(last, cluster.ConfigChangePrefix); seq != 5 {
		t.Fatalf("kept %s, want the newest (5)", last)
	}
	waitFor(t, 5*time.Second, "the last notification", seen(5))
}

// TestMemberLogDirFailure: ReportLogDirFailure writes Kafka's notification;
// the controller deletes it and sends the broker LeaderAndIsr for its
// replicas; those it answers KAFKA_STORAGE_ERROR for lead elsewhere.
func TestMemberLogDirFailure(t *testing.T) {
	c := newSimCluster(t, 3, nil)
	c.waitController(t)
	assign := [][]int32{{2, 1, 3}, {1, 2, 3}}
	if _, err := c.admin.CreateTopic("l", assign, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	live := map[int32]bool{1: true, 2: true, 3: true}
	waitFor(t, 10*time.Second, "led", func() bool { return allLed(t, c.admin, "l", 2, live) })
	b2 := c.brokers[1]
	before := len(b2.requests())
	var failed atomic.Bool
	b2.mu.Lock()
	b2.answer = func(req kmsg.Request) kmsg.Response {
		r, ok := req.(*kmsg.LeaderAndISRRequest)
		if !ok || !failed.Load() {
			return nil
		}
		resp := kmsg.NewPtrLeaderAndISRResponse()
		resp.Version = r.Version
		for _, ts := range r.TopicStates {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = ts.TopicID
			for _, ps := range ts.PartitionStates {
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Partition, rp.ErrorCode = ps.Partition, 56 // KAFKA_STORAGE_ERROR
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	b2.mu.Unlock()
	failed.Store(true)
	c.members[1].ReportLogDirFailure()
	h := c.srv.Connect()
	defer h.Close()
	waitFor(t, 10*time.Second, "partition 0 led away from broker 2", func() bool {
		st, _ := c.admin.PartitionState("l", 0)
		return st != nil && st.Leader != 2 && !slices.Contains(st.ISR, 2)
	})
	kids, _, err := h.Children(cluster.LogDirEventNotificationPath)
	if err != nil || len(kids) != 0 {
		t.Fatalf("notifications left: %v %v", kids, err)
	}
	lisr := 0
	for _, r := range b2.requests()[before:] {
		if _, ok := r.(*kmsg.LeaderAndISRRequest); ok {
			lisr++
		}
	}
	if lisr == 0 {
		t.Fatal("broker 2 got no LeaderAndIsr after its report")
	}
}

// TestMemberMalformedZnodes: garbage in a registration, a topic's
// assignment and its config is logged and skipped, at activation and
// after; the good topics are served, nothing crashes, and a topic whose
// assignment turns to garbage later is not forgotten.
func TestMemberMalformedZnodes(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	h := srv.Connect()
	defer h.Close()
	if err := cluster.EnsurePersistentPaths(h, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{
		cluster.BrokerPath(9):             `{"version":5,"endpoints":[`,
		cluster.TopicPath("bad"):          `{"partitions":{"0":"one"}}`,
		cluster.TopicPath("badcfg"):       `{"version":3,"partitions":{"0":[1]}}`,
		cluster.TopicConfigPath("badcfg"): `{"config":{"retention.ms":1}}`,
	} {
		if _, err := h.Create(p, []byte(data), cluster.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	admin := cluster.NewAdmin(h)
	if _, err := admin.CreateTopic("good", [][]int32{{1}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	b := startTestBroker(t, 1)
	cfg := memberConfig(t, srv.Connect(), b)
	var logs strings.Builder
	var logMu sync.Mutex
	cfg.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	logged := func(s string) func() bool {
		return func() bool { logMu.Lock(); defer logMu.Unlock(); return strings.Contains(logs.String(), s) }
	}
	defer func() {
		if t.Failed() {
			logMu.Lock()
			t.Log(logs.String())
			logMu.Unlock()
		}
	}()
	m := startMember(t, cfg)
	waitFor(t, 5*time.Second, "controller", m.IsController)
	live := map[int32]bool{1: true}
	waitFor(t, 5*time.Second, "good led", func() bool { return allLed(t, admin, "good", 1, live) })
	// after activation: a new garbage topic, and a good one turned bad
	if _, err := h.Create(cluster.TopicPath("bad2"), []byte(`not json`), cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Set(cluster.TopicPath("good"), []byte(`{"partitions":`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic("good2", [][]int32{{1}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "good2 led", func() bool { return allLed(t, admin, "good2", 1, live) })
	if st, _ := admin.PartitionState("good", 0); st == nil || st.Leader != 1 {
		t.Fatalf("good forgotten: %+v", st)
	}
	for _, name := range []string{"bad", "badcfg", "bad2"} {
		if st, _ := admin.PartitionState(name, 0); st != nil {
			t.Fatalf("malformed topic %s got a state: %+v", name, st)
		}
	}
	if !m.IsController() {
		t.Fatal("the controller stopped")
	}
	for _, want := range []string{"snapshot skipped broker 9 registration", "snapshot skipped topic bad:",
		"snapshot skipped topic badcfg", "malformed topic assignment: topic skipped\" broker=1 topic=bad2",
		"malformed topic assignment: keeping the last one read\" broker=1 topic=good",
		"malformed topic config: topic skipped\" broker=1 topic=badcfg"} {
		waitFor(t, 5*time.Second, "log line "+want, logged(want))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestMemberUncleanByConfigChange: a config change notification reaches
// the controller: enabling unclean.leader.election.enable on a topic
// whose only ISR member died elects the live out-of-sync replica.
func TestMemberUncleanByConfigChange(t *testing.T) {
	c := newSimCluster(t, 3, nil)
	c.waitController(t)
	if _, err := c.admin.CreateTopic("u", [][]int32{{1, 2}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "led", func() bool { return allLed(t, c.admin, "u", 1, map[int32]bool{1: true}) })
	st, _ := c.admin.PartitionState("u", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp *kmsg.AlterPartitionResponse
	var err error
	for _, m := range c.members { // whoever is the controller
		if m.IsController() {
			resp, err = m.AlterPartition(ctx, alterISR("u", 0, 1, c.members[0].BrokerEpoch(), st, []int32{1}))
		}
	}
	if err != nil || resp == nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("shrinking the ISR: %+v %v", resp, err)
	}
	c.members[0].Close() // broker 1, the only ISR member, dies
	waitFor(t, 10*time.Second, "u leaderless", func() bool {
		st, _ := c.admin.PartitionState("u", 0)
		return st != nil && st.Leader == -1
	})
	if err := c.admin.ChangeTopicConfig("u", map[string]string{"unclean.leader.election.enable": "true"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "broker 2 elected uncleanly", func() bool {
		st, _ := c.admin.PartitionState("u", 0)
		return st != nil && st.Leader == 2 && slices.Equal(st.ISR, []int32{2})
	})
}

// TestMemberEntityConfigChanges: notifications for users and clients
// entities (client quotas, SCRAM credentials) reach OnEntityConfigChange
// with their paths below /config, in order, and not OnTopicConfigChange.
func TestMemberEntityConfigChanges(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	h := srv.Connect()
	defer h.Close()
	admin := cluster.NewAdmin(h)
	if err := cluster.EnsurePersistentPaths(h, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var entities, topics []string
	b := startTestBroker(t, 1)
	cfg := memberConfig(t, srv.Connect(), b)
	cfg.OnTopicConfigChange = func(ts []string) { mu.Lock(); topics = append(topics, ts...); mu.Unlock() }
	cfg.OnEntityConfigChange = func(ps []string) { mu.Lock(); entities = append(entities, ps...); mu.Unlock() }
	startMember(t, cfg)
	if err := admin.ChangeEntityConfig(cluster.ConfigTypeClient, "c1", map[string]string{"producer_byte_rate": "1024"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create("/config/users/alice", nil, cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create("/config/users/alice/clients", nil, cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	if err := admin.ChangeEntityConfig(cluster.ConfigTypeUser, "alice/clients/<default>", map[string]string{"request_percentage": "50.0"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the entity notifications", func() bool { mu.Lock(); defer mu.Unlock(); return len(entities) >= 2 })
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"clients/c1", "users/alice/clients/<default>"}; !slices.Equal(entities, want) || len(topics) != 0 {
		t.Fatalf("entities %v topics %v, want %v and none", entities, topics, want)
	}
}
