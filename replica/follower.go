package replica

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// fetchPhase is where a follower's fetching stands (Kafka's
// PartitionFetchState, with truncation done on fetch, IBP >= 2.7).
type fetchPhase uint8

const (
	phaseIdle     fetchPhase = iota // not a follower
	phaseFetching                   // fetch from the log end offset
	phaseLatest                     // OFFSET_OUT_OF_RANGE: ask the leader's log end offset
	phaseEarliest                   // ... then its log start offset
	phaseFenced                     // FENCED_LEADER_EPOCH: wait for the next LeaderAndIsr
)

type fetchState struct {
	phase      fetchPhase
	delayUntil int64 // replica.fetch.backoff.ms after an error
	// inSync: the last answer brought the log to the leader's high
	// watermark (Kafka's PartitionFetchState.isReplicaInSync, lag <= 0);
	// such a replica is never throttled.
	inSync bool
}

// MakeFollower makes the partition follow s.Leader (Kafka's makeFollower and
// the become-follower truncation): the ISR is the leader's business now,
// produce waiters learn that leadership is lost. A log holding leader epochs
// keeps its tail: the leader tells, through Fetch's diverging epoch, where it
// diverges (KIP-101, KIP-279 via KIP-595's fetch). A log without any epoch
// (written before leader epochs existed) is cut to the high watermark, as
// Kafka does for such logs. It reports whether the leader or epoch changed.
func (p *Partition) MakeFollower(s PartitionState, now int64) (bool, error) {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	moved := p.role != RoleFollower || p.leader != s.Leader || p.leaderEpoch != s.LeaderEpoch
	if p.role == RoleLeader {
		p.gen++
	}
	p.controllerEpoch = s.ControllerEpoch
	p.setAssignment(s.Replicas)
	p.isr = isrState{}
	p.leaderEpoch = s.LeaderEpoch
	p.partitionEpoch = s.PartitionEpoch
	p.epochStart = -1
	p.role = RoleFollower
	p.leader = s.Leader
	p.failed = nil
	p.fetch = fetchState{phase: phaseFetching}
	if s.Leader < 0 {
		p.fetch.phase = phaseIdle // no leader to fetch from (an offline partition)
	}
	p.wake()
	p.logger.Info("became follower", "leader", s.Leader, "leader_epoch", s.LeaderEpoch, "leo", p.log.LogEndOffset(), "hw", p.hw)
	if _, ok := p.epochs.Latest(); !ok && p.log.LogEndOffset() > p.hw {
		p.logger.Warn("log has no leader epochs: truncating to the high watermark", "hw", p.hw)
		if err := p.truncateTo(p.hw); err != nil {
			return moved, err
		}
	}
	p.changed()
	return moved, nil
}

// truncateTo cuts the log at off (whole batches: it may end below off),
// then the epoch cache, and lowers the high watermark to the new log end.
// roleMu and mu held.
func (p *Partition) truncateTo(off int64) error {
	if leo := p.log.LogEndOffset(); off >= leo {
		// Nothing to cut from the log, but an entry at its end (this broker
		// led an epoch and appended nothing in it) would make every fetch
		// diverge again (Kafka 3's UnifiedLog.truncateTo drops it too).
		if err := p.epochs.TruncateFromEnd(leo); err != nil {
			return p.fail(err)
		}
		return nil
	}
	if off < p.hw {
		p.logger.Warn("truncating below the high watermark", "offset", off, "hw", p.hw)
	} else {
		p.logger.Info("truncating", "offset", off, "leo", p.log.LogEndOffset())
	}
	if err := p.log.TruncateTo(off); err != nil {
		return p.fail(err)
	}
	if p.cfg.OnTruncate != nil {
		p.cfg.OnTruncate(p.tp, p.log)
	}
	leo := p.log.LogEndOffset()
	if err := p.epochs.TruncateFromEnd(leo); err != nil {
		return p.fail(err)
	}
	if p.hw > leo {
		p.hw = max(leo, p.log.LogStartOffset())
		p.wake()
	}
	return nil
}

// backoff delays the next request for replica.fetch.backoff.ms (mu held).
func (p *Partition) backoff(now int64) {
	p.fetch.delayUntil = now + p.cfg.ReplicaFetchBackoffMs
	p.changed()
}

