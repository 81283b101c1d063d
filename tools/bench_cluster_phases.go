package tools

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterThroughputRun is one run of the throughput and latency phases on
// one target.
type clusterThroughputRun struct {
	produceAll, produceOne, consume          time.Duration
	produceAllCPU, produceOneCPU, consumeCPU time.Duration // brokers' + this process's
	latencyRecords                           int
	p50, p99, p999, max                      float64
	ackP50, ackP99, ackP999                  float64
}

// throughputRun runs the throughput and latency phases against the
// targets (acks=all and acks=1); brokerCPU reads the target's brokers' CPU
// time.
func (cfg *benchClusterConfig) throughputRun(all, one benchTarget, prefix string, brokerCPU func() time.Duration, bar *progress) (clusterThroughputRun, error) {
	var r clusterThroughputRun
	d := cfg.drive
	cpu := func() time.Duration { return processCPU() + brokerCPU() }
	if cfg.phases["throughput"] {
		var err error
		c0 := cpu()
		if r.produceAll, err = benchProduce(d, all, prefix+"-acks-all", bar); err != nil {
			return r, failErr(fmt.Errorf("produce acks=all: %w", err))
		}
		c1 := cpu()
		if r.produceOne, err = benchProduce(d, one, prefix+"-acks-1", bar); err != nil {
			return r, failErr(fmt.Errorf("produce acks=1: %w", err))
		}
		c2 := cpu()
		if r.consume, err = benchConsume(d, all, prefix+"-acks-all", bar); err != nil {
			return r, failErr(fmt.Errorf("consume: %w", err))
		}
		r.produceAllCPU, r.produceOneCPU, r.consumeCPU = c1-c0, c2-c1, cpu()-c2
	}
	if cfg.phases["latency"] {
		var br benchRun
		if err := br.measureLatency(d, all, prefix+"-latency"); err != nil {
			return r, err
		}
		r.latencyRecords, r.p50, r.p99, r.p999, r.max = br.latencyRecords, br.p50, br.p99, br.p999, br.max
		r.ackP50, r.ackP99, r.ackP999 = br.ackP50, br.ackP99, br.ackP999
	}
	return r, nil
}

// clusterFaultRun is one run of the catch-up and failover phases.
type clusterFaultRun struct {
	catchupBytes    int64
	catchup         time.Duration // first fetched byte to caught up
	catchupLimit    float64       // MB/s of the loopback limit measured just before, over as many bytes
	restartToISR    time.Duration
	failover        time.Duration // SIGKILL to writes acknowledged again
	failed          int64         // records whose produce failed for good
	stall, shutdown time.Duration // across the SIGTERM; the SIGTERM to the exit
	reassign        *reassignRun
}

// faultRun runs the catch-up and failover phases on the started cluster.
func (cfg *benchClusterConfig) faultRun(cl *benchCluster, prefix string, bar *progress) (clusterFaultRun, error) {
	var r clusterFaultRun
	if cfg.phases["catchup"] {
		if err := cfg.catchUp(cl, prefix+"-catchup", &r, bar); err != nil {
			return r, fmt.Errorf("follower catch-up: %w", err)
		}
	}
	if cfg.phases["reassign"] {
		if err := cfg.reassignPhase(cl, prefix, &r, bar); err != nil {
			return r, fmt.Errorf("reassignment: %w", err)
		}
	}
	if cfg.phases["failover"] {
		if err := cfg.failover(cl, prefix+"-failover", &r); err != nil {
			return r, fmt.Errorf("leader failover: %w", err)
		}
		if err := cfg.controlledShutdown(cl, prefix+"-shutdown", &r); err != nil {
			return r, fmt.Errorf("controlled shutdown: %w", err)
		}
	}
	return r, nil
}

