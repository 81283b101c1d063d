package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/internal/faultproxy"
	"github.com/stratalog/strata/internal/vfs"
)

// TestRunnerReplicates: a leader and two followers, each with its Runner
// over real sockets: acks=-1 produces complete once both followers fetched
// the batch, the followers hold the leader's records with their offsets and
// epochs, and learn the high watermark; each follower used one connection
// (num.replica.fetchers=1) for all its fetches. The lag time is an hour, so
// Ready's NextMs is far away: the Runners' loops run on the Managers' Wake
// alone.
func TestRunnerReplicates(t *testing.T) {
	c := newCluster(t, clusterOptions{cfg: func(cfg *Config) { cfg.ReplicaLagTimeMaxMs = 3600_000 }}, 1, 2, 3)
	c.elect(tp0, 1, []int32{1, 2, 3}, 1, 2, 3)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	for i := range 20 {
		r := produce(t, l, 2, fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i))
		if s := await(t, l, r, 30000); s != AckCommitted {
			t.Fatalf("produce %d: %v", i, s)
		}
		if hw := l.HighWatermark(); hw < r.Wait.Required {
			t.Fatalf("committed at HW %d, batch ends at %d", hw, r.Wait.Required)
		}
	}
	waitFor(t, "followers at the leader's log end and high watermark", func() bool { return c.caughtUp(tp0, 1, 2, 3) })
	c.sameLogs(t, tp0, 1, 2, 3)
	if got := l.Log().LogEndOffset(); got != 40 {
		t.Fatalf("leader log end %d, want 40", got)
	}
	if n := c.nodes[1].srv.accepted.Load(); n != 2 {
		t.Fatalf("leader accepted %d connections, want one per follower", n)
	}
	if n := c.nodes[1].srv.fetches.Load(); n < 20 {
		t.Fatalf("leader answered %d fetches", n)
	}
	wantISR(t, l, 1, 2, 3)
}

// TestRunnerFetchersPerLeader: four partitions, two led by broker 1 and
// two by broker 2, with num.replica.fetchers=2 (each leader's two
// partitions fall on fetcher ids 0 and 1): every follower fetches each
// partition from its leader, over one connection per (leader, fetcher id).
func TestRunnerFetchersPerLeader(t *testing.T) {
	c := newCluster(t, clusterOptions{cfg: func(cfg *Config) { cfg.NumReplicaFetchers = 2 }}, 1, 2, 3)
	leaderOf := func(p int32) int32 { return 1 + p/2 } // 1, 1, 2, 2
	var tps []TopicPartition
	for p := range int32(4) {
		tp := TopicPartition{Topic: testTopic, Partition: p}
		tps = append(tps, tp)
		c.elect(tp, leaderOf(p), []int32{1, 2, 3}, 1, 2, 3)
	}
	if FetcherID(tps[0], 2) == FetcherID(tps[1], 2) || FetcherID(tps[2], 2) == FetcherID(tps[3], 2) {
		t.Fatal("each leader's partitions should use both fetcher ids")
	}
	for _, tp := range tps {
		l := c.nodes[leaderOf(tp.Partition)].m.Partition(tp.Topic, tp.Partition)
		for j := range 5 {
			r := produce(t, l, 3, fmt.Sprintf("%s-%d", tp, j))
			if s := await(t, l, r, 30000); s != AckCommitted {
				t.Fatalf("%s: %v", tp, s)
			}
		}
	}
	for _, tp := range tps {
		leader := leaderOf(tp.Partition)
		var followers []int32
		for _, id := range []int32{1, 2, 3} {
			if id != leader {
				followers = append(followers, id)
			}
		}
		waitFor(t, "followers of "+tp.String(), func() bool { return c.caughtUp(tp, leader, followers...) })
		c.sameLogs(t, tp, leader, followers...)
	}
	for _, id := range []int32{1, 2} {
		if got := c.nodes[id].srv.accepted.Load(); got != 4 {
			t.Fatalf("broker %d accepted %d connections, want 4 (2 followers x 2 fetchers)", id, got)
		}
	}
}