// fetchPart builds the partition's part of the next Fetch to its leader:
// fetch from the log end offset, naming the current leader epoch and the
// latest epoch in the log (Fetch v12's last_fetched_epoch).
func (p *Partition) fetchPart(now int64) (kmsg.FetchRequestTopicPartition, int32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fetchPartLocked(now)
}

// fetchPartLocked is fetchPart with mu held.
func (p *Partition) fetchPartLocked(now int64) (kmsg.FetchRequestTopicPartition, int32, bool) {
	part := kmsg.NewFetchRequestTopicPartition()
	if p.role != RoleFollower || p.failed != nil || p.fetch.phase != phaseFetching || now < p.fetch.delayUntil {
		return part, -1, false
	}
	part.Partition = p.tp.Partition
	part.CurrentLeaderEpoch = p.leaderEpoch
	part.FetchOffset = p.log.LogEndOffset()
	part.LastFetchedEpoch = p.epochs.LatestEpoch()
	part.LogStartOffset = p.log.LogStartOffset()
	part.PartitionMaxBytes = p.cfg.ReplicaFetchMaxBytes
	return part, p.leader, true
}

// followerThrottled tells whether the partition is to be left out of its
// next fetch by the follower throttle q (Kafka's shouldFollowerThrottle): a
// fetching follower not caught up, one of q's throttled partitions, while
// q's rate is above its bound.
func (p *Partition) followerThrottled(now int64, q *Quota) bool {
	if !q.IsThrottled(p.tp) {
		return false
	}
	p.mu.Lock()
	fetching := p.role == RoleFollower && p.fetch.phase == phaseFetching && !p.fetch.inSync
	p.mu.Unlock()
	return fetching && q.Exceeded(now)
}

// fetchMatches tells whether an answer to a request for (leader, epoch,
// offset) is still wanted (mu held): the partition still follows that
// leader in that epoch from that offset. Answers to older requests are
// dropped, as Kafka's fetcher drops them.
func (p *Partition) fetchMatches(leader, epoch int32, offset int64, phase fetchPhase) bool {
	return p.role == RoleFollower && p.failed == nil && p.leader == leader && p.leaderEpoch == epoch &&
		p.fetch.phase == phase && (phase != phaseFetching || offset == p.log.LogEndOffset())
}

// fetchFailed handles a fetch that got no answer (or a top-level error).
func (p *Partition) fetchFailed(leader int32, req *kmsg.FetchRequestTopicPartition, now int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fetchMatches(leader, req.CurrentLeaderEpoch, req.FetchOffset, phaseFetching) {
		p.backoff(now)
	}
}

// handleFetchData applies the leader's answer for this partition (Kafka's
// processFetchRequest and ReplicaFetcherThread.processPartitionData):
// a diverging epoch truncates and nothing else of the answer is applied;
// otherwise batches appended as they are, high watermark min(leader's, log
// end), log start offset raised to the leader's;
// OFFSET_OUT_OF_RANGE asks the leader's offsets, FENCED_LEADER_EPOCH waits
// for LeaderAndIsr, other errors back off. Bad batches are ErrInvalidRecords
// (nothing appended; retried after the backoff); a storage error stops the
// partition until the next LeaderAndIsr.
func (p *Partition) handleFetchData(leader int32, req *kmsg.FetchRequestTopicPartition, resp *kmsg.FetchResponseTopicPartition, now int64) error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fetchMatches(leader, req.CurrentLeaderEpoch, req.FetchOffset, phaseFetching) {
		return nil
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		p.logger.Info("fetch offset out of range on the leader", "offset", req.FetchOffset)
		p.fetch.phase = phaseLatest
		p.changed()
		return nil
	case kerr.FencedLeaderEpoch.Code:
		p.logger.Info("fenced by the leader: waiting for LeaderAndIsr", "leader_epoch", p.leaderEpoch)
		p.fetch.phase = phaseFenced
		return nil
	default:
		p.backoff(now)
		return nil
	}
	if d := resp.DivergingEpoch; d.EndOffset >= 0 {
		// Truncation only (Kafka's processFetchRequest): the high
		// watermark and log start in this answer are the leader's and say
		// nothing of the tail about to be cut; the next fetch brings them.
		return p.truncateOnDivergence(d.Epoch, d.EndOffset)
	}
	if len(resp.RecordBatches) > 0 {
		if err := p.appendAsFollower(resp.RecordBatches, resp.LogStartOffset); err != nil {
			if errors.Is(err, ErrInvalidRecords) {
				p.logger.Warn("invalid records from the leader", "err", err)
				p.backoff(now)
				return err
			}
			return p.fail(err)
		}
	}
	leo := p.log.LogEndOffset()
	if ls := min(resp.LogStartOffset, leo); ls > p.log.LogStartOffset() {
		if err := p.log.SetLogStartOffset(ls); err != nil {
			return p.fail(err)
		}
		if err := p.epochs.TruncateFromStart(ls); err != nil {
			return p.fail(err)
		}
	}
	p.fetch.inSync = leo >= resp.HighWatermark
	if hw := max(min(resp.HighWatermark, leo), p.log.LogStartOffset()); hw != p.hw {
		p.hw = hw
		p.wake()
	}
	return nil
}

