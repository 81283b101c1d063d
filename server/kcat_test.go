package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests drive the broker with kcat (librdkafka 2.0.2 on Debian), a real C
// client: Metadata v4, Produce v7 (acks=-1), ListOffsets v2 and Fetch v11 with
// read_committed. scripts/deps.sh installs kcat when it can; under CI=true a missing
// kcat fails, elsewhere the tests skip.

func kcatBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not found and CI=true: scripts/deps.sh should have installed it (apt-get install -y kcat)")
		}
		t.Skip("kcat not found; skipping the kcat tests (apt-get install -y kcat, or run scripts/deps.sh as root)")
	}
	return p
}

// kcat runs kcat against s with quick, quiet settings and returns its stdout.
func kcat(t *testing.T, s *Server, stdin string, args ...string) string {
	t.Helper()
	bin := kcatBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"-b", s.Addr().String(), "-q",
		"-X", "topic.metadata.refresh.interval.ms=1000",
		"-X", "socket.timeout.ms=10000",
		"-X", "message.timeout.ms=10000",
		"-X", "metadata.max.age.ms=5000",
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %q timed out; stderr:\n%s\nstdout:\n%s", args, errb.String(), out.String())
	}
	if err != nil {
		t.Fatalf("kcat %q: %v; stderr:\n%s", args, err, errb.String())
	}
	if errb.Len() > 0 {
		t.Logf("kcat %q stderr:\n%s", args, errb.String())
	}
	return out.String()
}

// createTopic creates topic with n partitions through CreateTopics.
func createTopic(t *testing.T, s *Server, topic string, n int32) {
	t.Helper()
	cl := newClient(t, s)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, n, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		t.Fatalf("create %s: error code %d", topic, c)
	}
}