// placement picks partition 0's replicas for a fault phase: rf brokers,
// the first two (leader, then the follower the phase may stop) never the
// controller, so that stopping them is not also a controller failover.
func (cfg *benchClusterConfig) placement(ctx context.Context, cl *benchCluster) ([]int32, error) {
	md, err := cl.metadata(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []int32
	for _, b := range cl.brokers {
		if b.id != md.ControllerID {
			out = append(out, b.id)
		}
	}
	out = append(out, md.ControllerID)
	if cfg.rf < 2 {
		return nil, errors.New("needs --replication-factor 2 or more")
	}
	return out[:cfg.rf], nil
}

// faultTarget is the acks=all target of the fault phases: no linger, and
// the client looks for the new leader every 100 ms.
func (cfg *benchClusterConfig) faultTarget(cl *benchCluster) benchTarget {
	all, _ := cfg.targets(cl.addrs(), cfg.rf)
	all.tune = []kgo.Opt{
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MaxBufferedRecords(1 << 20),
	}
	return all
}

// createFaultTopic creates topic on replicas and waits until they are all
// in the ISR.
func createFaultTopic(ctx context.Context, tgt benchTarget, topic string, replicas []int32) error {
	adm, err := kgo.NewClient(kgo.SeedBrokers(tgt.seeds...))
	if err != nil {
		return err
	}
	defer adm.Close()
	return createBenchTopic(ctx, adm, topic, tgt, replicas...)
}

// deleteTopic deletes topic through the controller.
func deleteTopic(ctx context.Context, seeds []string, topic string) error {
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer adm.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, adm)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("DeleteTopics %s: %w", topic, err)
		}
	}
	return nil
}

