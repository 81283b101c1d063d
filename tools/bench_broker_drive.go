package tools

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// latencyStampSize is the send time (ns since the phase began) and the
// sequence number at the head of every latency record's value.
const latencyStampSize = 16

// latencyWarmup is the start of the latency phase left out of the figures
// (connections, metadata, the consumer's first fetch).
const latencyWarmup = 500 * time.Millisecond

// benchRun is one run's measurements.
type benchRun struct {
	produce, consume       time.Duration
	produceIdem            time.Duration // --idempotent
	produceCPU, consumeCPU time.Duration // this process's CPU time (driver and in-process broker)
	produceIdemCPU         time.Duration // --idempotent: the same for its produce
	txn                    txnFigures    // --transactions
	latencyRecords         int
	p50, p99, p999, max    float64 // milliseconds
	// ackP50, ackP99, ackP999: the latency records' acknowledgements
	// (promise minus send), the producer's share of p50, p99, p99.9.
	ackP50, ackP99, ackP999 float64
}

// benchTarget is where a driver sends its records and how: the brokers, the
// acks, the topics it creates and the producer's settings beyond
// producerOpts'. strata bench broker and strata bench cluster share the
// driver below through it.
type benchTarget struct {
	seeds   []string
	acks    kgo.Acks
	rf      int16              // replication factor of the topics created
	idem    bool               // an idempotent producer (acks=all)
	configs map[string]*string // their topic configs
	tune    []kgo.Opt          // producer options after producerOpts'
	conn    []kgo.Opt          // every client's connection options (TLS dialer, SASL)
}

// brokerTarget is strata bench broker's: one broker, acks=1, topics of one
// replica, the client's default batching.
func brokerTarget(boot string) benchTarget {
	return benchTarget{seeds: []string{boot}, acks: kgo.LeaderAck(), rf: 1}
}

// benchBrokerRun produces and consumes cfg.records on topic (with
// --idempotent and --transactions, produces them also to
// topic+"-idempotent" and topic+"-txn", the produces one after the other
// in an order rotated by run, so that none of them is always the one
// that runs first), then measures latency on topic+"-latency".
func benchBrokerRun(cfg benchBrokerConfig, tgt benchTarget, topic string, run int, bar *progress) (benchRun, error) {
	var r benchRun
	var err error
	var produces []func() error
	if !cfg.noProduce {
		produces = append(produces, func() error {
			cpu := processCPU()
			for range cfg.producePassCount() { // --produce-passes: the records again, to the same topic
				d, err := benchProduce(cfg, tgt, topic, bar)
				if err != nil {
					return failErr(fmt.Errorf("produce: %w", err))
				}
				r.produce += d
			}
			r.produceCPU = processCPU() - cpu
			return nil
		})
	}
	if cfg.idempotent {
		produces = append(produces, func() error {
			itgt := tgt
			itgt.idem = true
			cpu := processCPU()
			if r.produceIdem, err = benchProduce(cfg, itgt, topic+"-idempotent", bar); err != nil {
				return failErr(fmt.Errorf("idempotent produce: %w", err))
			}
			r.produceIdemCPU = processCPU() - cpu
			return nil
		})
	}
	if cfg.transactions > 0 {
		produces = append(produces, func() error { return benchTxnProduceTimed(cfg, tgt, topic+"-txn", &r.txn) })
	}
	for i := range produces {
		if err := produces[(i+run)%len(produces)](); err != nil {
			return r, err
		}
	}
	cpu1 := processCPU()
	for pass := 0; pass < cfg.passes() && !cfg.noConsume; pass++ { // --consume-passes: the same records again
		d, err := benchConsume(cfg, tgt, topic, bar)
		if err != nil {
			return r, failErr(fmt.Errorf("consume: %w", err))
		}
		r.consume += d
	}
	r.consumeCPU = processCPU() - cpu1
	if cfg.latencySeconds > 0 {
		if err := r.measureLatency(cfg, tgt, topic+"-latency"); err != nil {
			return r, err
		}
	}
	return r, nil
}

// measureLatency runs benchLatency and keeps its quantiles.
func (r *benchRun) measureLatency(cfg benchBrokerConfig, tgt benchTarget, topic string) error {
	lats, acks, err := benchLatency(cfg, tgt, topic)
	if err != nil {
		return failErr(fmt.Errorf("latency: %w", err))
	}
	r.latencyRecords = len(lats)
	r.p50, r.p99, r.p999, r.max = quantileMs(lats, 0.5), quantileMs(lats, 0.99), quantileMs(lats, 0.999), quantileMs(lats, 1)
	r.ackP50, r.ackP99, r.ackP999 = quantileMs(acks, 0.5), quantileMs(acks, 0.99), quantileMs(acks, 0.999)
	return nil
}

// producerOpts are the driver's producer settings: the target's acks,
// idempotence off (on with acks=all for an idempotent target), no
// compression, one explicit partition, then the target's tuning;
// everything else the client's defaults.
func producerOpts(tgt benchTarget) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(tgt.seeds...),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	if tgt.idem {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(tgt.acks), kgo.DisableIdempotentWrite())
	}
	opts = append(opts, tgt.conn...)
	return append(opts, tgt.tune...)
}

