package server

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/stratalog/strata/record"
)

// TestModel drives an in-process broker with random operations from several
// concurrent clients and checks every answer against an in-memory reference
// (model_ref_test.go): produce (raw batches of every codec, some at Produce
// v3, and franz-go producers, acks 1 and -1, explicit partitions), fetch at
// random offsets (out of range ones included, some at Fetch v4, some
// concurrent with produces), ListOffsets
// earliest/latest/by time, DeleteRecords, topic create/delete, clean restarts
// and unclean ones. After every step the log start and end offsets of every
// partition, and the records of every partition the step touched, must match
// the reference exactly; after every restart, every record of every
// partition.
//
// An unclean restart copies the data dir while the broker runs (no request
// in flight, so every acknowledged byte is in the page cache and the copy),
// sometimes appends a torn partial write to a segment of the copy, and
// starts a new broker on the copy: the copy has no clean-shutdown marker and
// whatever checkpoints the running broker had written, as after a power cut
// that kept the page cache (the old broker is then closed on its own dir).
//
// Seeds: STRATA_MODEL_SEED=n replays one seed; otherwise STRATA_MODEL_SEEDS
// seeds (default 2 with -short, 4 without) from the time. STRATA_MODEL_STEPS
// sets the steps per seed (default 80, 50 with -short). A failure prints the
// seed and the operations so far.
func TestModel(t *testing.T) {
	seeds := []int64{}
	if v := os.Getenv("STRATA_MODEL_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("STRATA_MODEL_SEED=%q: %v", v, err)
		}
		seeds = append(seeds, n)
	} else {
		count := 4
		if testing.Short() {
			count = 2
		}
		if v := os.Getenv("STRATA_MODEL_SEEDS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("STRATA_MODEL_SEEDS=%q: %v", v, err)
			}
			count = n
		}
		base := time.Now().UnixNano()
		for i := range count {
			seeds = append(seeds, base+int64(i))
		}
	}
	steps := 80
	if testing.Short() {
		steps = 50
	}
	if v := os.Getenv("STRATA_MODEL_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("STRATA_MODEL_STEPS=%q: %v", v, err)
		}
		steps = n
	}
	for _, seed := range seeds {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			t.Logf("seed %d (replay: STRATA_MODEL_SEED=%d go test ./server -run 'TestModel$')", seed, seed)
			runModel(t, seed, steps)
		})
	}
}

// model is one run: the broker, its clients and the reference.
type model struct {
	t      *testing.T
	seed   int64
	rng    *rand.Rand
	dir    string
	s      *Server
	raw    []*kgo.Client // for raw requests, one per concurrent client
	old    *kgo.Client   // raw requests at Produce v3 and Fetch v4
	prod   []*kgo.Client // franz-go producers, one per codec and acks
	topics map[string]*modelTopic
	ops    []string
	clock  int64 // record timestamps, near the wall clock
	ctx    context.Context
	spent  map[string]time.Duration // per kind of step, for the log
}

var (
	modelCodecs  = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	modelKgoComp = []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
)

const (
	modelChurn      = "churn"
	modelOldProduce = 3
	modelOldFetch   = 4
)

func runModel(t *testing.T, seed int64, steps int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := &model{t: t, seed: seed, rng: rand.New(rand.NewSource(seed)), dir: t.TempDir(),
		topics: map[string]*modelTopic{}, clock: time.Now().UnixMilli() - 3600_000, ctx: ctx, spent: map[string]time.Duration{}}
	m.start()
	defer func() { m.stopClients(); m.s.Close() }()
	// Fixed topics: defaults; zstd storage with small segments; a small
	// max.message.bytes.
	m.createTopic("m0", 3, nil)
	m.createTopic("m1", 2, map[string]string{"compression.type": "zstd", "segment.bytes": "24576"})
	m.createTopic("m2", 3, map[string]string{"max.message.bytes": "6000", "segment.bytes": "32768"})
	for step := range steps {
		m.step(step)
	}
	m.checkAll("end")
	t.Logf("%d steps, time per kind of step: %v", steps, m.spent)
}

func (m *model) logOp(format string, a ...any) {
	m.ops = append(m.ops, fmt.Sprintf(format, a...))
}