// TestRunnerISRShrinkAndExpand: a follower cut off by a black-hole proxy
// (faultproxy Block) stops fetching; after replica.lag.time.max.ms the
// leader proposes the ISR without it, the Runner sends the AlterPartition to
// the controller over TCP, and acks=-1 produces with min.insync.replicas=2
// complete again; once the proxy heals the follower reconnects, catches up
// and the ISR expands back.
func TestRunnerISRShrinkAndExpand(t *testing.T) {
	var proxy *faultproxy.Proxy
	c := newCluster(t, clusterOptions{
		cfg: func(cfg *Config) { cfg.ReplicaLagTimeMaxMs = 1500 },
		runner: func(id int32, o *RunnerOptions) {
			if id != 3 {
				return
			}
			// Broker 3 reaches every other broker through the proxy (only
			// broker 1 leads here).
			o.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, proxy.Addr())
			}
		},
	}, 1, 2, 3)
	var err error
	if proxy, err = faultproxy.New(c.nodes[1].srv.addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	c.elect(tp0, 1, []int32{1, 2, 3}, 1, 2, 3)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, l, produce(t, l, 3, "before"), 30000); s != AckCommitted {
		t.Fatalf("produce before the cut: %v", s)
	}
	waitFor(t, "all in sync", func() bool { return c.caughtUp(tp0, 1, 2, 3) })

	proxy.Block()
	r := produce(t, l, 2, "during")
	if s := await(t, l, r, 60000); s != AckCommitted {
		t.Fatalf("produce during the cut: %v", s)
	}
	if got := c.ctrl.state(tp0).isr; !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("controller's ISR %v after the cut, want [1 2]", got)
	}
	wantISR(t, l, 1, 2)
	if err := l.CheckProduce(-1, 3); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=-1 with min.insync.replicas 3 and ISR [1 2]: %v", err)
	}
	if n := c.nodes[3].m.Partition(tp0.Topic, tp0.Partition).Log().LogEndOffset(); n >= r.Wait.Required {
		t.Fatalf("the cut-off follower got the batch (log end %d)", n)
	}

	proxy.Unblock()
	waitFor(t, "the follower back in the ISR", func() bool {
		return slices.Equal(c.isr(tp0, 1), []int32{1, 2, 3}) && slices.Equal(c.ctrl.state(tp0).isr, []int32{1, 2, 3})
	})
	waitFor(t, "the follower caught up", func() bool { return c.caughtUp(tp0, 1, 2, 3) })
	c.sameLogs(t, tp0, 1, 2, 3)
}

// TestRunnerLeaderRestart: the leader's listener goes away (every
// connection cut) and comes back on the same address; meanwhile the leader
// appends. The followers' fetchers back off, reconnect and catch up.
func TestRunnerLeaderRestart(t *testing.T) {
	c := newCluster(t, clusterOptions{}, 1, 2, 3)
	c.elect(tp0, 1, []int32{1, 2, 3}, 1, 2, 3)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, l, produce(t, l, 3, "x"), 30000); s != AckCommitted {
		t.Fatal(s)
	}
	waitFor(t, "caught up", func() bool { return c.caughtUp(tp0, 1, 2, 3) })
	old := c.nodes[1].srv
	old.Close()
	for i := range 5 {
		produce(t, l, 0, fmt.Sprintf("while down %d", i))
	}
	c.nodes[1].srv = startServer(t, old.addr, c.nodes[1].m, nil)
	waitFor(t, "caught up after the restart", func() bool { return c.caughtUp(tp0, 1, 2, 3) })
	c.sameLogs(t, tp0, 1, 2, 3)
	if n := c.nodes[1].srv.accepted.Load(); n != 2 {
		t.Fatalf("restarted leader accepted %d connections, want 2", n)
	}
}