// withTopicConfigs is tgt with kv (bench broker's --segment-bytes and
// --retention-bytes) added to its topic configs.
func withTopicConfigs(tgt benchTarget, kv [][2]string) benchTarget {
	if len(kv) == 0 {
		return tgt
	}
	configs := maps.Clone(tgt.configs)
	if configs == nil {
		configs = map[string]*string{}
	}
	for _, c := range kv {
		configs[c[0]] = kmsg.StringPtr(c[1])
	}
	tgt.configs = configs
	return tgt
}

// createBenchTopic creates a one-partition topic with the target's
// replication factor and configs, or with replicas (leader first) when
// given, and waits until its leader is known and every replica is in the
// ISR. A topic that exists already is used as it is once it has a leader
// (it is not created again: a cluster with a broker down would refuse the
// replication factor before it saw the name taken).
func createBenchTopic(ctx context.Context, cl *kgo.Client, topic string, tgt benchTarget, replicas ...int32) error {
	state := func() (exists, led, inSync bool) {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) == 0 {
			return false, false, false
		}
		p := mresp.Topics[0].Partitions[0]
		return true, p.Leader >= 0, p.Leader >= 0 && len(p.ISR) >= len(p.Replicas)
	}
	if exists, led, _ := state(); exists && led {
		return nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, max(tgt.rf, 1)
	if len(replicas) > 0 {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range tgt.configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, v
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("CreateTopics %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("CreateTopics %s: %w", topic, err)
		}
	}
	for {
		if _, _, inSync := state(); inSync {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader or not every replica in sync: %w", topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// benchProduce produces cfg.records values of cfg.recordSize bytes and
// returns the time from the first Produce call to Flush returning. Before
// that clock starts, cfg.warmup records are produced and acknowledged at
// offsets 0..W-1, so the client's metadata load, its produce connection and
// its first requests (which take far longer than the ones after, whatever
// the broker) are not counted; the measured records are offsets W..W+N-1.
// Records come from slabs of produceSlab (one allocation each), so the
// driver's own garbage stays small beside the client's.
func benchProduce(cfg benchBrokerConfig, tgt benchTarget, topic string, bar *progress) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(producerOpts(tgt)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := createBenchTopic(ctx, cl, topic, withTopicConfigs(tgt, cfg.topicConfigs(false))); err != nil {
		return 0, err
	}
	val := make([]byte, cfg.recordSize)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	var failed atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	warm := make([]kgo.Record, cfg.warmup)
	for i := range warm {
		warm[i].Topic, warm[i].Value = topic, val
		cl.Produce(ctx, &warm[i], promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("warm-up records: %w", err)
	}
	if e := failed.Load(); e != nil {
		return 0, fmt.Errorf("warm-up records: %w", *e)
	}
	const produceSlab = 4096
	var slab []kgo.Record
	t0 := time.Now()
	for i := int64(0); i < cfg.records; i++ {
		if len(slab) == 0 {
			slab = make([]kgo.Record, produceSlab)
		}
		r := &slab[0]
		slab = slab[1:]
		r.Topic, r.Value = topic, val
		cl.Produce(ctx, r, promise)
		if i%65536 == 65535 {
			bar.add(65536 * int64(cfg.recordSize))
			if failed.Load() != nil {
				break
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if e := failed.Load(); e != nil {
		return 0, *e
	}
	return d, nil
}

// benchConsume reads the cfg.records measured records (after benchProduce's
// cfg.warmup warm-up records) with a new client and checks every value's
// size.
func benchConsume(cfg benchBrokerConfig, tgt benchTarget, topic string, bar *progress) (time.Duration, error) {
	return consumeRecords(cfg, tgt, topic, cfg.warmup, true, bar)
}

// consumeRecords reads cfg.records records of topic's partition 0 from
// offset from with a new client (opts added to the bench's own) and checks
// every value's size; contiguous also checks that the offsets follow one
// another (not so where transaction markers take offsets). It returns the
// time from the first poll to the last record.
func consumeRecords(cfg benchBrokerConfig, tgt benchTarget, topic string, from int64, contiguous bool, bar *progress, opts ...kgo.Opt) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{
		kgo.SeedBrokers(tgt.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(cfg.fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(cfg.fetchPartBytes),
		kgo.FetchMaxWait(time.Second),
	}, opts...), tgt.conn...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	var bad error
	t0 := time.Now()
	for n < cfg.records && bad == nil {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("consumed %d of %d records: %w", n, cfg.records, err)
		}
		fs.EachError(func(t string, p int32, err error) {
			bad = fmt.Errorf("fetch %s/%d: %w", t, p, err)
		})
		polled := n
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case bad != nil:
			case contiguous && r.Offset != from+n:
				bad = fmt.Errorf("record at offset %d, want %d", r.Offset, from+n)
			case len(r.Value) != cfg.recordSize:
				bad = fmt.Errorf("record at offset %d has %d value bytes, want %d", r.Offset, len(r.Value), cfg.recordSize)
			}
			n++
		})
		bar.add((n - polled) * int64(cfg.recordSize))
	}
	d := time.Since(t0)
	if bad != nil {
		return 0, bad
	}
	return d, nil
}

// benchLatency produces at cfg.latencyRate for latencyWarmup plus
// cfg.latencySeconds while a consumer polls the topic, and returns each
// post-warm-up record's receive time minus its send time, and its
// acknowledgement time (the producer's promise) minus its send time.
func benchLatency(cfg benchBrokerConfig, tgt benchTarget, topic string) (lats, acks []time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.latencySeconds*float64(time.Second))+time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(append(producerOpts(tgt), kgo.ProducerLinger(cfg.latencyLinger))...)
	if err != nil {
		return nil, nil, err
	}
	defer prod.Close()
	if err := createBenchTopic(ctx, prod, topic, withTopicConfigs(tgt, cfg.topicConfigs(true))); err != nil {
		return nil, nil, err
	}
	cons, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(tgt.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
	}, tgt.conn...)...)
	if err != nil {
		return nil, nil, err
	}
	defer cons.Close()
	if err := latencyPrelude(ctx, prod, cons, topic); err != nil {
		return nil, nil, err
	}

	interval := time.Second / time.Duration(cfg.latencyRate)
	warm := int64(latencyWarmup / interval)
	total := warm + int64(cfg.latencySeconds*float64(cfg.latencyRate))
	base := time.Now()
	lats = make([]time.Duration, 0, total-warm)
	acks = make([]time.Duration, 0, total-warm)
	var acksMu sync.Mutex
	got := make(chan error, 1)
	go func() {
		var n int64
		for n < total {
			fs := cons.PollFetches(ctx)
			now := time.Since(base)
			if err := ctx.Err(); err != nil {
				got <- fmt.Errorf("received %d of %d records: %w", n, total, err)
				return
			}
			var ferr error
			fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err) })
			if ferr != nil {
				got <- ferr
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if len(r.Value) < latencyStampSize {
					return
				}
				sent := time.Duration(binary.BigEndian.Uint64(r.Value))
				if seq := int64(binary.BigEndian.Uint64(r.Value[8:])); seq >= warm {
					lats = append(lats, now-sent)
				}
			})
		}
		got <- nil
	}()

	var failed atomic.Pointer[error]
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
			return
		}
		now := time.Since(base)
		sent := time.Duration(binary.BigEndian.Uint64(r.Value))
		if seq := int64(binary.BigEndian.Uint64(r.Value[8:])); seq >= warm {
			acksMu.Lock()
			acks = append(acks, now-sent)
			acksMu.Unlock()
		}
	}
	pace(base, interval, total, func() bool { return failed.Load() != nil }, func(i int64) {
		v := make([]byte, cfg.recordSize)
		binary.BigEndian.PutUint64(v, uint64(time.Since(base)))
		binary.BigEndian.PutUint64(v[8:], uint64(i))
		prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: v}, promise)
	})
	if err := prod.Flush(ctx); err != nil {
		return nil, nil, err
	}
	if e := failed.Load(); e != nil {
		return nil, nil, *e
	}
	if err := <-got; err != nil {
		return nil, nil, err
	}
	return lats, acks, nil
}

