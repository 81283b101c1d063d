package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// mirror copies the matching topics of a source cluster to a target cluster:
// streams consumers in one group on the source, one producer (acks=all) on
// the target, and a loop that finds new source topics.
type mirror struct {
	opts    mirrorOptions
	out     *lockedWriter
	prod    *kgo.Client // target producer
	tgt     *kadm.Client
	srcCl   *kgo.Client // source metadata
	src     *kadm.Client
	streams []*mirrorStream

	topics map[string]bool // topics being mirrored (discovery loop only)

	produced    atomic.Int64 // records handed to the target producer
	mirrored    atomic.Int64 // records acknowledged by the target
	committed   atomic.Int64 // records whose offsets the source group holds
	targetDials atomic.Int64 // connection attempts to the target
	targetFails atomic.Int64 // failed connection attempts to the target

	lagMu sync.Mutex
	lag   map[string]map[int32]int64 // source topic/partition: high watermark - next offset
}

// lockedWriter serializes lines from the mirror's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

// targetHook counts connection attempts to the target.
type targetHook struct{ m *mirror }

func (h targetHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	h.m.targetDials.Add(1)
	if err != nil {
		h.m.targetFails.Add(1)
	}
}

func newMirror(opts mirrorOptions, stderr io.Writer) (*mirror, error) {
	m := &mirror{opts: opts, out: &lockedWriter{w: stderr}, topics: map[string]bool{}, lag: map[string]map[int32]int64{}}
	for _, w := range opts.warnings {
		m.out.printf("mirror: warning: %s\n", w)
	}
	popts := []kgo.Opt{
		kgo.SeedBrokers(opts.target...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Without idempotence one request in flight per broker keeps a
		// partition's records in order across retries.
		kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(1),
		// Room for every stream's window: Produce never blocks.
		kgo.MaxBufferedRecords(opts.producerBuffer()),
		// Kafka's producer default (compression.type=none; franz-go's
		// is snappy); compression.type in --producer.config overrides.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithHooks(targetHook{m}),
		// Polled records are produced at once: while one request is in
		// flight the next batch fills, and lingering would only hold back
		// a window's last partial batch, whose acknowledgement the commit
		// waits for (linger.ms in --producer.config overrides). Halved the
		// time to mirror 1M records of 100 B on this machine.
		kgo.ProducerLinger(0),
	}
	if opts.preserve {
		popts = append(popts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else {
		// Kafka's default partitioner: murmur2 of the key, so a key keeps
		// one partition and its order.
		popts = append(popts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	}
	var err error
	if m.prod, err = kgo.NewClient(append(popts, opts.producerOpts...)...); err != nil {
		return nil, fmt.Errorf("mirror: target client: %w", err)
	}
	m.tgt = kadm.NewClient(m.prod)
	if m.srcCl, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(opts.source...)}, opts.sourceSecurity...)...); err != nil {
		m.prod.Close()
		return nil, fmt.Errorf("mirror: source client: %w", err)
	}
	m.src = kadm.NewClient(m.srcCl)
	for i := range opts.streams {
		s, err := newMirrorStream(m, i)
		if err != nil {
			m.close()
			return nil, err
		}
		m.streams = append(m.streams, s)
	}
	return m, nil
}

func (m *mirror) close() {
	for _, s := range m.streams {
		s.cl.Close()
	}
	m.srcCl.Close()
	m.prod.Close()
}

// run mirrors until ctx ends (nil: a clean stop, everything acknowledged
// committed) or a stream fails for good (wrapped errMirrorFatal).
func (m *mirror) run(ctx context.Context) error {
	defer m.close()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(m.streams)+1)
	var wg sync.WaitGroup
	for _, s := range m.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.run(rctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := m.discover(rctx); err != nil {
			errs <- err
			cancel()
		}
	}()
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go m.progressLoop(stopProgress, progressDone)
	wg.Wait()
	close(stopProgress)
	<-progressDone
	var err error
	select {
	case err = <-errs:
	default:
	}
	if m.opts.progress > 0 {
		m.out.printf("mirror: stopped: %d records mirrored, %d committed\n", m.mirrored.Load(), m.committed.Load())
	}
	return err
}

