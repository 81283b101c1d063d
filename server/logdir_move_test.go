package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
)

// alterLogDir sends AlterReplicaLogDirs for one partition and returns its
// error code (on a raw connection: franz-go routes it by the metadata of
// the partition, which an unknown topic lacks).
func alterLogDir(t testing.TB, s *Server, topic string, p int32, dir string) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	rd := kmsg.NewAlterReplicaLogDirsRequestDir()
	rd.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	rd.Topics = append(rd.Topics, rt)
	req.Dirs = append(req.Dirs, rd)
	req.Version = 2
	resp := dialRaw(t, s).roundTrip(req, 1).(*kmsg.AlterReplicaLogDirsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Topic != topic || resp.Topics[0].Partitions[0].Partition != p {
		t.Fatalf("AlterReplicaLogDirs response %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// replicaIn describes where DescribeLogDirs puts topic/p: the dirs holding
// its current replica and its future one.
func replicaIn(t testing.TB, cl *kgo.Client, topic string, p int32) (current, future []string) {
	t.Helper()
	resp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Dirs {
		for _, rt := range d.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == topic && rp.Partition == p {
					if rp.IsFuture {
						future = append(future, d.Dir)
					} else {
						current = append(current, d.Dir)
					}
				}
			}
		}
	}
	return current, future
}

// partitionDirsIn lists the entries of dir naming topic's partition p (its
// log, a -future copy, a -delete leftover).
func partitionDirsIn(t testing.TB, dir, topic string, p int32) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	prefix := fmt.Sprintf("%s-%d", topic, p)
	for _, e := range ents {
		if e.Name() == prefix || strings.HasPrefix(e.Name(), prefix+".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// producer produces numbered records with acks=all until stopped and keeps
// the acknowledged values.
type ackProducer struct {
	mu    sync.Mutex
	acked map[string]bool
	errs  atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

func startAckProducer(t testing.TB, s *Server, topic string) *ackProducer {
	t.Helper()
	cl := newClient(t, s, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000),
		kgo.ProducerLinger(0), kgo.RetryTimeout(30*time.Second))
	ap := &ackProducer{acked: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(ap.done)
		// At most 500 records (~150 KB) a second: below the tests' copy
		// rate of 300,000 B/s, or a move could never catch up (a quiet
		// machine produced faster than that without -race).
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ap.stop:
				return
			case <-tick.C:
			}
			v := fmt.Sprintf("v%08d-%s", i, strings.Repeat("x", 200))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
			cancel()
			if err != nil {
				ap.errs.Add(1)
				continue
			}
			ap.mu.Lock()
			ap.acked[v] = true
			ap.mu.Unlock()
		}
	}()
	t.Cleanup(ap.halt)
	return ap
}

func (ap *ackProducer) count() int {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return len(ap.acked)
}

func (ap *ackProducer) halt() {
	select {
	case <-ap.stop:
	default:
		close(ap.stop)
	}
	<-ap.done
}

// checkAllAcked reads topic/0 from the start and checks that every
// acknowledged value is there exactly once.
func checkAllAcked(t testing.TB, s *Server, topic string, acked map[string]bool) {
	t.Helper()
	recs := consumeAll(t, s, topic, []int32{0}, len(acked))
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r.Value)]++
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged record %.9s read %d times (of %d read, %d acknowledged)", v, seen[v], len(recs), len(acked))
		}
	}
}

