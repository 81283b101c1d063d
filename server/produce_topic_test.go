package server

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestTopicMaxMessageBytes: a batch over a topic's max.message.bytes is
// refused with MESSAGE_TOO_LARGE while the same batch passes on a topic
// without the override (broker message.max.bytes); raising the override with
// IncrementalAlterConfigs lets it through at once; a bad value is
// INVALID_CONFIG.
func TestTopicMaxMessageBytes(t *testing.T) {
	s := startServer(t, t.TempDir())
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopicWith(t, cl, "small", 1, "max.message.bytes", "2000")
	createTopicWith(t, cl, "big", 1)
	val := bytes.Repeat([]byte("x"), 3000)
	produce := func(topic string) error {
		return cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: val}).FirstErr()
	}
	if err := produce("small"); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("3000-byte record on max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := produce("big"); err != nil {
		t.Fatalf("same record on a topic with the broker default: %v", err)
	}
	if end := s.topics.partition("small", 0).log.LogEndOffset(); end != 0 {
		t.Fatalf("refused batch appended: end %d", end)
	}
	set := kmsg.IncrementalAlterConfigOpSet
	if c := incAlter(t, s, 1, "small", "max.message.bytes", set, "-1"); c != kerr.InvalidConfig.Code {
		t.Fatalf("max.message.bytes=-1: error %d, want INVALID_CONFIG", c)
	}
	if c := incAlter(t, s, 1, "small", "max.message.bytes", set, "10000"); c != 0 {
		t.Fatalf("alter: %d", c)
	}
	if err := produce("small"); err != nil {
		t.Fatalf("after raising max.message.bytes: %v", err)
	}
	if c := incAlter(t, s, 1, "big", "max.message.bytes", set, "100"); c != 0 {
		t.Fatalf("alter: %d", c)
	}
	if err := produce("big"); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("after lowering max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
	}
}

// segmentCodecs reads every batch of partition 0 of topic from its segment
// files (storedBatches), checks each in full and returns their codecs.
func segmentCodecs(t *testing.T, s *Server, topic string) []record.Codec {
	t.Helper()
	var out []record.Codec
	for i, batch := range storedBatches(t, s, topic) {
		if err := batch.ValidateDeep(-1); err != nil {
			t.Fatalf("%s: stored batch %d: %v", topic, i, err)
		}
		out = append(out, batch.Codec())
	}
	return out
}

// TestTopicCompressionType: on a topic with compression.type=zstd the broker
// stores zstd batches whatever the producer sends (none, gzip, lz4), on one
// with compression.type=uncompressed it stores uncompressed batches, with
// the default (producer) it keeps the producer's codec; consumers read the
// records unchanged (offsets, keys, values, headers, timestamps).
func TestTopicCompressionType(t *testing.T) {
	for _, mode := range []string{"full", "header"} {
		t.Run(mode, func(t *testing.T) {
			s := startServer(t, t.TempDir(), "strata.produce.validation="+mode)
			admin := newClient(t, s)
			for _, c := range []struct {
				topic, ct string
				send      map[string]kgo.CompressionCodec
				want      record.Codec // -1: the producer's
			}{
				{"to-zstd", "zstd", map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "lz4": kgo.Lz4Compression()}, record.CodecZstd},
				{"to-none", "uncompressed", map[string]kgo.CompressionCodec{"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression()}, record.CodecNone},
				{"as-sent", "producer", map[string]kgo.CompressionCodec{"gzip": kgo.GzipCompression()}, record.CodecGzip},
			} {
				createTopicWith(t, admin, c.topic, 1, "compression.type", c.ct)
				var sent []*kgo.Record
				for name, codec := range c.send {
					cl := newClient(t, s, kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(c.topic))
					var recs []*kgo.Record
					for i := range 50 {
						recs = append(recs, &kgo.Record{
							Key:       fmt.Appendf(nil, "%s-k%d", name, i),
							Value:     bytes.Repeat(fmt.Appendf(nil, "%s value %d ", name, i), 20),
							Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(name)}, {Key: "i", Value: fmt.Appendf(nil, "%d", i)}},
							Timestamp: time.UnixMilli(1_750_000_000_000 + int64(i)),
						})
					}
					if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
						t.Fatalf("%s: produce %s: %v", c.topic, name, err)
					}
					sent = append(sent, recs...)
				}
				for i, codec := range segmentCodecs(t, s, c.topic) {
					if codec != c.want {
						t.Fatalf("%s (compression.type=%s): stored batch %d is %v, want %v", c.topic, c.ct, i, codec, c.want)
					}
				}
				got := consumeAll(t, s, c.topic, []int32{0}, len(sent))
				if len(got) != len(sent) {
					t.Fatalf("%s: consumed %d of %d", c.topic, len(got), len(sent))
				}
				for i, r := range got {
					w := sent[i]
					if r.Offset != int64(i) || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) ||
						!r.Timestamp.Equal(w.Timestamp) || len(r.Headers) != 2 ||
						r.Headers[0].Key != "h" || !bytes.Equal(r.Headers[0].Value, w.Headers[0].Value) || r.Headers[1].Key != "i" ||
						!bytes.Equal(r.Headers[1].Value, w.Headers[1].Value) {
						t.Fatalf("%s: record %d: offset %d key %q ts %v headers %v, want key %q ts %v", c.topic, i, r.Offset, r.Key, r.Timestamp, r.Headers, w.Key, w.Timestamp)
					}
				}
			}
		})
	}
}

