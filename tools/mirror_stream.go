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

// mirrorStream is one member of the mirror's consumer group: it polls
// batches and produces them to the target as they come (a window of up to
// mirrorWindowPolls polls), then waits for every acknowledgement and commits
// the acknowledged offsets. The group does not rebalance between the first
// poll of a window and its commit (BlockRebalanceOnPoll), so the commit is
// made by the member that owns the partitions.
type mirrorStream struct {
	m  *mirror
	cl *kgo.Client

	// Stream goroutine only.
	stopBy     time.Time // set at the first wait after the stop: the shutdown timeout's end
	incomplete bool      // a window was closed without all its acknowledgements
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
		kgo.FetchMaxPartitionBytes(4 << 20),
	}
	cl, err := kgo.NewClient(append(opts, m.opts.consumerOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("mirror: source consumer: %w", err)
	}
	return &mirrorStream{m: m, cl: cl}, nil
}

// The window of a stream: records of consecutive polls are produced as they
// come, without waiting for the previous poll's acknowledgements, and the
// window is closed — every acknowledgement awaited, the acknowledged prefix
// committed, rebalances allowed — after mirrorWindowPolls polls,
// mirrorWindowTime or mirrorWindowBytes of keys and values, or as soon as a
// poll brings nothing. Waiting for each poll's acknowledgements and
// committing it before the next poll put two round trips (acks=all,
// OffsetCommit) on every 5,000 records: the target and the source each sat
// idle half the time.
//
// A poll takes every record the client has buffered (unless
// max.poll.records says otherwise): franz-go sends a broker its next Fetch
// only once the records of the last one are all taken, so taking them at
// once overlaps that fetch with their produce. 5,000 records per poll left
// the stream waiting on a fetch after every 4 MB.
const (
	mirrorWindowPolls = 8
	mirrorWindowTime  = 200 * time.Millisecond
	mirrorWindowBytes = 32 << 20
	mirrorDrainEvery  = time.Second
)

// mirrorWindow is the polls produced since the last commit, in poll order.
type mirrorWindow struct {
	start    time.Time
	polls    []*mirrorPoll
	records  int
	bytes    int // keys and values
	pending  sync.WaitGroup
	errMu    sync.Mutex
	firstErr error
	cancel   context.CancelFunc // cancels the produce context of the window
	pctx     context.Context
}

// mirrorPoll is one poll's records, produced to the target as they are:
// the producer overwrites a record's partition, offset and leader epoch
// when it acknowledges it, so the source's are kept beside it, with each
// record's state (recPending, recAcked, recFailed).
type mirrorPoll struct {
	recs  []*kgo.Record
	src   []mirrorSource
	state []atomic.Int32
}

// mirrorSource is where a polled record came from.
type mirrorSource struct {
	partition, epoch int32
	offset           int64
}

// run polls and mirrors until ctx ends (nil) or the target refuses records
// for good (errMirrorFatal).
//
// A full window is sealed, not closed: its acknowledgements are awaited and
// its offsets committed when the next window fills, so the target works
// through the sealed window's last batches while the next window's records
// are polled and produced (waiting for them at once idled the source for
// about a sixth of the time). Windows are committed in order. Every
// mirrorDrainEvery, and whenever a poll brings nothing, both windows are
// closed and rebalances allowed.
func (s *mirrorStream) run(ctx context.Context) error {
	fails := 0
	var sealed *mirrorWindow // produced, its commit not yet made
	w := s.newWindow()
	defer func() {
		w.cancel()
		if sealed != nil {
			sealed.cancel()
		}
	}()
	drained := time.Now()
	for ctx.Err() == nil {
		// While records wait for their acknowledgements, a poll waits at
		// most until the window closes.
		pctx, cancel := ctx, context.CancelFunc(func() {})
		switch {
		case w.records > 0:
			pctx, cancel = context.WithDeadline(ctx, w.start.Add(mirrorWindowTime))
		case sealed != nil:
			pctx, cancel = context.WithTimeout(ctx, mirrorWindowTime)
		}
		fs := s.cl.PollRecords(pctx, s.m.opts.maxPoll)
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			// Records polled now are not produced, so not committed:
			// the next owner reads them again.
			break
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("mirror: fetching %s/%d from the source: %w", t, p, err)
			}
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 {
				s.m.setLag(p.Topic, p.Partition, p.HighWatermark-p.Records[n-1].Offset-1)
			}
		})
		recs := fs.Records()
		if len(recs) > 0 {
			s.produce(w, recs)
		}
		if len(recs) == 0 || len(w.polls) >= mirrorWindowPolls || w.bytes >= mirrorWindowBytes || time.Since(w.start) >= mirrorWindowTime {
			if err := s.closeWindow(ctx, sealed); err != nil {
				return err
			}
			sealed, w = w, s.newWindow()
			if len(recs) == 0 || time.Since(drained) >= mirrorDrainEvery {
				err := s.closeWindow(ctx, sealed)
				sealed, drained = nil, time.Now()
				s.cl.AllowRebalance()
				if err != nil {
					return err
				}
			}
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
	err := s.closeWindow(ctx, sealed)
	if err == nil {
		err = s.closeWindow(ctx, w)
	}
	s.cl.AllowRebalance()
	return err
}