// TestRunnerTruncatesDivergingTail: broker 1 leads epoch 0 and appends a
// tail nobody fetched; broker 2 is elected (epoch 1) and appends other
// records; broker 1, now a follower, fetches with its last epoch, gets the
// leader's diverging epoch, cuts its tail and takes the new leader's records
// (KIP-101 through Fetch v12).
func TestRunnerTruncatesDivergingTail(t *testing.T) {
	c := newCluster(t, clusterOptions{}, 1, 2)
	c.elect(tp0, 1, []int32{1, 2}, 1, 2)
	p1 := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, p1, produce(t, p1, 2, "a", "b"), 30000); s != AckCommitted {
		t.Fatal(s)
	}
	waitFor(t, "caught up", func() bool { return c.caughtUp(tp0, 1, 2) })
	c.nodes[2].stop(t)
	produce(t, p1, 0, "x", "y") // acks=1: only on broker 1
	c.elect(tp0, 2, []int32{2}, 2, 1)
	p2 := c.nodes[2].m.Partition(tp0.Topic, tp0.Partition)
	produce(t, p2, 0, "c", "d")
	c.nodes[2].start(t) // for the ISR expansion
	waitFor(t, "broker 1 caught up with broker 2", func() bool { return c.caughtUp(tp0, 2, 1) })
	c.sameLogs(t, tp0, 2, 1)
	got := readLog(t, p1.Log(), -1)
	want := []entry{{0, 0, "a"}, {1, 0, "b"}, {2, 1, "c"}, {3, 1, "d"}}
	if !slices.Equal(got, want) {
		t.Fatalf("broker 1 holds %v, want %v", got, want)
	}
	if e := p1.Epochs(); len(e) != 2 || e[1] != (EpochEntry{Epoch: 1, StartOffset: 2}) {
		t.Fatalf("broker 1 epochs %v", e)
	}
	waitFor(t, "broker 1 back in the ISR", func() bool { return slices.Equal(c.isr(tp0, 2), []int32{1, 2}) })
}