// appendAsFollower appends the leader's batches as they are: v2 batches with
// good CRCs, the first continuing the log (a partial last batch, cut by the
// leader's max bytes, is left for the next fetch), and records the epochs of
// new leaders in the epoch cache first. A first batch that starts below the
// log end but reaches it is taken when nothing this log holds is in the
// leader's log any more: the log is empty (Kafka's
// UnexpectedAppendOffsetException case), or ends at or below the leader's
// log start leaderStart (DeleteRecords moved it past the point where this
// log diverged: the epochs that would have told are gone from the leader's
// cache, and without this the follower would refuse the batch for ever).
// The log is then cut to the batch. roleMu and mu held.
func (p *Partition) appendAsFollower(records []byte, leaderStart int64) error {
	leo := p.log.LogEndOffset()
	end := 0
	it := record.NewIterator(records, record.ScanOptions{VerifyCRC: true})
	for it.Next() {
		h := it.Header()
		if h.Magic != 2 {
			return fmt.Errorf("%w: entry at byte %d has magic %d", ErrInvalidRecords, it.Pos(), h.Magic)
		}
		if end == 0 && h.Offset < leo {
			if leo != p.log.LogStartOffset() && leo > leaderStart || h.LastOffset < leo {
				return fmt.Errorf("%w: batch at offset %d does not continue the log at %d", ErrInvalidRecords, h.Offset, leo)
			}
			// The leader's log start lies inside this batch and nothing
			// before it here is in the leader's log: start at the batch.
			if err := p.log.TruncateTo(h.Offset); err != nil {
				return err
			}
			if err := p.epochs.Clear(); err != nil {
				return err
			}
			leo = p.log.LogEndOffset()
		}
		end = int(it.NextPos())
	}
	if err := it.Err(); err != nil && !(errors.Is(err, record.ErrTruncated) && end > 0) {
		return fmt.Errorf("%w: %w", ErrInvalidRecords, err)
	}
	if end == 0 {
		return nil
	}
	it.Reset(records[:end], record.ScanOptions{})
	for it.Next() {
		if e := it.Batch().PartitionLeaderEpoch(); e >= 0 {
			if _, err := p.epochs.Assign(e, it.Header().Offset); err != nil {
				return err
			}
		}
	}
	l := p.log
	p.mu.Unlock()
	_, err := l.AppendAssigned(records[:end])
	p.mu.Lock()
	if err != nil {
		if e := p.epochs.TruncateFromEnd(l.LogEndOffset()); e != nil {
			p.logger.Error("undoing epoch entries of a failed append", "err", e)
		}
		if isInputError(err) {
			return fmt.Errorf("%w: %w", ErrInvalidRecords, err)
		}
		return err
	}
	return nil
}