// discover adds new matching source topics to the streams, creating each on
// the target first, every topicRefresh until ctx ends.
func (m *mirror) discover(ctx context.Context) error {
	fails := 0
	for {
		err := m.discoverOnce(ctx)
		if errors.Is(err, errMirrorFatal) {
			return err
		}
		wait := m.opts.topicRefresh
		if err != nil && ctx.Err() == nil {
			fails++
			wait = mirrorBackoff(fails)
			m.out.printf("mirror: %v (retrying in %v)\n", err, wait.Round(time.Millisecond))
		} else {
			fails = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// mirrorBackoff is the wait after the n-th consecutive failure: 250 ms
// doubling to 5 s.
func mirrorBackoff(n int) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	return min(d, 5*time.Second)
}

func (m *mirror) discoverOnce(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	details, err := m.src.ListTopics(lctx)
	if err != nil {
		return fmt.Errorf("mirror: listing the source's topics: %w", err)
	}
	var fresh []string
	for _, d := range details.Sorted() {
		if d.Err != nil || d.IsInternal || m.topics[d.Topic] || !m.opts.mirrors(d.Topic) {
			continue
		}
		if err := m.ensureTarget(ctx, d.Topic, len(d.Partitions)); err != nil {
			return err
		}
		m.topics[d.Topic] = true
		fresh = append(fresh, d.Topic)
	}
	if len(fresh) > 0 {
		for _, s := range m.streams {
			s.cl.AddConsumeTopics(fresh...)
		}
		if m.opts.progress > 0 {
			m.out.printf("mirror: mirroring %v\n", fresh)
		}
	}
	return nil
}

// ensureTarget creates topic on the target with the source's partition
// count when it is missing; under --preserve-partitions an existing target
// topic must have at least as many partitions.
func (m *mirror) ensureTarget(ctx context.Context, topic string, partitions int) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tds, err := m.tgt.ListTopics(cctx, topic)
	if err != nil {
		return fmt.Errorf("mirror: looking up topic %s on the target: %w", topic, err)
	}
	if td, ok := tds[topic]; ok && td.Err == nil {
		if m.opts.preserve && len(td.Partitions) < partitions {
			return fmt.Errorf("%w: --preserve-partitions: topic %s has %d partitions on the source but %d on the target",
				errMirrorFatal, topic, partitions, len(td.Partitions))
		}
		return nil
	}
	resp, err := m.tgt.CreateTopic(cctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("mirror: creating topic %s (%d partitions) on the target: %w", topic, partitions, err)
	}
	if err == nil && m.opts.progress > 0 {
		m.out.printf("mirror: created topic %s with %d partitions on the target\n", topic, partitions)
	}
	return nil
}

// progressLoop prints the progress line every opts.progress.
func (m *mirror) progressLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if m.opts.progress <= 0 {
		return
	}
	t := time.NewTicker(m.opts.progress)
	defer t.Stop()
	last, lastAt := m.mirrored.Load(), time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			n := m.mirrored.Load()
			rate := float64(n-last) / now.Sub(lastAt).Seconds()
			last, lastAt = n, now
			lag, parts, topics := m.lagTotals()
			m.out.printf("mirror: %d records mirrored (%.0f/s), %d committed, %d awaiting the target, lag %d, %d topics, %d partitions, %d failed target connections\n",
				n, rate, m.committed.Load(), m.produced.Load()-n, lag, topics, parts, m.targetFails.Load())
		}
	}
}

func (m *mirror) setLag(topic string, partition int32, lag int64) {
	m.lagMu.Lock()
	defer m.lagMu.Unlock()
	ps := m.lag[topic]
	if ps == nil {
		ps = map[int32]int64{}
		m.lag[topic] = ps
	}
	ps[partition] = max(lag, 0)
}

func (m *mirror) dropLag(assigned map[string][]int32) {
	m.lagMu.Lock()
	defer m.lagMu.Unlock()
	for t, ps := range assigned {
		for _, p := range ps {
			delete(m.lag[t], p)
		}
		if len(m.lag[t]) == 0 {
			delete(m.lag, t)
		}
	}
}

func (m *mirror) lagTotals() (lag int64, partitions, topics int) {
	m.lagMu.Lock()
	defer m.lagMu.Unlock()
	for _, ps := range m.lag {
		for _, l := range ps {
			lag += l
			partitions++
		}
	}
	return lag, partitions, len(m.lag)
}