// latencyPrelude produces one unstamped record and waits for its
// acknowledgement and for cons to receive it, before the paced records
// start: the clients' metadata loads, connections and first requests on a
// topic just created (up to a second on a loaded machine while the new
// partition's leadership reaches every broker's metadata cache) would
// otherwise fall in the measured records when they outlast the warm-up.
func latencyPrelude(ctx context.Context, prod, cons *kgo.Client, topic string) error {
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("warm-up")}).FirstErr(); err != nil {
		return fmt.Errorf("warm-up record: %w", err)
	}
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("warm-up record not received: %w", err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err) })
		if ferr != nil {
			return ferr
		}
		if fs.NumRecords() > 0 {
			return nil
		}
	}
}

// pace calls send(i) for i = 0..total-1 (total < 0: until stop), record i
// at base + i*interval, until stop reports true. It sends every record that
// is due, then sleeps until the next one is: Go's timers are about a
// millisecond coarse, so records leave in small bursts, each stamped as it
// is handed to the client.
func pace(base time.Time, interval time.Duration, total int64, stop func() bool, send func(i int64)) {
	for i := int64(0); (total < 0 || i < total) && !stop(); {
		due := int64(time.Since(base) / interval)
		for ; (total < 0 || i < total) && i <= due; i++ {
			send(i)
		}
		if total < 0 || i < total {
			time.Sleep(time.Duration(i)*interval - time.Since(base))
		}
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quantileMs is the q-quantile of ds in milliseconds (nearest rank; ds is
// sorted in place).
func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	if !sort.SliceIsSorted(ds, func(i, j int) bool { return ds[i] < ds[j] }) {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	}
	k := int(q*float64(len(ds))+0.999999) - 1
	k = max(0, min(k, len(ds)-1))
	return float64(ds[k]) / 1e6
}
