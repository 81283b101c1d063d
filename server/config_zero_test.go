package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceNow appends n one-record batches stamped now to topic/0.
func produceNow(t *testing.T, r *rawConn, topic string, n int, corr *int32) {
	t.Helper()
	for range n {
		*corr++
		p := r.roundTrip(produceRequest(topic, 0, nowBatch(t, 500), 9), *corr).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("produce to %s: error %d", topic, p.ErrorCode)
		}
	}
}

// waitGone waits until every record of topic/0 is deleted by retention: the
// log start offset reaches the end, which is at least end.
func waitGone(t *testing.T, s *Server, topic string, end int64) {
	t.Helper()
	l := s.topics.partition(topic, 0).log.(*movableLog).cur()
	deadline := time.Now().Add(15 * time.Second)
	for l.LogStartOffset() < end {
		if time.Now().After(deadline) {
			t.Fatalf("%s: log start %d, end %d: retention kept the records (options %+v)", topic, l.LogStartOffset(), l.LogEndOffset(), l.Options())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkGone checks through the protocol that topic/0's records are gone:
// a fetch from 0 is OFFSET_OUT_OF_RANGE and earliest is latest.
func checkGone(t *testing.T, r *rawConn, topic string, end int64, corr *int32) {
	t.Helper()
	*corr++
	req := fetchRequest(12, topic, 0, 0)
	req.MaxWaitMillis = 0
	if p := r.roundTrip(req, *corr).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset < end {
		t.Fatalf("%s: fetch from 0 after retention: error %d, log start %d, want OFFSET_OUT_OF_RANGE and %d", topic, p.ErrorCode, p.LogStartOffset, end)
	}
	for _, ts := range []int64{-2, -1} {
		*corr++
		lo := listOffsetsRequest(topic, 0, ts)
		lo.Version = 7
		if p := r.roundTrip(lo, *corr).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != end {
			t.Fatalf("%s: ListOffsets %d: error %d offset %d, want %d", topic, ts, p.ErrorCode, p.Offset, end)
		}
	}
}

// TestRetentionMsZero: retention.ms=0 is Kafka's "delete at once": the next
// retention check deletes every segment, the active one rolled first, when
// the topic is created with it, when it is altered to it, and after a
// restart. Before, zero meant "the default" in the log options and the
// records stayed for 7 days.
func TestRetentionMsZero(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "log.retention.check.interval.ms=20")
	r := dialRaw(t, s)
	var corr int32
	if c := createWithConfigs(t, r, "ms0", "retention.ms", "0"); c != 0 {
		t.Fatalf("create with retention.ms=0: error %d", c)
	}
	produceNow(t, r, "ms0", 5, &corr)
	waitGone(t, s, "ms0", 5)
	checkGone(t, r, "ms0", 5, &corr)

	// Altered to 0 on a live topic.
	if c := createWithConfigs(t, r, "alter0"); c != 0 {
		t.Fatal(c)
	}
	produceNow(t, r, "alter0", 5, &corr)
	if c := incAlter(t, s, 1, "alter0", "retention.ms", kmsg.IncrementalAlterConfigOpSet, "0"); c != 0 {
		t.Fatalf("alter retention.ms=0: error %d", c)
	}
	waitGone(t, s, "alter0", 5)
	checkGone(t, r, "alter0", 5, &corr)

	// After a restart the stored 0 still means 0.
	s.Close()
	s = startServer(t, dir, "log.retention.check.interval.ms=20")
	r = dialRaw(t, s)
	produceNow(t, r, "ms0", 3, &corr)
	waitGone(t, s, "ms0", 8)
	checkGone(t, r, "ms0", 8, &corr)

	// The broker default cannot be 0 (Kafka's KafkaConfig refuses it); -1
	// and any negative value keep forever.
	for _, kv := range []string{"log.retention.ms=0", "log.retention.minutes=0", "log.retention.hours=0"} {
		if _, err := LoadConfig("", []string{kv}, nil); err == nil {
			t.Errorf("broker %s accepted", kv)
		}
	}
	for _, kv := range []string{"log.retention.ms=-1", "log.retention.hours=-5"} {
		if c, err := LoadConfig("", []string{kv}, nil); err != nil || c.RetentionMs != -1 {
			t.Errorf("broker %s: %v, retention %d ms", kv, err, c.RetentionMs)
		}
	}
	if c := createWithConfigs(t, r, "ms-2", "retention.ms", "-2"); c != kerr.InvalidConfig.Code {
		t.Errorf("retention.ms=-2: error %d, want INVALID_CONFIG", c)
	}
}

// TestRetentionBytesZero: retention.bytes=0 keeps nothing (Kafka deletes
// every segment, rolling the active one); before, zero meant no limit. A
// negative value other than -1 means no limit, as in Kafka, instead of being
// refused.
func TestRetentionBytesZero(t *testing.T) {
	s := startServer(t, t.TempDir(), "log.retention.check.interval.ms=20")
	r := dialRaw(t, s)
	var corr int32
	if c := createWithConfigs(t, r, "bytes0", "retention.bytes", "0", "retention.ms", "-1"); c != 0 {
		t.Fatalf("create with retention.bytes=0: error %d", c)
	}
	produceNow(t, r, "bytes0", 5, &corr)
	waitGone(t, s, "bytes0", 5)
	checkGone(t, r, "bytes0", 5, &corr)

	if c := createWithConfigs(t, r, "bytes-5", "retention.bytes", "-5"); c != 0 {
		t.Fatalf("retention.bytes=-5: error %d, want none (Kafka: no limit)", c)
	}
	if o := liveOpts(s, "bytes-5"); o.RetentionBytes != -1 {
		t.Fatalf("retention.bytes=-5: log option %d, want -1", o.RetentionBytes)
	}
}