func (m *model) fail(format string, a ...any) {
	m.t.Helper()
	var b strings.Builder
	for i, op := range m.ops {
		fmt.Fprintf(&b, "  %3d %s\n", i, op)
	}
	m.t.Fatalf("seed %d (replay: STRATA_MODEL_SEED=%d): %s\noperations:\n%s", m.seed, m.seed, fmt.Sprintf(format, a...), b.String())
}

func (m *model) start() {
	cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + m.dir,
		"auto.create.topics.enable=false", "log.flush.offset.checkpoint.interval.ms=300", "file.delete.delay.ms=50",
		// Even seeds preallocate (small appends then go through the segment's
		// mapping, and unclean restarts copy zero-filled reserves).
		fmt.Sprintf("log.preallocate=%v", m.seed%2 == 0)}, nil)
	if err != nil {
		m.fail("config: %v", err)
	}
	s, err := Start(cfg, &Options{Logger: testLogger()})
	if err != nil {
		m.fail("start on %s: %v", m.dir, err)
	}
	m.s = s
	opts := []kgo.Opt{kgo.SeedBrokers(s.Addr().String()), kgo.RetryTimeout(5 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
	for range 4 {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			m.fail("client: %v", err)
		}
		m.raw = append(m.raw, cl)
	}
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.Produce), modelOldProduce)
	vs.SetMaxKeyVersion(int16(kmsg.Fetch), modelOldFetch)
	if m.old, err = kgo.NewClient(append(opts, kgo.MaxVersions(vs))...); err != nil {
		m.fail("client: %v", err)
	}
	for i, c := range modelKgoComp {
		// Batches of at most 16 KiB: m1 stores at most 24 KiB a batch
		// (segment.bytes), and two produce steps on one client may share a
		// batch (371 records, seed 1796273792576759984).
		copts := append(opts[:len(opts):len(opts)], kgo.ProducerBatchCompression(c), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchMaxBytes(16<<10))
		if i%2 == 0 { // acks=1: not idempotent
			copts = append(copts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(copts...)
		if err != nil {
			m.fail("client: %v", err)
		}
		m.prod = append(m.prod, cl)
	}
}

func (m *model) stopClients() {
	for _, cl := range append(m.raw, append(m.prod, m.old)...) {
		cl.Close()
	}
	m.raw, m.prod, m.old = nil, nil, nil
}

// request sends req straight to the broker (no client-side sharding).
func (m *model) request(cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	return cl.Broker(int(m.s.cfg.NodeID)).Request(m.ctx, req)
}

func (m *model) step(step int) {
	m.t.Helper()
	var touched map[string]int64 // partition -> first offset to re-read
	t0 := time.Now()
	kind := ""
	defer func() { m.spent[kind] += time.Since(t0) }()
	switch w := m.rng.Intn(100); {
	case w < 36:
		kind, touched = "produce", m.opProduce(false)
	case w < 52:
		kind, touched = "produce+fetch", m.opProduce(true)
	case w < 67:
		kind = "fetch"
		m.opFetch()
	case w < 75:
		kind = "list-by-time"
		m.opListByTime()
	case w < 83:
		kind, touched = "delete-records", m.opDeleteRecords()
	case w < 91:
		kind = "create/delete"
		m.opChurn()
	case w < 94:
		kind = "produce-missing"
		m.opProduceUnknown()
	case w < 98:
		kind = "clean-restart"
		m.restart(true)
		m.checkAll(fmt.Sprintf("after clean restart (step %d)", step))
		return
	default:
		kind = "unclean-restart"
		m.restart(false)
		m.checkAll(fmt.Sprintf("after unclean restart (step %d)", step))
		return
	}
	m.checkOffsets(fmt.Sprintf("after step %d", step))
	for tp, from := range touched {
		var topic string
		var part int32
		if i := strings.LastIndexByte(tp, '/'); i > 0 {
			topic = tp[:i]
			n, _ := strconv.Atoi(tp[i+1:])
			part = int32(n)
		}
		if mt := m.topics[topic]; mt != nil && int(part) < len(mt.parts) {
			m.checkPartition(topic, part, from, fmt.Sprintf("after step %d", step))
		}
	}
}

// livePartition picks a partition of a live topic (topic "" when none).
func (m *model) livePartition() (string, int32) {
	names := m.topicNames()
	if len(names) == 0 {
		return "", 0
	}
	name := names[m.rng.Intn(len(names))]
	return name, int32(m.rng.Intn(len(m.topics[name].parts)))
}

func (m *model) topicNames() []string {
	var names []string
	for _, n := range []string{"m0", "m1", "m2", modelChurn} {
		if m.topics[n] != nil {
			names = append(names, n)
		}
	}
	return names
}

// fetchOnce fetches one partition at offset (max wait 0).
func (m *model) fetchOnce(cl *kgo.Client, topic string, part int32, offset int64, maxBytes int32) (fetched, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 1, maxBytes, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = part, offset, maxBytes
	rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.LastFetchedEpoch = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := m.request(cl, req)
	if err != nil {
		return fetched{}, fmt.Errorf("fetch %s/%d@%d: %w", topic, part, offset, err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return fetched{}, fmt.Errorf("fetch %s/%d@%d: top-level error %d, %d topics", topic, part, offset, fr.ErrorCode, len(fr.Topics))
	}
	return fetchedFrom(topic, req.Version, offset, &fr.Topics[0].Partitions[0]), nil
}

// opFetch fetches a random partition (sometimes of a deleted topic or a
// partition that does not exist) at a random offset around and beyond the
// log, with a random byte limit.
func (m *model) opFetch() {
	topic, part := m.livePartition()
	if topic == "" || m.rng.Intn(12) == 0 {
		topic, part = modelChurn, int32(m.rng.Intn(4))
	}
	var start, end int64
	if mt := m.topics[topic]; mt != nil && int(part) < len(mt.parts) {
		start, end = mt.parts[part].start, mt.parts[part].end()
	}
	var off int64
	switch x := m.rng.Intn(10); {
	case x < 6:
		off = start + m.rng.Int63n(end-start+1)
	case x < 7:
		off = end
	case x < 8:
		off = end + 1 + m.rng.Int63n(5)
	case x < 9:
		off = start - 1 - m.rng.Int63n(3)
	default:
		off = 1 << 40
	}
	maxBytes := int32(1 << 20)
	if m.rng.Intn(3) == 0 {
		maxBytes = int32(1 + m.rng.Intn(3000))
	}
	cl, version := m.raw[0], "v12"
	if m.rng.Intn(5) == 0 {
		cl, version = m.old, fmt.Sprintf("v%d", modelOldFetch)
	}
	m.logOp("fetch %s %s/%d@%d max %d", version, topic, part, off, maxBytes)
	f, err := m.fetchOnce(cl, topic, part, off, maxBytes)
	if err != nil {
		m.fail("%v", err)
	}
	m.expectFetch(&f)
	if _, err := m.check(&f); err != nil {
		m.fail("%v", err)
	}
}

// checkPartition reads a partition from offset from (at least the log
// start) to its end and compares.
func (m *model) checkPartition(topic string, part int32, from int64, when string) {
	p := m.topics[topic].parts[part]
	off := max(from, p.start)
	for {
		f, err := m.fetchOnce(m.raw[0], topic, part, off, 1<<20)
		if err != nil {
			m.fail("%s: %v", when, err)
		}
		m.expectFetch(&f)
		next, err := m.check(&f)
		if err != nil {
			m.fail("%s: %v", when, err)
		}
		if off == p.end() {
			return
		}
		off = next
	}
}

// checkOffsets compares every live partition's earliest and latest offsets
// (ListOffsets) with the reference.
func (m *model) checkOffsets(when string) {
	for _, ts := range []int64{-2, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for _, name := range m.topicNames() {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = name
			for i := range m.topics[name].parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(i), ts, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := m.request(m.raw[0], req)
		if err != nil {
			m.fail("%s: list offsets: %v", when, err)
		}
		for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				p := m.topics[rt.Topic].parts[rp.Partition]
				want := p.end()
				if ts == -2 {
					want = p.start
				}
				if rp.ErrorCode != 0 || rp.Offset != want {
					m.fail("%s: ListOffsets %d of %s/%d: offset %d error %v, want %d", when, ts, rt.Topic, rp.Partition, rp.Offset, kerr.ErrorForCode(rp.ErrorCode), want)
				}
			}
		}
	}
}

// checkAll checks offsets and every record of every live partition.
func (m *model) checkAll(when string) {
	m.checkOffsets(when)
	for _, name := range m.topicNames() {
		for i := range m.topics[name].parts {
			m.checkPartition(name, int32(i), 0, when)
		}
	}
}