// catchUp stops a follower (SIGTERM), produces cfg.catchupMB MB with
// acks=1 while it is down, waits until the other replicas hold all of it,
// restarts the follower and times it: from its first fetched byte to its
// .log files reaching the leader's size (polled every 2 ms), and from the
// restart to its return to the ISR. Just before the restart it measures
// the loopback limit over as many bytes as the follower will fetch, then
// warms as much page cache in the follower's data dir (warmPages): the
// limit streams through a hot buffer, and without the warm-up the
// follower's appends met memory the VM had taken back after the previous
// run's topic was deleted (runs 2 and 3 of --phases catchup --runs 3 at
// 1029 and 709 MB/s beside a first run's 1600; with it 1436-1560).
func (cfg *benchClusterConfig) catchUp(cl *benchCluster, topic string, r *clusterFaultRun, bar *progress) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	replicas, err := cfg.placement(ctx, cl)
	if err != nil {
		return err
	}
	leader, follower := cl.broker(replicas[0]), cl.broker(replicas[1])
	tgt := cfg.faultTarget(cl)
	if err := createFaultTopic(ctx, tgt, topic, replicas); err != nil {
		return err
	}
	if err := follower.term(60 * time.Second); err != nil {
		return err
	}
	// The catch-up data goes in as the throughput phase's does (acks=1,
	// the tuned batching), to the brokers still up.
	_, one := cfg.targets(cl.addrs(), cfg.rf)
	d := cfg.drive
	d.records = max(cfg.catchupMB*1_000_000/int64(d.recordSize), 1)
	if _, err := benchProduce(d, one, topic, bar); err != nil {
		return fmt.Errorf("producing %d MB with broker %d down: %w", cfg.catchupMB, follower.id, err)
	}
	// Every other replica holds all of it before the follower returns, so
	// that it catches up alone.
	target := leader.partitionBytes(topic, 0)
	err = waitUntil(ctx, "the other followers caught up", func() bool {
		for _, id := range replicas[2:] {
			if cl.broker(id).partitionBytes(topic, 0) != target {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	have := follower.partitionBytes(topic, 0)
	// The limit the catch-up is compared with: as many bytes over one
	// loopback connection, just before (the machine's load moves from
	// second to second).
	if r.catchupLimit, err = loopbackLimit(target - have); err != nil {
		return fmt.Errorf("loopback limit: %w", err)
	}
	if err := warmPages(follower.dataDir, target-have); err != nil {
		return err
	}
	t0 := time.Now()
	if err := follower.start(); err != nil {
		return err
	}
	var first time.Time
	for {
		n := follower.partitionBytes(topic, 0)
		if first.IsZero() && n != have && n >= 0 {
			first = time.Now()
		}
		if n >= target {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("broker %d at %d of %d bytes: %w", follower.id, n, target, ctx.Err())
		}
		time.Sleep(2 * time.Millisecond)
	}
	done := time.Now()
	if err := cl.waitInSync(ctx, topic, replicas...); err != nil {
		return err
	}
	r.catchupBytes, r.catchup, r.restartToISR = target-have, done.Sub(first), time.Since(t0)
	return deleteTopic(ctx, cl.addrs(), topic)
}

// ackLog records, per record of a paced producer, when it was handed to
// the client and when its acknowledgement came (ns since base; 0: none).
type ackLog struct {
	base       time.Time
	sent, ackd []atomic.Int64
	nSent      atomic.Int64
	nAcked     atomic.Int64
	failed     atomic.Int64
	lastErr    atomic.Pointer[error]
}

// pacedProducer produces to partition 0 of topic at rate records/s from
// now until stop is closed, recording every acknowledgement in the ackLog.
func pacedProducer(ctx context.Context, tgt benchTarget, topic string, rate, size int, maxSeconds float64, stop <-chan struct{}) (*ackLog, <-chan error, error) {
	cl, err := kgo.NewClient(producerOpts(tgt)...)
	if err != nil {
		return nil, nil, err
	}
	n := int(float64(rate)*maxSeconds) + 1
	l := &ackLog{base: time.Now(), sent: make([]atomic.Int64, n), ackd: make([]atomic.Int64, n)}
	val := make([]byte, size)
	done := make(chan error, 1)
	go func() {
		defer cl.Close()
		stopped := func() bool {
			select {
			case <-stop:
				return true
			default:
				return false
			}
		}
		pace(l.base, time.Second/time.Duration(rate), int64(n), stopped, func(i int64) {
			l.sent[i].Store(int64(time.Since(l.base)))
			l.nSent.Store(i + 1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					l.failed.Add(1)
					l.lastErr.Store(&err)
					return
				}
				l.ackd[i].Store(int64(time.Since(l.base)))
				l.nAcked.Add(1)
			})
		})
		done <- cl.Flush(ctx)
	}()
	return l, done, nil
}

// acked counts the acknowledgements so far.
func (l *ackLog) acked() int { return int(l.nAcked.Load()) }

// firstAckOfSentAfter is the earliest acknowledgement (ns since base) of a
// record handed to the client at or after t; 0 when there is none yet.
func (l *ackLog) firstAckOfSentAfter(t time.Duration) time.Duration {
	var first int64
	for i := range l.nSent.Load() {
		s, a := l.sent[i].Load(), l.ackd[i].Load()
		if s >= int64(t) && a != 0 && (first == 0 || a < first) {
			first = a
		}
	}
	return time.Duration(first)
}

// longestWait is the longest any record waited for its acknowledgement
// (records still unacknowledged count until now).
func (l *ackLog) longestWait() time.Duration {
	var longest int64
	now := int64(time.Since(l.base))
	for i := range l.nSent.Load() {
		s, a := l.sent[i].Load(), l.ackd[i].Load()
		if a == 0 {
			a = now
		}
		longest = max(longest, a-s)
	}
	return time.Duration(longest)
}

// steady waits until the paced producer has n acknowledgements.
func (l *ackLog) steady(ctx context.Context, n int) error {
	return waitUntil(ctx, fmt.Sprintf("%d records acknowledged", n), func() bool { return l.acked() >= n })
}

// failover kills the leader of a new topic under a steady acks=all
// producer and times the return of acknowledgements; the killed broker is
// restarted and back in the ISR at the end.
func (cfg *benchClusterConfig) failover(cl *benchCluster, topic string, r *clusterFaultRun) error {
	limit := time.Duration(cfg.sessionTimeoutMs)*time.Millisecond + time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 2*limit)
	defer cancel()
	ld, err := cfg.startLedLoad(ctx, cl, topic, 2*limit.Seconds())
	if err != nil {
		return err
	}
	defer ld.abort()
	l := ld.l
	killAt := time.Since(l.base)
	ld.leader.kill()
	dead := time.Since(l.base)
	var resumed time.Duration
	err = waitUntil(ctx, "writes acknowledged after the leader's SIGKILL", func() bool {
		resumed = l.firstAckOfSentAfter(dead)
		return resumed != 0
	})
	if err != nil {
		return err
	}
	r.failover = resumed - killAt
	return ld.finish(ctx, cl, topic, cfg.failoverRate/4, r)
}

