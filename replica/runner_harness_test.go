package replica

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// ctrlID is the fake controller's broker id.
const ctrlID = 100

// testLogger discards, unless STRATA_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return discard
}

// osOpener opens partition logs under root on the OS filesystem.
func osOpener(root string) LogOpener {
	return func(tp TopicPartition, o OpenOptions) (*segment.Log, error) {
		opts := &segment.Options{FS: vfs.OS, FileDeleteDelayMs: -1, Logger: discard}
		if o.StartAt >= 0 {
			opts.LogStartOffset = o.StartAt
		}
		return segment.Open(filepath.Join(root, tp.String()), opts)
	}
}

// tnode is a broker of the Runner tests: a Manager over OS-filesystem logs,
// a tserver answering other brokers' fetches from it, and its Runner.
type tnode struct {
	id   int32
	root string
	m    *Manager
	srv  *tserver
	run  *Runner
	ro   RunnerOptions
}

// tcluster is brokers plus a fake controller; LeaderAndIsr goes from the
// test straight to the Managers (the controller's requests are not the
// Runner's business), AlterPartition over TCP to the controller's listener.
type tcluster struct {
	t     *testing.T
	nodes map[int32]*tnode

	mu       sync.Mutex
	ctrl     *tcontroller
	csrv     *tserver
	ctrlOK   bool
	cepoch   int32
	topicIDs map[string][16]byte
}

// clusterOptions tweak a cluster's brokers.
type clusterOptions struct {
	cfg    func(c *Config)
	runner func(id int32, o *RunnerOptions)
	// noRunner lists brokers started without a Runner.
	noRunner []int32
}

func testReplicaConfig(id int32, root string) Config {
	return Config{
		BrokerID:              id,
		ReplicaLagTimeMaxMs:   2000,
		ReplicaFetchWaitMaxMs: 200,
		ReplicaFetchBackoffMs: 50,
		OpenLog:               osOpener(root),
		Logger:                testLogger(),
	}
}

func newCluster(t *testing.T, o clusterOptions, ids ...int32) *tcluster {
	t.Helper()
	c := &tcluster{t: t, nodes: map[int32]*tnode{}, ctrl: newController(), ctrlOK: true, topicIDs: map[string][16]byte{}}
	c.csrv = startServer(t, "127.0.0.1:0", nil, c.ctrl)
	for _, id := range ids {
		root := filepath.Join(t.TempDir(), "broker"+strconv.Itoa(int(id)))
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := testReplicaConfig(id, root)
		if o.cfg != nil {
			o.cfg(&cfg)
		}
		m, err := NewManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := &tnode{id: id, root: root, m: m}
		n.srv = startServer(t, "127.0.0.1:0", m, nil)
		n.ro = RunnerOptions{
			Controller:                        c.controller,
			SocketTimeoutMs:                   3000,
			SocketReceiveBufferBytes:          -1,
			HighWatermarkCheckpointIntervalMs: 60000,
			Logger:                            cfg.Logger.With("broker", id),
		}
		if o.runner != nil {
			o.runner(id, &n.ro)
		}
		c.nodes[id] = n
		t.Cleanup(func() {
			if n.run != nil {
				n.run.Close()
			}
			m.Close()
		})
		if !slices.Contains(o.noRunner, id) {
			n.start(t)
		}
	}
	return c
}

// start starts the node's Runner.
func (n *tnode) start(t *testing.T) {
	t.Helper()
	r, err := StartRunner(n.m, n.ro)
	if err != nil {
		t.Fatal(err)
	}
	n.run = r
}

// stop closes the node's Runner.
func (n *tnode) stop(t *testing.T) {
	t.Helper()
	if err := n.run.Close(); err != nil {
		t.Fatal(err)
	}
	n.run = nil
}

// controller is the brokers' view of the controller.
func (c *tcluster) controller() (int32, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ctrlID, c.csrv.addr, c.ctrlOK
}

// moveController makes a new fake controller (on a new listener) take over
// the old one's state and tells every Runner.
func (c *tcluster) moveController() *tcontroller {
	c.mu.Lock()
	old := c.ctrl
	nc := newController()
	old.mu.Lock()
	for tp, s := range old.parts {
		cp := *s
		nc.parts[tp] = &cp
	}
	old.mu.Unlock()
	c.ctrl = nc
	c.csrv = startServer(c.t, "127.0.0.1:0", nil, nc)
	c.ctrlOK = true
	c.mu.Unlock()
	for _, n := range c.nodes {
		if n.run != nil {
			n.run.ControllerChanged()
		}
	}
	return nc
}

