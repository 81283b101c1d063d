package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// nowBatch is a one-record batch of size value bytes stamped now (old
// timestamps would make every append roll a segment past segment.ms).
func nowBatch(t *testing.T, size int) []byte {
	t.Helper()
	b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), []record.Record{{Timestamp: time.Now().UnixMilli(), Value: make([]byte, size)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLiveFlushAndRetentionConfigs: flush.ms, flush.messages, retention.bytes
// and retention.ms changed with IncrementalAlterConfigs act on the open logs,
// without a restart.
func TestLiveFlushAndRetentionConfigs(t *testing.T) {
	s := startServer(t, t.TempDir(), "log.retention.check.interval.ms=20")
	createTopicWith(t, newClient(t, s), "live", 1, "segment.bytes", "4096")
	r := dialRaw(t, s)
	corr := int32(0)
	produce := func(n int) {
		t.Helper()
		for range n {
			corr++
			p := r.roundTrip(produceRequest("live", 0, nowBatch(t, 1000), 9), corr).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("produce: error %d", p.ErrorCode)
			}
		}
	}
	l := s.topics.partition("live", 0).log.(*movableLog).cur()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not applied to the live log (start %d, flushed %d, end %d)", what, l.LogStartOffset(), l.FlushedOffset(), l.LogEndOffset())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete

	produce(3)
	// Nothing flushes: no flush.messages, and no flush.ms for a flusher.
	if o := l.Options(); o.FlushMs != segment.Never || o.FlushMessages != segment.Never || l.FlushedOffset() != 0 {
		t.Fatalf("flushed to %d with no flush settings (flush.ms %d, flush.messages %d)", l.FlushedOffset(), o.FlushMs, o.FlushMessages)
	}
	if c := incAlter(t, s, 1, "live", "flush.ms", set, "10"); c != 0 {
		t.Fatalf("set flush.ms: %d", c)
	}
	waitFor("flush.ms=10", func() bool { return l.FlushedOffset() == l.LogEndOffset() })

	if c := incAlter(t, s, 1, "live", "flush.ms", del, nil, "flush.messages", set, "1"); c != 0 {
		t.Fatalf("flush.messages: %d", c)
	}
	if o := l.Options(); o.FlushMs != segment.Never || o.FlushMessages != 1 {
		t.Fatalf("live options flush.ms %d flush.messages %d", o.FlushMs, o.FlushMessages)
	}
	produce(1) // flush.messages=1: durable before the ack
	if l.FlushedOffset() != l.LogEndOffset() {
		t.Fatalf("flush.messages=1: flushed %d of %d at the ack", l.FlushedOffset(), l.LogEndOffset())
	}

	produce(16) // 20 records of ~1 KB in 4 KB segments
	// A retention pass for certain (no sleep hoping the checker ran).
	s.topics.cleaner.CheckRetention()
	if l.LogStartOffset() != 0 {
		t.Fatalf("log start %d before any retention setting", l.LogStartOffset())
	}
	if c := incAlter(t, s, 1, "live", "retention.bytes", set, "8192"); c != 0 {
		t.Fatalf("retention.bytes: %d", c)
	}
	waitFor("retention.bytes=8192", func() bool { return l.LogStartOffset() > 0 && l.Size() <= 8192+4096 })
	start := l.LogStartOffset()
	if c := incAlter(t, s, 1, "live", "retention.bytes", del, nil, "retention.ms", set, "1"); c != 0 {
		t.Fatalf("retention.ms: %d", c)
	}
	// Every closed segment is past retention.ms=1 and goes.
	waitFor("retention.ms=1", func() bool { return l.LogStartOffset() > start && len(l.Segments()) == 1 })
}