// A replica moves between two real log dirs while franz-go produces with
// acks=all: DescribeLogDirs shows the future replica in the target dir
// while it copies (throttled by
// replica.alter.log.dirs.io.max.bytes.per.second), then the replica in the
// target dir only; every acknowledged record reads back after the swap,
// exactly once, and the old dir holds nothing of the partition.
func TestAlterReplicaLogDirsMoveUnderLoad(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	s := startServer(t, a+","+b, "file.delete.delay.ms=0", "replica.alter.log.dirs.io.max.bytes.per.second=300000",
		"log.segment.bytes=65536")
	newTopic(t, s, "moving", 1)
	src, dst := a, b
	if p := s.topics.partition("moving", 0); strings.HasPrefix(p.logDir(), b+"/") {
		src, dst = b, a
	}
	ap := startAckProducer(t, s, "moving")
	waitFor(t, 30*time.Second, "records before the move", func() bool { return ap.count() >= 1500 })
	cl := newClient(t, s)
	if c := alterLogDir(t, s, "moving", 0, dst); c != 0 {
		t.Fatalf("AlterReplicaLogDirs: code %d", c)
	}
	waitFor(t, 30*time.Second, "the future replica in DescribeLogDirs", func() bool {
		cur, fut := replicaIn(t, cl, "moving", 0)
		return len(fut) == 1 && fut[0] == dst && len(cur) == 1 && cur[0] == src
	})
	waitFor(t, 30*time.Second, "the swap", func() bool {
		cur, fut := replicaIn(t, cl, "moving", 0)
		return len(fut) == 0 && len(cur) == 1 && cur[0] == dst
	})
	after := ap.count()
	waitFor(t, 30*time.Second, "records after the swap", func() bool { return ap.count() >= after+200 })
	ap.halt()
	if got := s.topics.partition("moving", 0).logDir(); got != filepath.Join(dst, "moving-0") {
		t.Fatalf("partition in %s after the move", got)
	}
	checkAllAcked(t, s, "moving", ap.acked)
	waitFor(t, 30*time.Second, "the old dir emptied of the partition", func() bool { return len(partitionDirsIn(t, src, "moving", 0)) == 0 })
	if got := partitionDirsIn(t, dst, "moving", 0); len(got) != 1 || got[0] != "moving-0" {
		t.Fatalf("target dir holds %v", got)
	}
}

// Bad requests: a dir that is not configured (or not absolute) is
// LOG_DIR_NOT_FOUND and moves nothing; a partition the broker does not have
// is REPLICA_NOT_AVAILABLE, and the dir is remembered: the topic created
// afterwards lands there; the dir a replica is already in is a no-op
// success.
func TestAlterReplicaLogDirsBadInput(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	s := startServer(t, a+","+b)
	newTopic(t, s, "here", 1)
	cur := filepath.Dir(s.topics.partition("here", 0).logDir())
	for _, dir := range []string{t.TempDir(), "relative/dir", "", cur + "/../elsewhere"} {
		if c := alterLogDir(t, s, "here", 0, dir); c != kerr.LogDirNotFound.Code {
			t.Errorf("dir %q: code %d, want LOG_DIR_NOT_FOUND", dir, c)
		}
	}
	if c := alterLogDir(t, s, "here", 0, cur); c != 0 {
		t.Fatalf("the dir it is in: code %d", c)
	}
	if mv := s.LogDirMoves(); len(mv) != 0 {
		t.Fatalf("moves started: %+v", mv)
	}
	if c := alterLogDir(t, s, "bad/topic", 0, cur); c != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid topic name: code %d", c)
	}
	// The emptiest dir would be the one "here" is not in: ask for the other.
	if c := alterLogDir(t, s, "later", 0, cur); c != kerr.ReplicaNotAvailable.Code {
		t.Fatalf("topic that does not exist: code %d, want REPLICA_NOT_AVAILABLE", c)
	}
	newTopic(t, s, "later", 1)
	if got := s.topics.partition("later", 0).logDir(); got != filepath.Join(cur, "later-0") {
		t.Fatalf("the new replica went to %s, asked for %s", got, cur)
	}
}