// TestBatchLargerThanSegment: a batch larger than the topic's segment.bytes
// can never be stored; it is refused with RECORD_LIST_TOO_LARGE, as Kafka
// does, and smaller batches keep going in.
func TestBatchLargerThanSegment(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	if c := createWithConfigs(t, r, "seg", "segment.bytes", "4096"); c != 0 {
		t.Fatal(c)
	}
	p := r.roundTrip(produceRequest("seg", 0, makeBatch(t, 1, 6000), 9), 2).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.RecordListTooLarge.Code {
		t.Fatalf("6000-byte batch on segment.bytes=4096: error %v, want RECORD_LIST_TOO_LARGE", kerr.ErrorForCode(p.ErrorCode))
	}
	p = r.roundTrip(produceRequest("seg", 0, makeBatch(t, 1, 1000), 9), 3).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("small batch after: error %d base %d", p.ErrorCode, p.BaseOffset)
	}
}

// TestFetchZstdTopicOldVersion: as Kafka (KIP-110), a Fetch below v10 of a
// topic with compression.type=zstd gets UNSUPPORTED_COMPRESSION_TYPE, while
// v10+ reads the records and other topics are served at any version.
func TestFetchZstdTopicOldVersion(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	if c := createWithConfigs(t, r, "zt", "compression.type", "zstd"); c != 0 {
		t.Fatal(c)
	}
	if c := createWithConfigs(t, r, "plain"); c != 0 {
		t.Fatal(c)
	}
	for i, topic := range []string{"zt", "plain"} {
		p := r.roundTrip(produceRequest(topic, 0, makeBatch(t, 3, 100), 9), int32(10+i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("produce %s: %d", topic, p.ErrorCode)
		}
	}
	for _, c := range []struct {
		topic   string
		version int16
		want    int16
	}{
		{"zt", 9, kerr.UnsupportedCompressionType.Code},
		{"zt", 4, kerr.UnsupportedCompressionType.Code},
		{"zt", 10, 0},
		{"zt", 12, 0},
		{"plain", 4, 0},
	} {
		req := fetchRequest(c.version, c.topic, 0, 0)
		req.MaxWaitMillis = 0
		p := r.roundTrip(req, 20).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != c.want {
			t.Fatalf("fetch %s v%d: error %v, want %v", c.topic, c.version, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(c.want))
		}
		if c.want == 0 {
			b := record.Batch(p.RecordBatches)
			if len(b) < record.BatchHeaderSize || b.NumRecords() != 3 {
				t.Fatalf("fetch %s v%d: %d bytes", c.topic, c.version, len(p.RecordBatches))
			}
			if c.topic == "zt" && b.Codec() != record.CodecZstd {
				t.Fatalf("zt stored %v", b.Codec())
			}
		}
	}
}

// TestAlterCompressionTypeLive: compression.type changed with
// IncrementalAlterConfigs applies to the next produce, and deleting the
// override goes back to the broker default (producer: batches as sent).
func TestAlterCompressionTypeLive(t *testing.T) {
	s := startServer(t, t.TempDir())
	cl := newClient(t, s, kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.DefaultProduceTopic("live-ct"))
	createTopicWith(t, cl, "live-ct", 1)
	produce := func(i int) {
		t.Helper()
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte("compressible "), 50)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	produce(0)
	if c := incAlter(t, s, 1, "live-ct", "compression.type", set, "lz4"); c != 0 {
		t.Fatalf("alter: %d", c)
	}
	produce(1)
	if c := incAlter(t, s, 1, "live-ct", "compression.type", set, "brotli"); c != kerr.InvalidConfig.Code {
		t.Fatalf("compression.type=brotli: error %d, want INVALID_CONFIG", c)
	}
	if c := incAlter(t, s, 1, "live-ct", "compression.type", del, nil); c != 0 {
		t.Fatalf("delete: %d", c)
	}
	produce(2)
	got := segmentCodecs(t, s, "live-ct")
	want := []record.Codec{record.CodecGzip, record.CodecLZ4, record.CodecGzip}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored codecs %v, want %v", got, want)
	}
	if recs := consumeAll(t, s, "live-ct", []int32{0}, 3); string(recs[1].Key) != "k1" || len(recs[1].Value) != 650 {
		t.Fatalf("record 1: key %q, %d value bytes", recs[1].Key, len(recs[1].Value))
	}
}