// truncateOnDivergence cuts the log where it diverges from the leader's, the
// leader having answered that its log ends epoch at endOffset (Kafka's
// getOffsetTruncationState): if this log knows epoch, at the smaller of the
// two ends of it; if it knows only older epochs, at the end of the largest
// of them (the next fetch tells whether more must go, KIP-279); if it knows
// none, at the leader's end offset. Never past the log end. roleMu and mu
// held.
func (p *Partition) truncateOnDivergence(epoch int32, endOffset int64) error {
	leo := p.log.LogEndOffset()
	fe, fo := p.epochs.EndOffsetFor(epoch, leo)
	var target int64
	switch {
	case fo == UndefinedEpochOffset:
		target = min(endOffset, leo)
	case fe != epoch:
		target = min(fo, leo)
	default:
		target = min(fo, endOffset, leo)
	}
	p.logger.Info("log diverges from the leader", "leader_epoch_end", epoch, "leader_end_offset", endOffset, "truncate_to", target)
	return p.truncateTo(target)
}

// listOffsetsPart builds the partition's part of a ListOffsets to its leader
// while it recovers from OFFSET_OUT_OF_RANGE: first the leader's log end
// offset (timestamp -1), then its log start offset (-2).
func (p *Partition) listOffsetsPart(now int64) (kmsg.ListOffsetsRequestTopicPartition, int32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	part := kmsg.NewListOffsetsRequestTopicPartition()
	if p.role != RoleFollower || p.failed != nil || now < p.fetch.delayUntil {
		return part, -1, false
	}
	switch p.fetch.phase {
	case phaseLatest:
		part.Timestamp = -1
	case phaseEarliest:
		part.Timestamp = -2
	default:
		return part, -1, false
	}
	part.Partition = p.tp.Partition
	part.CurrentLeaderEpoch = p.leaderEpoch
	part.MaxNumOffsets = 1
	return part, p.leader, true
}

func phaseOf(timestamp int64) fetchPhase {
	if timestamp == -1 {
		return phaseLatest
	}
	return phaseEarliest
}

// handleListOffsets applies the leader's offsets (Kafka's
// fetchOffsetAndTruncate): a leader log end below this log's end (an unclean
// election) cuts this log there; otherwise a leader log start above this
// log's end starts this log over at it; then fetching resumes from the log
// end. resp is nil when the request got no answer.
func (p *Partition) handleListOffsets(leader int32, req *kmsg.ListOffsetsRequestTopicPartition, resp *kmsg.ListOffsetsResponseTopicPartition, now int64) error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fetchMatches(leader, req.CurrentLeaderEpoch, 0, phaseOf(req.Timestamp)) {
		return nil
	}
	switch {
	case resp == nil:
		p.backoff(now)
		return nil
	case resp.ErrorCode == kerr.FencedLeaderEpoch.Code:
		p.fetch.phase = phaseFenced
		return nil
	case resp.ErrorCode != 0:
		p.backoff(now)
		return nil
	}
	leo := p.log.LogEndOffset()
	if req.Timestamp == -1 {
		if resp.Offset < leo {
			p.logger.Warn("leader's log ends below ours: truncating to it", "leader_leo", resp.Offset, "leo", leo)
			if err := p.truncateTo(resp.Offset); err != nil {
				return err
			}
			p.fetch.phase = phaseFetching
		} else {
			p.fetch.phase = phaseEarliest
		}
		p.changed()
		return nil
	}
	if resp.Offset > leo {
		p.logger.Warn("log ends below the leader's log start: starting over there", "leader_log_start", resp.Offset, "leo", leo)
		if err := p.startOver(resp.Offset); err != nil {
			return err
		}
	}
	p.fetch.phase = phaseFetching
	p.changed()
	return nil
}

// startOver replaces the log by an empty one starting at off (Kafka's
// truncateFullyAndStartAt), through the Manager's log opener. roleMu and mu
// held.
func (p *Partition) startOver(off int64) error {
	if p.reopen == nil {
		return p.fail(fmt.Errorf("no log opener to start %s over at %d", p.tp, off))
	}
	if err := p.log.Close(); err != nil {
		p.logger.Warn("closing the log to start it over", "err", err)
	}
	l, err := p.reopen(off)
	if err != nil {
		return p.fail(err)
	}
	p.log = l
	if p.cfg.OnTruncate != nil {
		p.cfg.OnTruncate(p.tp, l)
	}
	if err := p.epochs.Clear(); err != nil {
		return p.fail(err)
	}
	p.hw = l.LogEndOffset()
	p.wake()
	return nil
}