// TestRunnerOutOfRange: a follower whose log ends below the leader's log
// start gets OFFSET_OUT_OF_RANGE, asks the leader's offsets with ListOffsets
// over its own connection, starts its log over at the leader's log start
// and fetches from there.
func TestRunnerOutOfRange(t *testing.T) {
	c := newCluster(t, clusterOptions{noRunner: []int32{2}}, 1, 2)
	c.elect(tp0, 1, []int32{1}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	for i := range 10 {
		produce(t, l, 0, fmt.Sprint(i))
	}
	if _, err := l.DeleteRecords(8); err != nil {
		t.Fatal(err)
	}
	c.nodes[2].start(t)
	waitFor(t, "the follower at the leader's log end", func() bool { return c.caughtUp(tp0, 1, 2) })
	f := c.nodes[2].m.Partition(tp0.Topic, tp0.Partition)
	if got := f.Log().LogStartOffset(); got != 8 {
		t.Fatalf("follower log start %d, want 8", got)
	}
	got := readLog(t, f.Log(), -1)
	if want := []entry{{8, 0, "8"}, {9, 0, "9"}}; !slices.Equal(got, want) {
		t.Fatalf("follower holds %v, want %v", got, want)
	}
}

// TestRunnerBadAnswers: a leader answering once with records whose CRC
// fails, and once with a frame that decodes as nothing: the follower
// appends nothing bad, drops the broken connection, backs off, reconnects
// and ends with the leader's log.
func TestRunnerBadAnswers(t *testing.T) {
	c := newCluster(t, clusterOptions{}, 1, 2)
	c.elect(tp0, 1, []int32{1, 2}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	srv := c.nodes[1].srv
	waitFor(t, "a fetch parked", func() bool { return srv.parked.Load() > 0 })
	srv.corruptNext.Store(true)
	produce(t, l, 0, "one")
	waitFor(t, "caught up after the bad CRC", func() bool { return c.caughtUp(tp0, 1, 2) })
	if srv.corruptNext.Load() {
		t.Fatal("the corrupt answer was never sent")
	}
	waitFor(t, "a fetch parked", func() bool { return srv.parked.Load() > 0 })
	srv.garbageNext.Store(true)
	produce(t, l, 0, "two")
	// The garbage answers the fetch after the parked one; the follower
	// must then connect again.
	waitFor(t, "caught up on a new connection after the garbage frame", func() bool {
		return !srv.garbageNext.Load() && srv.accepted.Load() == 2 && c.caughtUp(tp0, 1, 2)
	})
	c.sameLogs(t, tp0, 1, 2)
}

// alterPending reports an ISR change not yet answered (tests).
func (p *Partition) alterPending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isr.pending != noChange
}

// TestRunnerShutdown: Close with a fetch parked on the leader (max wait far
// away) returns at once, hands the cancelled fetch back to the Manager (so
// a new Runner fetches again), and leaves replication-offset-checkpoint
// holding the follower's high watermark.
func TestRunnerShutdown(t *testing.T) {
	const maxWait = 60000
	c := newCluster(t, clusterOptions{
		cfg:    func(cfg *Config) { cfg.ReplicaFetchWaitMaxMs = maxWait },
		runner: func(_ int32, o *RunnerOptions) { o.SocketTimeoutMs = 2 * maxWait },
	}, 1, 2)
	c.elect(tp0, 1, []int32{1, 2}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	for i := range 3 {
		if s := await(t, l, produce(t, l, 2, fmt.Sprint(i)), 30000); s != AckCommitted {
			t.Fatal(s)
		}
	}
	waitFor(t, "caught up", func() bool { return c.caughtUp(tp0, 1, 2) })
	srv := c.nodes[1].srv
	waitFor(t, "the follower's fetch parked", func() bool { return srv.parked.Load() > 0 })
	n2 := c.nodes[2]
	start := time.Now()
	n2.stop(t)
	if d := time.Since(start); d >= maxWait/2*time.Millisecond {
		t.Fatalf("Close took %v with a fetch parked for up to %d ms", d, maxWait)
	}
	hw, err := ReadHighWatermarks(vfs.OS, n2.root)
	if err != nil {
		t.Fatal(err)
	}
	f := n2.m.Partition(tp0.Topic, tp0.Partition)
	if hw[tp0] != 3 || f.HighWatermark() != 3 {
		t.Fatalf("checkpointed HW %d, follower HW %d, want 3", hw[tp0], f.HighWatermark())
	}
	// The cancelled fetch was handed back: after the backoff the Manager
	// asks a fetch again.
	rd := n2.m.Ready(time.Now().UnixMilli() + n2.m.Config().ReplicaFetchBackoffMs)
	if len(rd.Fetches) != 1 {
		t.Fatalf("after Close the Manager asks %d fetches, want 1", len(rd.Fetches))
	}
	n2.m.FetchResponse(rd.Fetches[0].Target, rd.Fetches[0].Req, nil, errors.New("not sent"), time.Now().UnixMilli())
	n2.start(t)
	produce(t, l, 0, "after")
	waitFor(t, "caught up with a new Runner", func() bool { return c.caughtUp(tp0, 1, 2) })
}

// TestRunnerHighWatermarkCheckpoint: the checkpoint is written every
// replica.high.watermark.checkpoint.interval.ms while the Runner runs.
func TestRunnerHighWatermarkCheckpoint(t *testing.T) {
	c := newCluster(t, clusterOptions{runner: func(_ int32, o *RunnerOptions) { o.HighWatermarkCheckpointIntervalMs = 20 }}, 1, 2)
	c.elect(tp0, 1, []int32{1, 2}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	for i := range 2 {
		if s := await(t, l, produce(t, l, 2, fmt.Sprint(i)), 30000); s != AckCommitted {
			t.Fatal(s)
		}
		want := int64(i + 1)
		for _, n := range c.nodes {
			waitFor(t, fmt.Sprintf("broker %d's checkpoint at %d", n.id, want), func() bool {
				hw, err := ReadHighWatermarks(vfs.OS, n.root)
				return err == nil && hw[tp0] == want
			})
		}
	}
}

// TestRunnerAlterPartitionController: ISR changes go to the current
// controller. With none known, the Runner holds the AlterPartition (nothing
// is sent); a controller answering NOT_CONTROLLER gets the request again
// only after a backoff; when the controller moves (ControllerChanged) the
// request goes to the new one, which applies it.
func TestRunnerAlterPartitionController(t *testing.T) {
	c := newCluster(t, clusterOptions{
		cfg:      func(cfg *Config) { cfg.ReplicaLagTimeMaxMs = 200 },
		noRunner: []int32{2},
	}, 1, 2)
	c.mu.Lock()
	c.ctrlOK = false
	c.mu.Unlock()
	first := c.ctrl
	first.refuse.Store(int32(kerr.NotController.Code))
	c.elect(tp0, 1, []int32{1, 2}, 1, 2) // broker 2 never fetches: the ISR must shrink
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	waitFor(t, "the shrink proposed", func() bool { return slices.Equal(l.MaximalISR(), []int32{1, 2}) && l.alterPending() })

	if n := first.alterCount(); n != 0 {
		t.Fatalf("%d AlterPartition requests sent with no controller known", n)
	}
	// A controller appears, but it has lost its role: NOT_CONTROLLER.
	c.mu.Lock()
	c.ctrlOK = true
	c.mu.Unlock()
	c.nodes[1].run.ControllerChanged()
	// The same controller again only after a backoff doubling from the
	// retry interval (50, 100, 200, 400 ms), not every 50 ms.
	waitFor(t, "five refusals", func() bool { return first.alterCount() >= 5 })
	wantISR(t, l, 1, 2)
	first.mu.Lock()
	a0 := first.alters[0]
	spread := first.times[4].Sub(first.times[0])
	first.mu.Unlock()
	if spread < 700*time.Millisecond {
		t.Fatalf("five AlterPartition requests to a controller answering NOT_CONTROLLER within %v", spread)
	}
	if a0.BrokerID != 1 || len(a0.Topics) != 1 || !slices.Equal(a0.Topics[0].Partitions[0].NewISR, []int32{1}) {
		t.Fatalf("AlterPartition %+v", a0)
	}

	// The controller moves: the new one gets the change and applies it.
	next := c.moveController()
	waitFor(t, "the ISR shrunk through the new controller", func() bool { return slices.Equal(l.ISR(), []int32{1}) })
	if got := next.state(tp0).isr; !slices.Equal(got, []int32{1}) {
		t.Fatalf("new controller's ISR %v", got)
	}
	if n := next.alterCount(); n != 1 {
		t.Fatalf("new controller got %d AlterPartition requests, want 1", n)
	}
}

// TestRunnerOptions: the settings Kafka refuses are refused.
func TestRunnerOptions(t *testing.T) {
	c := newCluster(t, clusterOptions{noRunner: []int32{1}}, 1)
	m := c.nodes[1].m
	if _, err := StartRunner(m, RunnerOptions{}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("no controller resolver: %v", err)
	}
	o := c.nodes[1].ro
	o.SocketTimeoutMs = int64(m.Config().ReplicaFetchWaitMaxMs) - 1
	if _, err := StartRunner(m, o); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("socket timeout below the fetch wait: %v", err)
	}
}

// fetcherTargets lists the Runner's live fetchers (tests).
func (r *Runner) fetcherTargets() []FetchTarget {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []FetchTarget
	for t := range r.fetchers {
		out = append(out, t)
	}
	return out
}

// openConns is the number of connections the server holds open.
func (s *tserver) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// TestRunnerLeaderChange: a new leader is elected; Ready re-targets the
// followers' fetches to it (acks=-1 with all three in the ISR completes
// only if both others fetch from it), and the fetcher to the old leader,
// idle for replica.socket.timeout.ms, ends and closes its connection.
func TestRunnerLeaderChange(t *testing.T) {
	c := newCluster(t, clusterOptions{runner: func(_ int32, o *RunnerOptions) { o.SocketTimeoutMs = 1000 }}, 1, 2, 3)
	c.elect(tp0, 1, []int32{1, 2, 3}, 1, 2, 3)
	p1 := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, p1, produce(t, p1, 3, "under 1"), 30000); s != AckCommitted {
		t.Fatal(s)
	}
	waitFor(t, "caught up with broker 1", func() bool { return c.caughtUp(tp0, 1, 2, 3) })

	c.elect(tp0, 2, []int32{1, 2, 3}, 1, 2, 3)
	p2 := c.nodes[2].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, p2, produce(t, p2, 3, "under 2"), 30000); s != AckCommitted {
		t.Fatal(s)
	}
	waitFor(t, "caught up with broker 2", func() bool { return c.caughtUp(tp0, 2, 1, 3) })
	c.sameLogs(t, tp0, 2, 1, 3)
	waitFor(t, "the fetchers to broker 1 gone", func() bool {
		return slices.Equal(c.nodes[3].run.fetcherTargets(), []FetchTarget{{Broker: 2}}) &&
			len(c.nodes[2].run.fetcherTargets()) == 0 && c.nodes[1].srv.openConns() == 0
	})
}