// storedBatches reads every batch of partition 0 of topic from its segment
// files.
func storedBatches(t *testing.T, s *Server, topic string) []record.Batch {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(s.topics.partition(topic, 0).dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("segment files of %s: %v %v", topic, logs, err)
	}
	var out []record.Batch
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for pos := int64(0); pos < int64(len(b)); {
			h, err := record.ParseEntryHeader(b[pos:], pos)
			if err != nil {
				t.Fatalf("%s at %d: %v", f, pos, err)
			}
			out = append(out, record.Batch(b[pos:pos+h.TotalSize()]))
			pos += h.TotalSize()
		}
	}
	return out
}

// TestTopicCompressionLevel: batches the broker recompresses to a topic's
// compression.type are compressed at the topic's compression.<codec>.level,
// else at the broker's (KIP-390); the level changes live with
// IncrementalAlterConfigs; values outside Kafka's ranges are INVALID_CONFIG.
// A stored batch was compressed at level L when recompressing it at L gives
// the same bytes; the test first checks that its records compress
// differently at the levels it compares, so it can tell them apart.
func TestTopicCompressionLevel(t *testing.T) {
	s := startServer(t, t.TempDir(), "compression.gzip.level=1")
	r := dialRaw(t, s)
	for _, c := range []struct {
		name, value string
		want        int16
	}{
		{"compression.gzip.level", "0", kerr.InvalidConfig.Code},
		{"compression.gzip.level", "10", kerr.InvalidConfig.Code},
		{"compression.gzip.level", "-1", 0},
		{"compression.lz4.level", "18", kerr.InvalidConfig.Code},
		{"compression.lz4.level", "0", kerr.InvalidConfig.Code},
		{"compression.zstd.level", "23", kerr.InvalidConfig.Code},
		{"compression.zstd.level", "-131073", kerr.InvalidConfig.Code},
		{"compression.zstd.level", "-5", 0},
	} {
		topic := fmt.Sprintf("bad-%s-%s", c.name, c.value)
		if code := createWithConfigs(t, r, topic, c.name, c.value); code != c.want {
			t.Fatalf("%s=%s: error %v, want %v", c.name, c.value, kerr.ErrorForCode(code), kerr.ErrorForCode(c.want))
		}
	}

	for _, kv := range []string{"compression.gzip.level=0", "compression.lz4.level=18", "compression.zstd.level=x"} {
		if _, err := LoadConfig("", []string{kv}, nil); err == nil {
			t.Fatalf("broker config %s accepted", kv)
		}
	}

	admin := newClient(t, s)
	createTopicWith(t, admin, "gz-broker", 1, "compression.type", "gzip")
	createTopicWith(t, admin, "gz-9", 1, "compression.type", "gzip", "compression.gzip.level", "9")
	createTopicWith(t, admin, "zstd-19", 1, "compression.type", "zstd", "compression.zstd.level", "19")
	createTopicWith(t, admin, "lz4-1", 1, "compression.type", "lz4", "compression.lz4.level", "1")
	createTopicWith(t, admin, "lz4-default", 1, "compression.type", "lz4")
	// Words drawn at random compress, and compress differently at every
	// level compared below (lz4-HC levels 1 and 9 differ only on such data).
	words := []string{"alpha", "beta", "gamma", "delta", "value", "record", "kafka", "strata", "log", "segment", "offset"}
	rnd := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for i := range 200 {
		var v []byte
		for range 40 {
			v = fmt.Appendf(v, "%s %d ", words[rnd.IntN(len(words))], rnd.IntN(1000))
		}
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%17), Value: v})
	}
	cl := newClient(t, s, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(topic string) {
		t.Helper()
		batch := make([]*kgo.Record, len(recs))
		for i, rec := range recs {
			cp := *rec
			cp.Topic = topic
			batch[i] = &cp
		}
		if err := cl.ProduceSync(testCtx(t), batch...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	// levelOf checks that batch i of topic is codec c at level want and not
	// at other.
	levelOf := func(topic string, i int, c record.Codec, want, other int) {
		t.Helper()
		bs := storedBatches(t, s, topic)
		if len(bs) <= i {
			t.Fatalf("%s: %d batches stored, want batch %d", topic, len(bs), i)
		}
		b := bs[i]
		if b.Codec() != c {
			t.Fatalf("%s batch %d: codec %v, want %v", topic, i, b.Codec(), c)
		}
		at := func(level int) []byte {
			out, err := b.AppendRecompressed(nil, c, level)
			if err != nil {
				t.Fatalf("%s: recompress at %d: %v", topic, level, err)
			}
			return record.Batch(out).RecordsBytes()
		}
		if bytes.Equal(at(want), at(other)) {
			t.Fatalf("%s: records compress the same at levels %d and %d; the test cannot tell them apart", topic, want, other)
		}
		if !bytes.Equal(b.RecordsBytes(), at(want)) {
			t.Fatalf("%s batch %d: not compressed at level %d (%d bytes; %d at level %d, %d at level %d)",
				topic, i, want, len(b.RecordsBytes()), len(at(want)), want, len(at(other)), other)
		}
	}
	for _, topic := range []string{"gz-broker", "gz-9", "zstd-19", "lz4-1", "lz4-default"} {
		produce(topic)
	}
	levelOf("gz-broker", 0, record.CodecGzip, 1, 9) // the broker's compression.gzip.level=1
	levelOf("gz-9", 0, record.CodecGzip, 9, 1)
	levelOf("zstd-19", 0, record.CodecZstd, 19, 0)
	levelOf("lz4-1", 0, record.CodecLZ4, 1, 0)
	// Kafka's default lz4 level, 9, is lz4's fast compressor (record's 0),
	// not the slowest HC level.
	levelOf("lz4-default", 0, record.CodecLZ4, 0, 9)

	// Live: the next batch takes the new level; deleting it goes back to the
	// broker's.
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	if c := incAlter(t, s, 1, "gz-9", "compression.gzip.level", set, "12"); c != kerr.InvalidConfig.Code {
		t.Fatalf("compression.gzip.level=12: error %d, want INVALID_CONFIG", c)
	}
	if c := incAlter(t, s, 1, "gz-9", "compression.gzip.level", del, nil); c != 0 {
		t.Fatalf("delete compression.gzip.level: %d", c)
	}
	produce("gz-9")
	levelOf("gz-9", 1, record.CodecGzip, 1, 9)
	if got := consumeAll(t, s, "gz-9", []int32{0}, 2*len(recs)); len(got) != 2*len(recs) || !bytes.Equal(got[len(recs)+5].Value, recs[5].Value) {
		t.Fatalf("gz-9: consumed %d records", len(got))
	}
}

// TestStoredCompressionLevelOutOfRange: a level outside Kafka's range kept
// in the topics file by an older strata (which stored these configs without
// checking them) does not stop the broker: it starts, warns, and
// recompresses at the broker's level.
func TestStoredCompressionLevelOutOfRange(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	createTopicWith(t, newClient(t, s), "gz-old", 1, "compression.type", "gzip", "compression.gzip.level", "9")
	s.Close()
	path := filepath.Join(dir, TopicsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte(`"compression.gzip.level": "9"`)
	if !bytes.Contains(b, old) {
		t.Fatalf("%s does not hold %s: %s", TopicsFile, old, b)
	}
	if err := os.WriteFile(path, bytes.Replace(b, old, []byte(`"compression.gzip.level": "0"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, "compression.gzip.level=1")
	if got := s.topics.get("gz-old").produceSettings(s.cfg); got.codec != record.CodecGzip || got.level != 1 {
		t.Fatalf("gz-old after the restart: codec %v level %d, want gzip at the broker's level 1", got.codec, got.level)
	}
}