func TestKcatMetadata(t *testing.T) {
	kcatBin(t)
	s := startServer(t, t.TempDir(), "auto.create.topics.enable=false")
	createTopic(t, s, "kmeta", 3)
	createTopic(t, s, "kmeta2", 1)
	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Leader    int32 `json:"leader"`
				Replicas  []struct {
					ID int32 `json:"id"`
				} `json:"replicas"`
				Isrs []struct {
					ID int32 `json:"id"`
				} `json:"isrs"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	out := kcat(t, s, "", "-L", "-J")
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J output %q: %v", out, err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != s.Addr().String() {
		t.Fatalf("brokers %+v, want one at %s", md.Brokers, s.Addr())
	}
	id := md.Brokers[0].ID
	parts := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Error != "" {
			t.Fatalf("topic %s error %s", tp.Topic, tp.Error)
		}
		parts[tp.Topic] = len(tp.Partitions)
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) && len(tp.Partitions) > 1 {
				// kcat prints partitions in the broker's order; ours is ascending.
				t.Fatalf("topic %s partition %d at index %d", tp.Topic, p.Partition, i)
			}
			if p.Leader != id || len(p.Replicas) != 1 || p.Replicas[0].ID != id || len(p.Isrs) != 1 || p.Isrs[0].ID != id {
				t.Fatalf("topic %s partition %+v, want leader/replica/isr %d", tp.Topic, p, id)
			}
		}
	}
	if parts["kmeta"] != 3 || parts["kmeta2"] != 1 || len(parts) != 2 {
		t.Fatalf("topics %v, want kmeta:3 kmeta2:1", parts)
	}
	// The plain-text form and a single-topic query.
	txt := kcat(t, s, "", "-L", "-t", "kmeta")
	for _, want := range []string{"1 brokers:", "topic \"kmeta\" with 3 partitions:", "partition 2, leader"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("kcat -L output lacks %q:\n%s", want, txt)
		}
	}
}

// kcatRecord is one consumed record as printed by kcatFormat.
type kcatRecord struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

const kcatFormat = "%p|%o|%k|%s\n"

func parseKcat(t *testing.T, out string) []kcatRecord {
	t.Helper()
	var recs []kcatRecord
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "|", 4)
		if len(f) != 4 {
			t.Fatalf("bad kcat line %q", line)
		}
		var r kcatRecord
		if _, err := fmt.Sscan(f[0], &r.Partition); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if _, err := fmt.Sscan(f[1], &r.Offset); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		r.Key, r.Value = f[2], f[3]
		recs = append(recs, r)
	}
	return recs
}

func TestKcatProduceConsumeCodecs(t *testing.T) {
	kcatBin(t)
	s := startServer(t, t.TempDir())
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	wantCodec := map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	for name := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "kcat-" + name
			createTopic(t, s, topic, 1)
			const n = 300
			var in strings.Builder
			for i := range n {
				fmt.Fprintf(&in, "key-%d:value-%d-%s\n", i, i, strings.Repeat(string(rune('a'+i%26)), 20+i%40))
			}
			kcat(t, s, in.String(), "-P", "-t", topic, "-p", "0", "-K", ":", "-z", name, "-X", "linger.ms=20")

			out := kcat(t, s, "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", kcatFormat)
			got := parseKcat(t, out)
			lines := strings.Split(strings.TrimSuffix(in.String(), "\n"), "\n")
			if len(got) != n {
				t.Fatalf("kcat consumed %d records, want %d", len(got), n)
			}
			for i, r := range got {
				k, v, _ := strings.Cut(lines[i], ":")
				if r.Partition != 0 || r.Offset != int64(i) || r.Key != k || r.Value != v {
					t.Fatalf("record %d: %+v, want offset %d key %q value %q", i, r, i, k, v)
				}
			}

			// The batches really are compressed with the codec asked for, and franz-go
			// reads the same records (kcat -> franz-go).
			recs := consumeAll(t, s, topic, []int32{0}, n)
			for i, r := range recs {
				k, v, _ := strings.Cut(lines[i], ":")
				if r.Offset != int64(i) || string(r.Key) != k || string(r.Value) != v {
					t.Fatalf("franz-go record %d: offset %d key %q value %q", i, r.Offset, r.Key, r.Value)
				}
			}
			// lz4 included: librdkafka 2.0.2 sends lz4 only to brokers whose
			// FindCoordinator range reaches v0 (its LZ4 feature flag).
			// librdkafka sends a batch uncompressed when compressing does not
			// shrink it (a lone short record, on a loaded machine where the
			// linger ends early), so such batches may be uncompressed, but
			// at least one batch must carry the codec.
			compressed := 0
			for i, c := range batchCodecs(t, s, topic, 0) {
				switch c {
				case wantCodec[name]:
					compressed++
				case 0:
				default:
					t.Fatalf("batch %d compression %d, want %d (%s)", i, c, wantCodec[name], name)
				}
			}
			if compressed == 0 {
				t.Fatalf("no batch is compressed with %s", name)
			}
		})
	}
}

// batchCodecs fetches partition p of topic from the start with a raw Fetch and
// returns the codec of every stored batch.
func batchCodecs(t *testing.T, s *Server, topic string, p int32) []uint8 {
	t.Helper()
	cl := newClient(t, s)
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 11, 100, 16<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, 16<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("raw fetch: %+v", resp)
	}
	var codecs []uint8
	for b := resp.Topics[0].Partitions[0].RecordBatches; len(b) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("batch %d: %v", len(codecs), err)
		}
		codecs = append(codecs, uint8(rb.Attributes&7))
		b = b[12+int(rb.Length):]
	}
	if len(codecs) == 0 {
		t.Fatal("raw fetch returned no batches")
	}
	return codecs
}

// franz-go produces keyed records to several partitions; kcat consumes them all,
// from the beginning, from given offsets, relative to the end, and by count.
func TestKcatConsumeFranzProduced(t *testing.T) {
	kcatBin(t)
	s := startServer(t, t.TempDir())
	const topic, parts, n = "kcross", 3, 600
	createTopic(t, s, topic, parts)
	cl := newClient(t, s, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.NoCompression()))
	want := map[int32][]kcatRecord{}
	var recs []*kgo.Record
	for i := range n {
		p := int32(i % parts)
		r := &kgo.Record{Partition: p, Key: fmt.Appendf(nil, "k%04d", i), Value: fmt.Appendf(nil, "v%d-%s", i, strings.Repeat("z", i%30))}
		recs = append(recs, r)
		want[p] = append(want[p], kcatRecord{p, int64(len(want[p])), string(r.Key), string(r.Value)})
	}
	// Several produce calls so each partition holds several batches.
	for i := 0; i < n; i += 50 {
		if err := cl.ProduceSync(testCtx(t), recs[i:i+50]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	check := func(t *testing.T, out string, want map[int32][]kcatRecord) {
		t.Helper()
		got := map[int32][]kcatRecord{}
		for _, r := range parseKcat(t, out) {
			got[r.Partition] = append(got[r.Partition], r)
		}
		for p := int32(0); p < parts; p++ {
			if len(got[p]) != len(want[p]) {
				t.Fatalf("partition %d: %d records, want %d", p, len(got[p]), len(want[p]))
			}
			for i := range want[p] {
				if got[p][i] != want[p][i] {
					t.Fatalf("partition %d record %d: %+v, want %+v", p, i, got[p][i], want[p][i])
				}
			}
		}
	}

	t.Run("beginning", func(t *testing.T) {
		check(t, kcat(t, s, "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", kcatFormat), want)
	})
	t.Run("absolute", func(t *testing.T) {
		// -o 150 on every partition (each holds 200).
		w := map[int32][]kcatRecord{}
		for p := range want {
			w[p] = want[p][150:]
		}
		check(t, kcat(t, s, "", "-C", "-t", topic, "-o", "150", "-e", "-f", kcatFormat), w)
	})
	t.Run("single-partition", func(t *testing.T) {
		w := map[int32][]kcatRecord{1: want[1][37:]}
		check(t, kcat(t, s, "", "-C", "-t", topic, "-p", "1", "-o", "37", "-e", "-f", kcatFormat), w)
	})
	t.Run("relative-end", func(t *testing.T) {
		// -o -10: the last ten of each partition.
		w := map[int32][]kcatRecord{}
		for p := range want {
			w[p] = want[p][len(want[p])-10:]
		}
		check(t, kcat(t, s, "", "-C", "-t", topic, "-o", "-10", "-e", "-f", kcatFormat), w)
	})
	t.Run("end", func(t *testing.T) {
		if out := kcat(t, s, "", "-C", "-t", topic, "-o", "end", "-e", "-f", kcatFormat); out != "" {
			t.Fatalf("-o end -e printed records:\n%s", out)
		}
	})
	t.Run("count", func(t *testing.T) {
		w := map[int32][]kcatRecord{2: want[2][5:12]}
		check(t, kcat(t, s, "", "-C", "-t", topic, "-p", "2", "-o", "5", "-c", "7", "-f", kcatFormat), w)
	})
	t.Run("timestamp", func(t *testing.T) {
		// s@ts: ListOffsets by time; every record is at or after the start of the test.
		ts := time.Now().Add(-time.Hour).UnixMilli()
		check(t, kcat(t, s, "", "-C", "-t", topic, "-o", fmt.Sprintf("s@%d", ts), "-e", "-f", kcatFormat), want)
	})
}

// librdkafka before 2.11.1 only compresses with gzip, snappy or lz4 for brokers whose
// Produce range reaches v0, so ApiVersions advertises Produce from v0 (as Kafka 4
// does) while v0-2 requests, which carry old message sets, are still refused.
func TestProduceAdvertisedFromV0RefusedBelowV3(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	var found bool
	for _, k := range r.roundTrip(av, 1).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == int16(kmsg.Produce) {
			found = true
			if k.MinVersion != 0 || k.MaxVersion < 7 {
				t.Fatalf("Produce advertised %d-%d, want 0-(>=7)", k.MinVersion, k.MaxVersion)
			}
		}
	}
	if !found {
		t.Fatal("Produce not advertised")
	}
	for v := int16(0); v < 3; v++ {
		rc := dialRaw(t, s)
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, 1, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "old"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rc.send(req, 1)
		rc.expectClosed()
	}
	healthy(t, s)
}

// kcat -P without -p: librdkafka's consistent_random partitioner spreads keyed
// records, and Metadata (allow_auto_topic_creation) creates the topic.
func TestKcatProduceAutoCreateKeyed(t *testing.T) {
	kcatBin(t)
	s := startServer(t, t.TempDir(), "num.partitions=4")
	const topic, n = "kcat-auto", 400
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "user-%d:event-%d\n", i%37, i)
	}
	kcat(t, s, in.String(), "-P", "-t", topic, "-K", ":", "-z", "snappy")
	got := parseKcat(t, kcat(t, s, "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", kcatFormat))
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	keyPart := map[string]int32{}
	next := map[int32]int64{}
	lastEvent := map[string]int{}
	used := map[int32]bool{}
	for _, r := range got {
		if p, ok := keyPart[r.Key]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		keyPart[r.Key] = r.Partition
		used[r.Partition] = true
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		var ev int
		if _, err := fmt.Sscanf(r.Value, "event-%d", &ev); err != nil || fmt.Sprintf("user-%d", ev%37) != r.Key {
			t.Fatalf("record %+v", r)
		}
		if last, ok := lastEvent[r.Key]; ok && ev <= last {
			t.Fatalf("key %s: event %d after %d", r.Key, ev, last)
		}
		lastEvent[r.Key] = ev
	}
	if len(keyPart) != 37 || len(used) < 2 {
		t.Fatalf("%d keys over %d partitions", len(keyPart), len(used))
	}
}
