package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// createWithConfigs creates topic name (1 partition) with configs and
// returns the error code.
func createWithConfigs(t *testing.T, r *rawConn, name string, kv ...string) int16 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	return r.roundTrip(req, 1).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
}

func keyedBatch(t *testing.T, codec record.Codec, keys ...[]byte) []byte {
	t.Helper()
	recs := make([]record.Record, len(keys))
	for i, k := range keys {
		recs[i] = record.Record{Timestamp: 1_600_000_000_000, Key: k, Value: []byte("v")}
	}
	o := record.DefaultBatchOptions()
	o.Codec = codec
	b, err := record.AppendBatch(nil, o, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTopicConfigs(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	r := dialRaw(t, s)
	if c := createWithConfigs(t, r, "lat", "message.timestamp.type", "LogAppendTime", "segment.bytes", "1048576"); c != 0 {
		t.Fatal(c)
	}
	if c := createWithConfigs(t, r, "compacted", "cleanup.policy", "compact"); c != 0 {
		t.Fatal(c)
	}
	for _, bad := range [][]string{{"cleanup.policy", "shred"}, {"message.timestamp.type", "Now"}, {"segment.bytes", "big"}} {
		if c := createWithConfigs(t, r, "badcfg", bad...); c != kerr.InvalidConfig.Code {
			t.Errorf("%q: code %d", bad, c)
		}
	}

	// LogAppendTime: the broker stamps the batch and reports the time.
	before := time.Now().UnixMilli()
	p := r.roundTrip(produceRequest("lat", 0, keyedBatch(t, record.CodecNone, []byte("k")), 9), 2).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("LogAppendTime produce: %+v", p)
	}
	got := consumeAll(t, s, "lat", []int32{0}, 1)
	if got[0].Timestamp.UnixMilli() != p.LogAppendTime || got[0].Attrs.TimestampType() != 1 {
		t.Fatalf("consumed timestamp %v type %d, want %d", got[0].Timestamp.UnixMilli(), got[0].Attrs.TimestampType(), p.LogAppendTime)
	}

	// Compacted: every record needs a key, compressed or not.
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip} {
		p := r.roundTrip(produceRequest("compacted", 0, keyedBatch(t, codec, []byte("a"), nil), 9), 3).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("keyless record on a compacted topic (codec %d): code %d", codec, p.ErrorCode)
		}
		p = r.roundTrip(produceRequest("compacted", 0, keyedBatch(t, codec, []byte("a"), []byte("b")), 9), 4).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("keyed records on a compacted topic: code %d", p.ErrorCode)
		}
	}

	// Configs survive a restart.
	s.Close()
	s2 := startServer(t, dir)
	if tp := s2.topics.get("lat"); tp == nil || !tp.logAppendTime.Load() || tp.configs["segment.bytes"] != "1048576" {
		t.Fatal("topic configs lost across restart")
	}
	if tp := s2.topics.get("compacted"); tp == nil || !tp.compacted.Load() {
		t.Fatal("cleanup.policy lost across restart")
	}
}

// TestHeaderValidation: strata.produce.validation=header trusts compressed
// batches after the CRC; full (the default) catches a bad record inside.
func TestHeaderValidation(t *testing.T) {
	// A gzip batch whose header claims one more record than it holds, with
	// a valid CRC: only decompression notices.
	b := keyedBatch(t, record.CodecGzip, []byte("a"), []byte("b"))
	bb := record.Batch(b)
	bb[60]++ // record count 2 -> 3
	bb[26]++ // last offset delta 1 -> 2
	bb.UpdateCRC()
	for mode, want := range map[string]int16{"full": kerr.InvalidRecord.Code, "header": 0} {
		s := startServer(t, t.TempDir(), "strata.produce.validation="+mode)
		r := newTopic(t, s, "hv", 1)
		p := r.roundTrip(produceRequest("hv", 0, append([]byte(nil), b...), 9), 5).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != want {
			t.Errorf("%s: code %d, want %d", mode, p.ErrorCode, want)
		}
	}
}

// TestRetention: the background job applies retention.bytes (retention.ms
// is off: the batches are stamped 2023, so it would delete everything); fetches below
// the new log start offset are OFFSET_OUT_OF_RANGE and ListOffsets earliest
// follows it.
func TestRetention(t *testing.T) {
	s := startServer(t, t.TempDir(), "log.retention.check.interval.ms=20")
	r := dialRaw(t, s)
	if c := createWithConfigs(t, r, "ret", "segment.bytes", "4096", "retention.bytes", "8192", "retention.ms", "-1"); c != 0 {
		t.Fatal(c)
	}
	for i := range 20 {
		p := r.roundTrip(produceRequest("ret", 0, makeBatch(t, 1, 1000), 9), int32(i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatal(p.ErrorCode)
		}
	}
	l := s.topics.partition("ret", 0).log
	deadline := time.Now().Add(10 * time.Second)
	for l.LogStartOffset() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retention never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := l.LogStartOffset()
	req := fetchRequest(12, "ret", 0, 0)
	req.MaxWaitMillis = 0
	if p := r.roundTrip(req, 100).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset < start {
		t.Fatalf("fetch below log start: %+v", p)
	}
	lo := listOffsetsRequest("ret", 0, -2)
	lo.Version = 7
	if p := r.roundTrip(lo, 101).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.Offset < start || p.Offset >= 20 {
		t.Fatalf("earliest %d, log start %d", p.Offset, start)
	}
}