// elect makes leader lead tp with isr (a new leader epoch and partition
// epoch, as the controller's election writes them) and sends LeaderAndIsr
// to the replicas in order, leader first.
func (c *tcluster) elect(tp TopicPartition, leader int32, isr []int32, replicas ...int32) {
	c.t.Helper()
	c.mu.Lock()
	ctrl := c.ctrl
	c.cepoch = max(c.cepoch, 1)
	cepoch := c.cepoch
	id, ok := c.topicIDs[tp.Topic]
	if !ok {
		id = [16]byte{byte(len(c.topicIDs) + 1)}
		c.topicIDs[tp.Topic] = id
	}
	c.mu.Unlock()
	ctrl.mu.Lock()
	s := ctrl.parts[tp]
	if s == nil {
		s = &tstate{leaderEpoch: -1, partitionEpoch: -1}
		ctrl.parts[tp] = s
	}
	s.leader, s.isr, s.replicas = leader, slices.Clone(isr), slices.Clone(replicas)
	s.leaderEpoch++
	s.partitionEpoch++
	st := *s
	ctrl.mu.Unlock()
	order := []int32{leader}
	for _, r := range replicas {
		if r != leader {
			order = append(order, r)
		}
	}
	for _, r := range order {
		n := c.nodes[r]
		if n == nil {
			continue
		}
		c.sendLeaderAndIsr(n, tp, id, cepoch, st)
	}
}

func (c *tcluster) sendLeaderAndIsr(n *tnode, tp TopicPartition, topicID [16]byte, cepoch int32, st tstate) {
	c.t.Helper()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 5
	req.ControllerID = ctrlID
	req.ControllerEpoch = cepoch
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = tp.Topic, topicID
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.ControllerEpoch = tp.Partition, cepoch
	ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion, ps.Replicas = st.leader, st.leaderEpoch, st.isr, st.partitionEpoch, st.replicas
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	for _, o := range c.nodes {
		host, port, err := net.SplitHostPort(o.srv.addr)
		if err != nil {
			c.t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = o.id, host, int32(p)
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	resp := n.m.LeaderAndIsr(req, time.Now().UnixMilli())
	for _, code := range codes(resp) {
		if code != 0 {
			c.t.Fatalf("broker %d: LeaderAndIsr %s: error %d", n.id, tp, code)
		}
	}
}

// produce appends values as one batch on the leader (acks=-1 with
// min.insync.replicas minISR, or acks=1 when minISR is 0) and returns the
// result.
func produce(t *testing.T, p *Partition, minISR int, values ...string) AppendResult {
	t.Helper()
	acks := int16(-1)
	if minISR == 0 {
		acks, minISR = 1, 1
	}
	r, err := p.AppendAsLeader(batch(t, values...), acks, minISR, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// await waits for an acks=-1 produce (timeout ms after now) as the broker's
// produce path does.
func await(t *testing.T, p *Partition, r AppendResult, timeoutMs int64) AckStatus {
	t.Helper()
	w := r.Wait
	w.Deadline = time.Now().UnixMilli() + timeoutMs
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutMs+5000)*time.Millisecond)
	defer cancel()
	return Await(ctx, p, &w, func() int64 { return time.Now().UnixMilli() })
}

// waitDeadline bounds every wait on a condition: far above what any of them
// needs, so that only a hang fails.
const waitDeadline = 60 * time.Second

// waitFor polls cond until it holds, failing the test after waitDeadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// caughtUp reports whether every follower of tp holds the leader's log and
// high watermark.
func (c *tcluster) caughtUp(tp TopicPartition, leader int32, followers ...int32) bool {
	l := c.nodes[leader].m.Partition(tp.Topic, tp.Partition)
	leo, hw := l.Log().LogEndOffset(), l.HighWatermark()
	if hw != leo {
		return false
	}
	for _, f := range followers {
		p := c.nodes[f].m.Partition(tp.Topic, tp.Partition)
		if p == nil || p.Log().LogEndOffset() != leo || p.HighWatermark() != hw {
			return false
		}
	}
	return true
}

// sameLogs checks that every follower's log holds the leader's records
// (offsets, epochs, values).
func (c *tcluster) sameLogs(t *testing.T, tp TopicPartition, leader int32, followers ...int32) {
	t.Helper()
	want := readLog(t, c.nodes[leader].m.Partition(tp.Topic, tp.Partition).Log(), -1)
	for _, f := range followers {
		got := readLog(t, c.nodes[f].m.Partition(tp.Topic, tp.Partition).Log(), -1)
		if !slices.Equal(got, want) {
			t.Fatalf("broker %d holds %v, leader %d holds %v", f, got, leader, want)
		}
	}
}

// isr is the leader's committed ISR of tp.
func (c *tcluster) isr(tp TopicPartition, leader int32) []int32 {
	return c.nodes[leader].m.Partition(tp.Topic, tp.Partition).ISR()
}