// The target dir fails mid-move (an injected write error in the future
// log): the move fails and its files go, the replica serves on from its
// current dir (produce and fetch), and neither log dir goes offline.
func TestAlterReplicaLogDirsTargetFails(t *testing.T) {
	mem := vfs.NewMem()
	var fail atomic.Bool
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if fail.Load() && strings.Contains(op.Path, futureSuffix) && (op.Kind == vfs.OpWrite || op.Kind == vfs.OpWriteAt) {
			return vfs.ErrInjected
		}
		return nil
	})
	s := startMemServer(t, vfs.Inject(mem, inj), "/a,/b", nil, "replica.alter.log.dirs.io.max.bytes.per.second=20000")
	r := newTopic(t, s, "t", 1)
	src := filepath.Dir(s.topics.partition("t", 0).logDir())
	dst := map[string]string{"/a": "/b", "/b": "/a"}[src]
	for i := 0; i < 20; i++ {
		if c := r.roundTrip(produceRequest("t", 0, makeBatch(t, 10, 100), 7), int32(10+i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("produce: code %d", c)
		}
	}
	if c := alterLogDir(t, s, "t", 0, dst); c != 0 {
		t.Fatalf("AlterReplicaLogDirs: code %d", c)
	}
	waitFor(t, 30*time.Second, "the copy to start", func() bool {
		mv := s.LogDirMoves()
		return len(mv) == 1 && mv[0].Size > 0
	})
	fail.Store(true)
	waitFor(t, 30*time.Second, "the move to fail", func() bool { return len(s.LogDirMoves()) == 0 })
	fail.Store(false)
	if got := filepath.Dir(s.topics.partition("t", 0).logDir()); got != src {
		t.Fatalf("partition in %s after the failed move, want %s", got, src)
	}
	if off := s.OfflineLogDirs(); len(off) != 0 {
		t.Fatalf("offline log dirs after a failed move: %v", off)
	}
	names, _ := mem.ReadDir(dst)
	for _, n := range names {
		if strings.HasPrefix(n, "t-0") {
			t.Errorf("target dir keeps %s after the failed move", n)
		}
	}
	if c := r.roundTrip(produceRequest("t", 0, makeBatch(t, 10, 100), 7), 100).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("produce after the failed move: code %d", c)
	}
	fp := r.roundTrip(fetchRequest(11, "t", 0, 0), 101).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.HighWatermark != 210 {
		t.Fatalf("fetch after the failed move: code %d, high watermark %d, want 210", fp.ErrorCode, fp.HighWatermark)
	}
}

// A broker restarted mid-move resumes it from the -future directory and
// completes it with nothing lost; a -future directory of a partition the
// broker does not have is removed at start.
func TestAlterReplicaLogDirsResumeAfterRestart(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	dirs := a + "," + b
	s := startServer(t, dirs, "file.delete.delay.ms=0", "replica.alter.log.dirs.io.max.bytes.per.second=50000",
		"log.segment.bytes=65536")
	newTopic(t, s, "resume", 1)
	src, dst := a, b
	if p := s.topics.partition("resume", 0); strings.HasPrefix(p.logDir(), b+"/") {
		src, dst = b, a
	}
	ap := startAckProducer(t, s, "resume")
	waitFor(t, 30*time.Second, "records before the move", func() bool { return ap.count() >= 1500 })
	ap.halt()
	if c := alterLogDir(t, s, "resume", 0, dst); c != 0 {
		t.Fatalf("AlterReplicaLogDirs: code %d", c)
	}
	waitFor(t, 30*time.Second, "the copy to start", func() bool {
		mv := s.LogDirMoves()
		return len(mv) == 1 && mv[0].Size > 0
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fut := partitionDirsIn(t, dst, "resume", 0)
	if len(fut) != 1 || !strings.HasSuffix(fut[0], futureSuffix) {
		t.Fatalf("target dir after a shutdown mid-move: %v, want one -future dir", fut)
	}
	ghost := filepath.Join(dst, "ghost-0.0123456789abcdef0123456789abcdef"+futureSuffix)
	if err := os.MkdirAll(ghost, 0o755); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dirs, "file.delete.delay.ms=0")
	if _, err := os.Stat(ghost); !os.IsNotExist(err) {
		t.Fatalf("future dir of an unknown partition kept at start: %v", err)
	}
	waitFor(t, 30*time.Second, "the resumed move to finish", func() bool {
		return s2.topics.partition("resume", 0).logDir() == filepath.Join(dst, "resume-0") && len(s2.LogDirMoves()) == 0
	})
	checkAllAcked(t, s2, "resume", ap.acked)
	waitFor(t, 30*time.Second, "the old dir emptied of the partition", func() bool { return len(partitionDirsIn(t, src, "resume", 0)) == 0 })
}