func (s *mirrorStream) newWindow() *mirrorWindow {
	w := &mirrorWindow{}
	w.pctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// produce hands recs to the target's producer as part of window w. The
// polled records themselves are produced (key, value, headers and
// timestamp kept; the partition too under --preserve-partitions): copying
// them into new records cost more than the rest of the mirror's own work.
func (s *mirrorStream) produce(w *mirrorWindow, recs []*kgo.Record) {
	if len(w.polls) == 0 {
		w.start = time.Now()
	}
	p := &mirrorPoll{recs: recs, src: make([]mirrorSource, len(recs)), state: make([]atomic.Int32, len(recs))}
	w.polls = append(w.polls, p)
	w.records += len(recs)
	w.pending.Add(len(recs))
	s.m.produced.Add(int64(len(recs)))
	for i, r := range recs {
		w.bytes += len(r.Key) + len(r.Value)
		p.src[i] = mirrorSource{partition: r.Partition, epoch: r.LeaderEpoch, offset: r.Offset}
		r.Context = w.pctx
		s.m.prod.Produce(w.pctx, r, func(_ *kgo.Record, err error) { s.acked(w, p, i, err) })
	}
}

// acked is the target's answer for record i of poll p.
func (s *mirrorStream) acked(w *mirrorWindow, p *mirrorPoll, i int, err error) {
	defer w.pending.Done()
	if err == nil {
		p.state[i].Store(recAcked)
		s.m.mirrored.Add(1)
		return
	}
	p.state[i].Store(recFailed)
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.firstErr == nil {
		src := p.src[i]
		w.firstErr = fmt.Errorf("%s/%d offset %d: %w", p.recs[i].Topic, src.partition, src.offset, err)
	}
}

// closeWindow waits for the acknowledgement of every record of w, then
// commits, per source partition, the offsets up to the first record the
// target has not acknowledged. When ctx has ended it waits until the
// shutdown timeout (counted from the first such wait) for the
// acknowledgements; a window left incomplete ends the stream's commits, as
// a later window's offsets would pass over its unacknowledged records.
func (s *mirrorStream) closeWindow(ctx context.Context, w *mirrorWindow) error {
	if w == nil {
		return nil
	}
	defer w.cancel()
	if w.records == 0 {
		return nil
	}
	if s.incomplete {
		s.m.out.printf("mirror: stopping with %d records of the next window not committed: mirrored again on restart\n", w.records)
		return nil
	}
	done := make(chan struct{})
	go func() {
		w.pending.Wait()
		close(done)
	}()
	complete := true
	select {
	case <-done:
	case <-ctx.Done():
		if s.stopBy.IsZero() {
			s.stopBy = time.Now().Add(s.m.opts.shutdown)
		}
		t := time.NewTimer(time.Until(s.stopBy))
		select {
		case <-done:
		case <-t.C:
			complete = false
			w.cancel()
		}
		t.Stop()
	}
	unacked := s.commitAcked(w)
	if !complete {
		s.incomplete = true
		s.m.out.printf("mirror: stopping with %d records of the window not committed (the target did not acknowledge them within %v): mirrored again on restart\n",
			unacked, s.m.opts.shutdown)
		return nil
	}
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.firstErr != nil && !errors.Is(w.firstErr, context.Canceled) {
		return fmt.Errorf("%w: the target refused a record: %v", errMirrorFatal, w.firstErr)
	}
	return nil
}

// commitAcked commits, per source partition, the offset after the longest
// acknowledged prefix of w's records, and returns how many records stay
// uncommitted.
func (s *mirrorStream) commitAcked(w *mirrorWindow) int {
	type tp struct {
		t string
		p int32
	}
	offsets := map[string]map[int32]kgo.EpochOffset{}
	blocked := map[tp]bool{}
	n := 0
	for _, p := range w.polls {
		for i, r := range p.recs {
			src := p.src[i]
			k := tp{r.Topic, src.partition}
			if blocked[k] {
				continue
			}
			if p.state[i].Load() != recAcked {
				blocked[k] = true
				continue
			}
			if offsets[r.Topic] == nil {
				offsets[r.Topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[r.Topic][src.partition] = kgo.EpochOffset{Epoch: src.epoch, Offset: src.offset + 1}
			n++
		}
	}
	if n == 0 {
		return w.records
	}
	for attempt := 1; ; attempt++ {
		err := s.commit(offsets)
		if err == nil {
			s.m.committed.Add(int64(n))
			return w.records - n
		}
		if attempt == 3 {
			s.m.out.printf("mirror: committing offsets to the source group failed: %v (those records are mirrored again after a restart or rebalance)\n", err)
			return w.records
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