// controlledShutdown sends SIGTERM to the leader of a new topic under a
// steady acks=all producer and records the longest wait for an
// acknowledgement; the broker is restarted and back in the ISR at the end.
func (cfg *benchClusterConfig) controlledShutdown(cl *benchCluster, topic string, r *clusterFaultRun) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ld, err := cfg.startLedLoad(ctx, cl, topic, 240)
	if err != nil {
		return err
	}
	defer ld.abort()
	t0 := time.Now()
	if err := ld.leader.term(2 * time.Minute); err != nil {
		return err
	}
	r.shutdown = time.Since(t0)
	// Half a second of traffic after the exit, with the new leader.
	if err := ld.finish(ctx, cl, topic, cfg.failoverRate/2, r); err != nil {
		return err
	}
	r.stall = ld.l.longestWait()
	return nil
}

// ledLoad is a new topic's leader under a steady paced acks=all producer:
// the set-up and the end the failover and controlled-shutdown phases share.
type ledLoad struct {
	replicas []int32
	leader   *benchBroker
	l        *ackLog
	stop     chan struct{}
	flushed  <-chan error
	stopped  bool
}

// startLedLoad creates topic on cfg.placement's brokers and produces to
// it at cfg.failoverRate for at most seconds, returning once half a
// second of records is acknowledged.
func (cfg *benchClusterConfig) startLedLoad(ctx context.Context, cl *benchCluster, topic string, seconds float64) (*ledLoad, error) {
	replicas, err := cfg.placement(ctx, cl)
	if err != nil {
		return nil, err
	}
	tgt := cfg.faultTarget(cl)
	if err := createFaultTopic(ctx, tgt, topic, replicas); err != nil {
		return nil, err
	}
	ld := &ledLoad{replicas: replicas, leader: cl.broker(replicas[0]), stop: make(chan struct{})}
	ld.l, ld.flushed, err = pacedProducer(ctx, tgt, topic, cfg.failoverRate, cfg.drive.recordSize, seconds, ld.stop)
	if err != nil {
		return nil, err
	}
	if err := ld.l.steady(ctx, cfg.failoverRate/2); err != nil {
		ld.abort()
		return nil, err
	}
	return ld, nil
}

// abort stops the producer unless finish did.
func (ld *ledLoad) abort() {
	if !ld.stopped {
		ld.stopped = true
		close(ld.stop)
		<-ld.flushed
	}
}

// finish waits for more acknowledgements, stops and flushes the producer
// (counting its failed records into r; any failure is an error), restarts
// the leader and waits until every replica is back in the ISR.
func (ld *ledLoad) finish(ctx context.Context, cl *benchCluster, topic string, more int, r *clusterFaultRun) error {
	l := ld.l
	if err := l.steady(ctx, l.acked()+more); err != nil {
		return err
	}
	ld.stopped = true
	close(ld.stop)
	if err := <-ld.flushed; err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	r.failed += l.failed.Load()
	if e := l.lastErr.Load(); e != nil {
		return fmt.Errorf("%d records failed: %w", l.failed.Load(), *e)
	}
	if err := ld.leader.start(); err != nil {
		return err
	}
	return cl.waitInSync(ctx, topic, ld.replicas...)
}
