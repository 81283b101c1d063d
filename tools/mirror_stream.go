package tools

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mirrorStream is one member of the mirror's consumer group: it polls a
// batch, produces it to the target, waits for every acknowledgement, then
// commits the acknowledged offsets. The group does not rebalance between the
// poll and the commit (BlockRebalanceOnPoll), so the commit is made by the
// member that owns the partitions.
type mirrorStream struct {
	m  *mirror
	cl *kgo.Client
}

// Record states in a batch.
const (
	recPending int32 = iota
	recAcked
	recFailed
)

func newMirrorStream(m *mirror, id int) (*mirrorStream, error) {
	reset := kgo.NewOffset().AtStart()
	if !m.opts.earliest {
		reset = kgo.NewOffset().AtEnd()
	}
	owned := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		for t, parts := range ps {
			for _, p := range parts {
				m.setLag(t, p, 0)
			}
		}
	}
	gone := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.dropLag(ps) }
	opts := []kgo.Opt{
		kgo.SeedBrokers(m.opts.source...),
		kgo.ClientID(fmt.Sprintf("strata-mirror-%d", id)),
		kgo.ConsumerGroup(m.opts.group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(reset),
		kgo.OnPartitionsAssigned(owned),
		kgo.OnPartitionsRevoked(gone),
		kgo.OnPartitionsLost(gone),
	}
	cl, err := kgo.NewClient(append(opts, m.opts.consumerOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("mirror: source consumer: %w", err)
	}
	return &mirrorStream{m: m, cl: cl}, nil
}

// run polls and mirrors until ctx ends (nil) or the target refuses records
// for good (errMirrorFatal).
func (s *mirrorStream) run(ctx context.Context) error {
	fails := 0
	for ctx.Err() == nil {
		fs := s.cl.PollRecords(ctx, s.m.opts.maxPoll)
		if ctx.Err() != nil || fs.IsClientClosed() {
			// Records polled now are not produced, so not committed:
			// the next owner reads them again.
			s.cl.AllowRebalance()
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("mirror: fetching %s/%d from the source: %w", t, p, err)
			}
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 {
				s.m.setLag(p.Topic, p.Partition, p.HighWatermark-p.Records[n-1].Offset-1)
			}
		})
		recs := fs.Records()
		var err error
		if len(recs) > 0 {
			err = s.mirrorBatch(ctx, recs)
		}
		s.cl.AllowRebalance()
		if err != nil {
			return err
		}
		if ferr == nil || len(recs) > 0 {
			fails = 0
			continue
		}
		fails++
		wait := mirrorBackoff(fails)
		s.m.out.printf("%v (retrying in %v)\n", ferr, wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

// mirrorBatch produces recs to the target and commits, per source partition,
// the offsets up to the first record the target has not acknowledged. When
// ctx ends it waits up to the shutdown timeout for the acknowledgements.
func (s *mirrorStream) mirrorBatch(ctx context.Context, recs []*kgo.Record) error {
	pctx, cancelProduce := context.WithCancel(context.Background())
	defer cancelProduce()
	state := make([]atomic.Int32, len(recs))
	var (
		pending  sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for i, r := range recs {
		o := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		if s.m.opts.preserve {
			o.Partition = r.Partition
		}
		pending.Add(1)
		s.m.produced.Add(1)
		s.m.prod.Produce(pctx, o, func(_ *kgo.Record, err error) {
			defer pending.Done()
			if err == nil {
				state[i].Store(recAcked)
				s.m.mirrored.Add(1)
				return
			}
			state[i].Store(recFailed)
			errMu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("%s/%d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			errMu.Unlock()
		})
	}
	done := make(chan struct{})
	go func() {
		pending.Wait()
		close(done)
	}()
	complete := true
	select {
	case <-done:
	case <-ctx.Done():
		t := time.NewTimer(s.m.opts.shutdown)
		select {
		case <-done:
		case <-t.C:
			complete = false
			cancelProduce()
		}
		t.Stop()
	}
	unacked := s.commitAcked(recs, state)
	if !complete {
		s.m.out.printf("mirror: stopping with %d records of the batch not committed (the target did not acknowledge them within %v): mirrored again on restart\n",
			unacked, s.m.opts.shutdown)
		return nil
	}
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil && !errors.Is(firstErr, context.Canceled) {
		return fmt.Errorf("%w: the target refused a record: %v", errMirrorFatal, firstErr)
	}
	return nil
}

// commitAcked commits, per source partition, the offset after the longest
// acknowledged prefix of recs, and returns how many records stay uncommitted.
func (s *mirrorStream) commitAcked(recs []*kgo.Record, state []atomic.Int32) int {
	type tp struct {
		t string
		p int32
	}
	offsets := map[string]map[int32]kgo.EpochOffset{}
	blocked := map[tp]bool{}
	n := 0
	for i, r := range recs {
		k := tp{r.Topic, r.Partition}
		if blocked[k] {
			continue
		}
		if state[i].Load() != recAcked {
			blocked[k] = true
			continue
		}
		if offsets[r.Topic] == nil {
			offsets[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		n++
	}
	if n == 0 {
		return len(recs)
	}
	for attempt := 1; ; attempt++ {
		err := s.commit(offsets)
		if err == nil {
			s.m.committed.Add(int64(n))
			return len(recs) - n
		}
		if attempt == 3 {
			s.m.out.printf("mirror: committing offsets to the source group failed: %v (those records are mirrored again after a restart or rebalance)\n", err)
			return len(recs)
		}
		time.Sleep(mirrorBackoff(attempt))
	}
}

// commit commits offsets synchronously and returns the first error, of the
// request or of a partition.
func (s *mirrorStream) commit(offsets map[string]map[int32]kgo.EpochOffset) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cerr error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
					cerr = fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, e)
				}
			}
		}
	})
	return cerr
}
