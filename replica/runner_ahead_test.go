package replica

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// slowLogWrites delays every write to a .log file by a millisecond.
type slowLogWrites struct{}

func (slowLogWrites) MaybeError(op vfs.Op) error {
	if op.Kind == vfs.OpWriteAt && strings.HasSuffix(op.Path, ".log") {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// slowFollowerCluster is a leader (broker 1) holding n records of tp0
// and a follower (broker 2, its Runner not started) behind it on a slow
// disk, so that the leader has time to see a fetch sent ahead before the
// append of the answer before it returns; replica.fetch.max.bytes is
// small: a few batches per fetch.
func slowFollowerCluster(t *testing.T, n int) (*tcluster, *Manager) {
	t.Helper()
	c := newCluster(t, clusterOptions{
		cfg: func(cfg *Config) {
			cfg.ReplicaFetchMaxBytes = 300
			cfg.ReplicaLagTimeMaxMs = 3600_000
			if cfg.BrokerID == 2 {
				root := t.TempDir()
				cfg.OpenLog = func(tp TopicPartition, o OpenOptions) (*segment.Log, error) {
					opts := &segment.Options{FS: vfs.Inject(vfs.OS, slowLogWrites{}), FileDeleteDelayMs: -1, Logger: discard}
					if o.StartAt >= 0 {
						opts.LogStartOffset = o.StartAt
					}
					return segment.Open(filepath.Join(root, tp.String()), opts)
				}
			}
		},
		noRunner: []int32{2},
	}, 1, 2)
	c.elect(tp0, 1, []int32{1}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	for i := range n {
		produce(t, l, 1, fmt.Sprintf("value-%04d-%s", i, "0123456789abcdef0123456789abcdef"))
	}
	return c, c.nodes[2].m
}

// TestRunnerFetchAhead: a follower restarted far behind (replica.fetch.max.bytes
// small: a few batches per fetch) catches up over real sockets with fetches
// sent ahead of the answer before them (the leader sees fetch offsets past
// the follower's log end while the follower appends), each answer read
// into the other buffer; the follower ends holding exactly the leader's
// records (offsets, epochs, values: an answer overwritten while appended
// would show here, or as CRC errors), back in the ISR.
func TestRunnerFetchAhead(t *testing.T) {
	c, f := slowFollowerCluster(t, 400)
	var ahead, fetches atomic.Int64
	hook := func(req *kmsg.FetchRequest) {
		fetches.Add(1)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if p := f.Partition(rt.Topic, rp.Partition); p != nil && rp.FetchOffset > p.Log().LogEndOffset() {
					ahead.Add(1)
				}
			}
		}
	}
	c.nodes[1].srv.onFetch.Store(&hook)
	c.nodes[2].start(t)
	waitFor(t, "the follower at the leader's log end and in the ISR", func() bool {
		return c.caughtUp(tp0, 1, 2) && len(c.isr(tp0, 1)) == 2
	})
	c.sameLogs(t, tp0, 1, 2)
	if ahead.Load() == 0 {
		t.Fatalf("no fetch went ahead of the follower's log end in %d fetches", fetches.Load())
	}
	t.Logf("%d fetches, %d ahead of the follower's log end", fetches.Load(), ahead.Load())
}

// TestRunnerCloseWhileFetchingAhead: closing the Runner with a fetch sent
// ahead in flight hands both outcomes back, so the Manager has no fetch in
// flight left and gives the target's next fetch to whoever drives it.
func TestRunnerCloseWhileFetchingAhead(t *testing.T) {
	c, f := slowFollowerCluster(t, 2000)
	var ahead atomic.Int64
	hook := func(req *kmsg.FetchRequest) {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if p := f.Partition(rt.Topic, rp.Partition); p != nil && rp.FetchOffset > p.Log().LogEndOffset() {
					ahead.Add(1)
				}
			}
		}
	}
	c.nodes[1].srv.onFetch.Store(&hook)
	c.nodes[2].start(t)
	waitFor(t, "fetches ahead", func() bool { return ahead.Load() >= 5 })
	c.nodes[2].stop(t)
	leo := f.Partition(tp0.Topic, tp0.Partition).Log().LogEndOffset()
	r := f.Ready(time.Now().UnixMilli() + 60_000)
	if len(r.Fetches) != 1 || onlyPart(t, r.Fetches[0].Req).FetchOffset != leo {
		t.Fatalf("after Close the Manager gives fetches %+v (log end %d): an outcome was not handed back", r.Fetches, leo)
	}
}

// chunkyConn hands a reader at most 4 KiB per Read, a little later each
// time: a leader's answer arrives in pieces, as over a slow network.
type chunkyConn struct{ net.Conn }

func (c chunkyConn) Read(b []byte) (int, error) {
	time.Sleep(50 * time.Microsecond)
	return c.Conn.Read(b[:min(len(b), 4096)])
}

// TestRunnerFetchEarly: a follower far behind whose answers arrive in
// pieces sends its next fetch while an answer is still arriving, as soon
// as the batch headers read so far tell where it starts (earlyView); it
// ends holding exactly the leader's records, back in the ISR.
func TestRunnerFetchEarly(t *testing.T) {
	c := chunkyCluster(t, 600)
	c.nodes[2].start(t)
	waitFor(t, "the follower at the leader's log end and in the ISR", func() bool {
		return c.caughtUp(tp0, 1, 2) && len(c.isr(tp0, 1)) == 2
	})
	c.sameLogs(t, tp0, 1, 2)
	if n := c.nodes[2].run.early.Load(); n == 0 {
		t.Fatal("no fetch was sent while the answer before arrived")
	} else {
		t.Logf("%d fetches sent early", n)
	}
}

// TestRunnerCloseWhileFetchingEarly: closing the Runner while fetches are
// being sent early hands every outcome back, the early ones included: the
// Manager has no fetch in flight left and asks the next from the log end.
func TestRunnerCloseWhileFetchingEarly(t *testing.T) {
	c := chunkyCluster(t, 3000)
	f := c.nodes[2].m
	c.nodes[2].start(t)
	run := c.nodes[2].run
	waitFor(t, "fetches sent early", func() bool { return run.early.Load() >= 5 })
	c.nodes[2].stop(t)
	leo := f.Partition(tp0.Topic, tp0.Partition).Log().LogEndOffset()
	r := f.Ready(time.Now().UnixMilli() + 60_000)
	if len(r.Fetches) != 1 || onlyPart(t, r.Fetches[0].Req).FetchOffset != leo {
		t.Fatalf("after Close the Manager gives fetches %+v (log end %d): an outcome was not handed back", r.Fetches, leo)
	}
}

// chunkyCluster is a leader (broker 1) holding n records of 3 KB of tp0
// and a follower (broker 2, its Runner not started) whose connections
// hand out reads in pieces (chunkyConn); replica.fetch.max.bytes 64 KiB.
func chunkyCluster(t *testing.T, n int) *tcluster {
	t.Helper()
	c := newCluster(t, clusterOptions{
		cfg: func(cfg *Config) {
			cfg.ReplicaFetchMaxBytes = 64 << 10
			cfg.ReplicaLagTimeMaxMs = 3600_000
		},
		runner: func(id int32, o *RunnerOptions) {
			o.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				nc, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return chunkyConn{nc}, nil
			}
		},
		noRunner: []int32{2},
	}, 1, 2)
	c.elect(tp0, 1, []int32{1}, 1, 2)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	value := strings.Repeat("v", 3000)
	for i := range n {
		produce(t, l, 1, fmt.Sprintf("%04d-%s", i, value))
	}
	return c
}
