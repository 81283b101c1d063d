package replica

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// t0 is a realistic wall-clock start: caught-up times of 0 must look old.
const t0 = int64(1_700_000_000_000)

const testTopic = "t"

var tp0 = TopicPartition{Topic: testTopic, Partition: 0}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func logOptions(fsys vfs.FS, flushMessages int64) *segment.Options {
	return &segment.Options{
		FS:                fsys,
		SegmentIndexBytes: 64 << 10,
		FileDeleteDelayMs: -1,
		FlushMessages:     flushMessages,
		Logger:            discard,
		Now:               func() int64 { return t0 },
	}
}

// opener opens partition logs under root on fsys.
func opener(fsys vfs.FS, root string, flushMessages int64) LogOpener {
	return func(tp TopicPartition, o OpenOptions) (*segment.Log, error) {
		opts := logOptions(fsys, flushMessages)
		if o.StartAt >= 0 {
			opts.LogStartOffset = o.StartAt
		}
		return segment.Open(filepath.Join(root, tp.String()), opts)
	}
}

func testConfig(id int32, fsys vfs.FS, root string) *Config {
	c := Config{
		BrokerID:              id,
		ReplicaLagTimeMaxMs:   10000,
		ReplicaFetchBackoffMs: 100,
		OpenLog:               opener(fsys, root, 0),
		Logger:                discard,
	}.EnsureDefaults()
	return &c
}

// newTestPartition opens tp0's log under /data on fsys for broker id.
func newTestPartition(t testing.TB, id int32, fsys vfs.FS) *Partition {
	return newTestPartitionAt(t, id, fsys, "/data")
}

func newTestPartitionAt(t testing.TB, id int32, fsys vfs.FS, root string) *Partition {
	t.Helper()
	// The log dir exists, durably, before the broker starts.
	if err := fsys.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(filepath.Dir(root)); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(id, fsys, root)
	l, err := cfg.OpenLog(tp0, OpenOptions{StartAt: -1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPartition(tp0, l, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.reopen = func(at int64) (*segment.Log, error) { return cfg.OpenLog(tp0, OpenOptions{StartAt: at}) }
	t.Cleanup(func() { p.close() })
	return p
}

// batch builds one v2 batch holding values (leader epoch unset).
func batch(t testing.TB, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Timestamp: t0, Value: []byte(v)}
	}
	opts := record.DefaultBatchOptions()
	opts.LastOffsetDelta = -1
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// epochBatch builds a batch at base offset with a leader epoch, as a
// leader's log would hold it.
func epochBatch(t testing.TB, base int64, epoch int32, values ...string) []byte {
	t.Helper()
	b := batch(t, values...)
	record.Batch(b).SetBaseOffset(base)
	record.Batch(b).SetLeaderEpoch(epoch)
	return b
}

// entry is a record read back from a log.
type entry struct {
	Offset int64
	Epoch  int32
	Value  string
}

func (e entry) String() string { return fmt.Sprintf("%d:e%d:%s", e.Offset, e.Epoch, e.Value) }

// readLog returns every record of l from its start to end (-1: the log end).
func readLog(t testing.TB, l *segment.Log, end int64) []entry {
	t.Helper()
	if end < 0 {
		end = l.LogEndOffset()
	}
	var out []entry
	var buf []byte
	for off := l.LogStartOffset(); off < end; {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if r.Len == 0 {
			r.Release()
			break
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		from := off
		for it.Next() {
			b := it.Batch()
			recs, err := b.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Offset < end {
					out = append(out, entry{r.Offset, b.PartitionLeaderEpoch(), string(r.Value)})
				}
			}
			off = b.LastOffset() + 1
		}
		// a read of 1 MiB may end in a partial batch: read again from it
		if err := it.Err(); err != nil && (off == from || !errors.Is(err, record.ErrTruncated)) {
			t.Fatal(err)
		}
	}
	return out
}

func values(es []entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Value
	}
	return out
}

func state(leader, epoch int32, isr []int32, replicas ...int32) PartitionState {
	if len(replicas) == 0 {
		replicas = []int32{1, 2, 3}
	}
	return PartitionState{ControllerEpoch: 1, Leader: leader, LeaderEpoch: epoch, ISR: isr, PartitionEpoch: epoch, Replicas: replicas}
}

func mustLeader(t testing.TB, p *Partition, s PartitionState, now int64) {
	t.Helper()
	if _, err := p.MakeLeader(s, now); err != nil {
		t.Fatal(err)
	}
}

func mustFollower(t testing.TB, p *Partition, s PartitionState, now int64) {
	t.Helper()
	if _, err := p.MakeFollower(s, now); err != nil {
		t.Fatal(err)
	}
}

func mustAppend(t testing.TB, p *Partition, now int64, values ...string) AppendResult {
	t.Helper()
	r, err := p.AppendAsLeader(batch(t, values...), 1, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// replicate runs one fetch round trip from follower f to leader l: the
// follower's request, the leader's answer, the follower applying it. It
// returns the leader's answer.
func replicate(t testing.TB, l, f *Partition, now int64) FollowerFetchResult {
	t.Helper()
	part, leader, ok := f.fetchPart(now)
	if !ok {
		t.Fatalf("broker %d has no fetch to send", f.cfg.BrokerID)
	}
	if leader != l.cfg.BrokerID {
		t.Fatalf("broker %d fetches from %d, not %d", f.cfg.BrokerID, leader, l.cfg.BrokerID)
	}
	res := l.FetchFromFollower(FollowerFetch{
		ReplicaID:          f.cfg.BrokerID,
		FetchOffset:        part.FetchOffset,
		LogStartOffset:     part.LogStartOffset,
		CurrentLeaderEpoch: part.CurrentLeaderEpoch,
		LastFetchedEpoch:   part.LastFetchedEpoch,
		MaxBytes:           int64(part.PartitionMaxBytes),
	}, now)
	data := kmsg.NewFetchResponseTopicPartition()
	data.ErrorCode = ErrorCode(res.Err)
	data.HighWatermark, data.LogStartOffset = res.HighWatermark, res.LogStartOffset
	data.DivergingEpoch.Epoch, data.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
	if res.Err == nil && res.Records.Len > 0 {
		b, err := res.Records.ReadInto(nil)
		if err != nil {
			t.Fatal(err)
		}
		data.RecordBatches = b
	}
	res.Records.Release()
	if err := f.handleFetchData(l.cfg.BrokerID, &part, &data, now); err != nil {
		t.Fatal(err)
	}
	return res
}

// commitAlter plays the controller for a leader's pending ISR change: it
// accepts it with the next partition epoch.
func commitAlter(t testing.TB, p *Partition, now int64) []int32 {
	t.Helper()
	it, ok := p.takeAlter()
	if !ok {
		t.Fatal("no ISR change pending")
	}
	p.alterResult(it.id, AlterResult{Leader: p.cfg.BrokerID, LeaderEpoch: it.LeaderEpoch, ISR: it.NewISR, PartitionEpoch: it.PartitionEpoch + 1}, now)
	return it.NewISR
}

func wantISR(t testing.TB, p *Partition, want ...int32) {
	t.Helper()
	if got := p.ISR(); !slices.Equal(got, want) {
		t.Fatalf("ISR %v, want %v", got, want)
	}
}

func wantHW(t testing.TB, p *Partition, want int64) {
	t.Helper()
	if got := p.HighWatermark(); got != want {
		t.Fatalf("broker %d: high watermark %d, want %d", p.cfg.BrokerID, got, want)
	}
}