// TestRunnerLeaderMoves: the leader's listener comes back on another port
// and the controller announces it (LeaderAndIsr's live_leaders, a new
// leader epoch): the fetchers drop the old address and dial the new one.
func TestRunnerLeaderMoves(t *testing.T) {
	c := newCluster(t, clusterOptions{}, 1, 2, 3)
	c.elect(tp0, 1, []int32{1, 2, 3}, 1, 2, 3)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, l, produce(t, l, 3, "before"), 30000); s != AckCommitted {
		t.Fatal(s)
	}
	old := c.nodes[1].srv
	moved := startServer(t, "127.0.0.1:0", c.nodes[1].m, nil)
	c.nodes[1].srv = moved
	c.elect(tp0, 1, []int32{1, 2, 3}, 1, 2, 3)
	if s := await(t, l, produce(t, l, 3, "after"), 30000); s != AckCommitted {
		t.Fatal(s)
	}
	waitFor(t, "caught up at the new address", func() bool { return c.caughtUp(tp0, 1, 2, 3) })
	c.sameLogs(t, tp0, 1, 2, 3)
	if n := moved.accepted.Load(); n != 2 {
		t.Fatalf("new address accepted %d connections, want 2", n)
	}
	waitFor(t, "the old address's connections closed", func() bool { return old.openConns() == 0 })
}

// TestRunnerRestarts: a follower's Runner closed and started again ten
// times over the same Manager, wherever its fetch stands (parked, in the
// air, being applied): every Close hands the outcomes back, so each new
// Runner fetches again and acks=-1 produces keep committing.
func TestRunnerRestarts(t *testing.T) {
	c := newCluster(t, clusterOptions{}, 1, 2)
	c.elect(tp0, 1, []int32{1, 2}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	for i := range 10 {
		r := produce(t, l, 2, fmt.Sprint(i))
		c.nodes[2].stop(t)
		c.nodes[2].start(t)
		if s := await(t, l, r, 30000); s != AckCommitted {
			t.Fatalf("produce %d: %v", i, s)
		}
	}
	waitFor(t, "caught up", func() bool { return c.caughtUp(tp0, 1, 2) })
	c.sameLogs(t, tp0, 1, 2)
}
