package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// MakeLeader makes this broker the partition's leader for s (Kafka's
// Partition.makeLeader): the epoch starts at the log end offset, which goes
// into the leader-epoch cache at once (KAFKA-7415) so followers holding
// entries of a later, unknown epoch still find where to truncate; followers
// restart their progress (unknown log end offset; caught up now when in the
// ISR); the high watermark may move if the ISR is the leader alone. It
// reports whether the broker was not leader before. The caller has checked
// that s.LeaderEpoch is newer than the current one and that this broker is
// s.Leader. A failed epoch-checkpoint write leaves the partition unchanged.
func (p *Partition) MakeLeader(s PartitionState, now int64) (bool, error) {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	leo := p.log.LogEndOffset()
	if _, err := p.epochs.Assign(s.LeaderEpoch, leo); err != nil {
		return false, err
	}
	wasLeader := p.role == RoleLeader
	p.controllerEpoch = s.ControllerEpoch
	p.setAssignment(s.Replicas)
	p.isr = isrState{committed: slices.Sorted(slices.Values(s.ISR))}
	p.leaderEpoch = s.LeaderEpoch
	p.partitionEpoch = s.PartitionEpoch
	p.epochStart = leo
	p.role = RoleLeader
	p.leader = p.cfg.BrokerID
	p.failed = nil
	p.fetch = fetchState{}
	for i := range p.remotes {
		r := &p.remotes[i]
		r.lastCaughtUpMs = 0
		if slices.Contains(p.isr.committed, r.id) {
			r.lastCaughtUpMs = now
		}
		r.lastFetchLeaderLEO, r.lastFetchMs = leo, now
		if !wasLeader {
			r.leo, r.logStart, r.lastFetchLeaderLEO, r.lastFetchMs = -1, -1, -1, 0
		}
	}
	p.logger.Info("became leader", "leader_epoch", s.LeaderEpoch, "start_offset", leo, "isr", p.isr.committed, "hw", p.hw)
	p.maybeIncrementHW(now)
	p.wake()
	return !wasLeader, nil
}

// CheckProduce refuses a produce before the append: ErrNotLeader when not
// the leader, ErrNotEnoughReplicas for acks=-1 with fewer than minISR
// members in the committed ISR (Kafka's NOT_ENOUGH_REPLICAS).
func (p *Partition) CheckProduce(acks int16, minISR int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkProduce(acks, minISR)
}

func (p *Partition) checkProduce(acks int16, minISR int) error {
	switch {
	case p.role != RoleLeader:
		return fmt.Errorf("%w: %s", ErrNotLeader, p.tp)
	case p.failed != nil:
		return p.failed
	case acks == -1 && len(p.isr.committed) < minISR:
		return fmt.Errorf("%w: ISR %v of %s is below min.insync.replicas %d", ErrNotEnoughReplicas, p.isr.committed, p.tp, minISR)
	}
	return nil
}

// AppendResult is what a leader append stored, and how to wait for it.
type AppendResult struct {
	Info segment.AppendInfo
	// Wait tells PollProduce what acks=-1 waits for (set its Deadline).
	Wait ProduceWait
}

// AppendAsLeader appends batches (validated v2 batches, as the broker's
// produce path leaves them) as the leader: CheckProduce's refusals first,
// then the leader epoch is stamped into every batch (partition_leader_epoch
// is not covered by the CRC), the log assigns offsets, and the high
// watermark moves when the ISR is the leader alone. It allocates nothing.
// For acks=-1 the caller then waits with PollProduce (or Await) on
// result.Wait.
func (p *Partition) AppendAsLeader(batches []byte, acks int16, minISR int, now int64) (AppendResult, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.Lock()
	if err := p.checkProduce(acks, minISR); err != nil {
		p.mu.Unlock()
		return AppendResult{}, err
	}
	epoch, gen, l := p.leaderEpoch, p.gen, p.log
	p.mu.Unlock()
	if err := stampLeaderEpoch(batches, epoch); err != nil {
		return AppendResult{}, err
	}
	info, err := l.Append(batches)
	if err != nil {
		if errors.Is(err, segment.ErrProducer) {
			return AppendResult{}, err
		}
		if isInputError(err) {
			return AppendResult{}, fmt.Errorf("%w: %w", ErrInvalidRecords, err)
		}
		p.mu.Lock()
		err = p.fail(err)
		p.mu.Unlock()
		return AppendResult{}, err
	}
	p.mu.Lock()
	p.maybeIncrementHW(now)
	p.mu.Unlock()
	return AppendResult{Info: info, Wait: ProduceWait{Required: info.LastOffset + 1, MinISR: minISR, gen: gen}}, nil
}

// stampLeaderEpoch writes epoch into every batch's header.
func stampLeaderEpoch(buf []byte, epoch int32) error {
	for p := 0; p < len(buf); {
		rem := buf[p:]
		if len(rem) < record.BatchHeaderSize {
			return fmt.Errorf("%w: %d bytes at %d are not a batch header", ErrInvalidRecords, len(rem), p)
		}
		total := int64(int32(binary.BigEndian.Uint32(rem[8:]))) + record.LogOverhead
		if total < record.BatchHeaderSize || total > int64(len(rem)) || rem[16] != 2 {
			return fmt.Errorf("%w: batch at byte %d is not a whole v2 batch", ErrInvalidRecords, p)
		}
		record.Batch(rem).SetLeaderEpoch(epoch)
		p += int(total)
	}
	return nil
}

// isInputError tells a bad append (the caller's bytes) from a storage error.
func isInputError(err error) bool {
	return errors.Is(err, segment.ErrBadAppend) || errors.Is(err, segment.ErrOffsetMismatch) || errors.Is(err, segment.ErrTooLarge)
}

// maybeIncrementHW moves the high watermark to the smallest log end offset
// over the leader (its log's high watermark: appends that returned, so after
// their fsync under flush.messages), the maximal ISR, and the followers
// caught up within replica.lag.time.max.ms (so a rejoining follower is not
// outrun; Kafka's maybeIncrementLeaderHW). It never moves back. mu held.
func (p *Partition) maybeIncrementHW(now int64) bool {
	if p.role != RoleLeader {
		return false
	}
	hw := p.log.HighWatermark()
	for i := range p.remotes {
		r := &p.remotes[i]
		if r.leo < hw && (p.isr.inMaximal(r.id) || now-r.lastCaughtUpMs <= p.cfg.ReplicaLagTimeMaxMs) {
			hw = r.leo
		}
	}
	if hw <= p.hw {
		return false
	}
	p.hw = hw
	p.wake()
	return true
}

// FollowerFetch is one partition of a follower's Fetch.
type FollowerFetch struct {
	ReplicaID          int32
	FetchOffset        int64
	LogStartOffset     int64 // the follower's
	CurrentLeaderEpoch int32 // -1: not checked
	LastFetchedEpoch   int32 // -1: the follower's log has no epochs
	MaxBytes           int64
}

// FollowerFetchResult is the leader's answer to a FollowerFetch.
type FollowerFetchResult struct {
	// Err is nil or an error mapping to the partition's error code
	// (ErrorCode): ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch, ErrNotLeader,
	// ErrOffsetOutOfRange, a storage error.
	Err error
	// DivergingEpoch and DivergingEndOffset, when DivergingEndOffset >= 0:
	// the follower's log diverges from the leader's after this epoch's end
	// (Fetch v12's diverging_epoch); no records then.
	DivergingEpoch     int32
	DivergingEndOffset int64
	HighWatermark      int64
	LogStartOffset     int64
	LogEndOffset       int64
	// Records is the region to send (whole batches from the one holding the
	// fetch offset, up to the log end; the last one may be cut by MaxBytes).
	// The caller must Release it.
	Records segment.Region
}

// FetchFromFollower serves a follower's fetch (Kafka's Partition.readRecords
// and updateFollowerFetchState): KIP-320's epoch check, then (with a last
// fetched epoch) the divergence check against the leader-epoch cache, the
// read up to the log end offset, and only then the follower's progress: its
// log end offset, its last caught-up time (now if it fetched from the log
// end; the time of its previous fetch if it reached the log end offset of
// then), an ISR expansion it earns, and the high watermark it moves.
func (p *Partition) FetchFromFollower(f FollowerFetch, now int64) FollowerFetchResult {
	res := FollowerFetchResult{DivergingEpoch: -1, DivergingEndOffset: -1, HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1}
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.Lock()
	if res.Err = p.checkLeaderEpoch(f.CurrentLeaderEpoch); res.Err == nil {
		switch {
		case p.role != RoleLeader:
			res.Err = fmt.Errorf("%w: %s", ErrNotLeader, p.tp)
		case p.failed != nil:
			res.Err = p.failed
		case p.remote(f.ReplicaID) == nil:
			res.Err = fmt.Errorf("%w: broker %d is not a follower of %s (replicas %v)", ErrNotLeader, f.ReplicaID, p.tp, p.replicas)
		}
	}
	if res.Err != nil {
		p.mu.Unlock()
		return res
	}
	l := p.log
	res.LogStartOffset, res.LogEndOffset = l.LogStartOffset(), l.LogEndOffset()
	res.HighWatermark = min(p.hw, l.HighWatermark())
	if f.LastFetchedEpoch >= 0 {
		e, end := p.epochs.EndOffsetFor(f.LastFetchedEpoch, res.LogEndOffset)
		switch {
		case end == UndefinedEpochOffset:
			res.Err = fmt.Errorf("%w: cannot place last fetched epoch %d of broker %d on %s", ErrOffsetOutOfRange, f.LastFetchedEpoch, f.ReplicaID, p.tp)
		case f.FetchOffset < res.LogStartOffset:
			res.Err = fmt.Errorf("%w: fetch offset %d below the log start %d of %s", ErrOffsetOutOfRange, f.FetchOffset, res.LogStartOffset, p.tp)
		case e < f.LastFetchedEpoch || end < f.FetchOffset:
			res.DivergingEpoch, res.DivergingEndOffset = e, end
		}
		if res.Err != nil || res.DivergingEndOffset >= 0 {
			p.mu.Unlock()
			return res
		}
	}
	p.mu.Unlock()
	r, err := l.Read(f.FetchOffset, f.MaxBytes)
	if err != nil {
		if errors.Is(err, segment.ErrOffsetOutOfRange) {
			res.Err = fmt.Errorf("%w: %w", ErrOffsetOutOfRange, err)
		} else {
			res.Err = fmt.Errorf("%w: %w", ErrStorage, err)
		}
		return res
	}
	res.Records = r
	p.mu.Lock()
	if rr := p.remote(f.ReplicaID); rr != nil && p.role == RoleLeader {
		if f.FetchOffset >= res.LogEndOffset {
			rr.lastCaughtUpMs = max(rr.lastCaughtUpMs, now)
		} else if f.FetchOffset >= rr.lastFetchLeaderLEO {
			rr.lastCaughtUpMs = max(rr.lastCaughtUpMs, rr.lastFetchMs)
		}
		rr.logStart, rr.leo = f.LogStartOffset, f.FetchOffset
		rr.lastFetchLeaderLEO, rr.lastFetchMs = res.LogEndOffset, now
		p.maybeExpandISR(rr)
		p.maybeIncrementHW(now)
	}
	res.HighWatermark = min(p.hw, l.HighWatermark())
	p.mu.Unlock()
	return res
}

// maybeExpandISR proposes adding a follower outside the ISR once its log end
// offset reaches the high watermark and the start of the current leader
// epoch (KAFKA-7128: otherwise it could lead without committed records
// between them), if Config.IsrEligible counts it (KIP-841). mu held.
func (p *Partition) maybeExpandISR(r *remoteReplica) {
	if p.isr.pending != noChange || slices.Contains(p.isr.committed, r.id) {
		return
	}
	if p.cfg.IsrEligible != nil && !p.cfg.IsrEligible(r.id) {
		return
	}
	if r.leo >= p.hw && r.leo >= p.epochStart {
		p.propose(expanding, append(slices.Clone(p.isr.committed), r.id))
	}
}

// MaybeShrinkISR proposes removing the ISR members that have not caught up
// with the leader's log end offset within replica.lag.time.max.ms (Kafka's
// maybeShrinkIsr, run every half of the lag time). The leader never removes
// itself. A removal counts only once the controller accepted it.
func (p *Partition) MaybeShrinkISR(now int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader || p.failed != nil || p.isr.pending != noChange {
		return
	}
	leo := p.log.LogEndOffset()
	var out []int32
	for _, id := range p.isr.committed {
		if id == p.cfg.BrokerID {
			continue
		}
		r := p.remote(id)
		if r == nil || r.leo != leo && now-r.lastCaughtUpMs > p.cfg.ReplicaLagTimeMaxMs {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(p.isr.committed), func(id int32) bool { return slices.Contains(out, id) })
	p.logger.Info("followers out of sync", "out", out, "hw", p.hw, "leo", leo)
	p.propose(shrinking, isr)
}

// LastOffsetForLeaderEpoch answers OffsetForLeaderEpoch (key 23): the
// largest epoch <= epoch the log knows and where it ends (EpochCache's
// EndOffsetFor). requireLeader is true for followers and for requests naming
// a current leader epoch.
func (p *Partition) LastOffsetForLeaderEpoch(currentLeaderEpoch, epoch int32, requireLeader bool) (int32, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLeaderEpoch(currentLeaderEpoch); err != nil {
		return UndefinedEpoch, UndefinedEpochOffset, err
	}
	if requireLeader && p.role != RoleLeader || p.role == RoleNone {
		return UndefinedEpoch, UndefinedEpochOffset, fmt.Errorf("%w: %s", ErrNotLeader, p.tp)
	}
	e, o := p.epochs.EndOffsetFor(epoch, p.log.LogEndOffset())
	return e, o, nil
}

// OffsetForReplica answers a follower's ListOffsets: timestamp -1 is the log
// end offset, -2 the log start offset (Kafka serves replicas from the log
// end, not the high watermark).
func (p *Partition) OffsetForReplica(currentLeaderEpoch int32, timestamp int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLeaderEpoch(currentLeaderEpoch); err != nil {
		return -1, err
	}
	if p.role != RoleLeader {
		return -1, fmt.Errorf("%w: %s", ErrNotLeader, p.tp)
	}
	switch timestamp {
	case -1:
		return p.log.LogEndOffset(), nil
	case -2:
		return p.log.LogStartOffset(), nil
	}
	return -1, fmt.Errorf("%w: a replica lists offsets with timestamp -1 or -2, not %d", ErrInvalidRequest, timestamp)
}

// DeleteRecords moves the log start offset up to offset on the leader
// (Kafka's deleteRecordsOnLeader, DeleteRecords key 21): -1 means the high
// watermark; past the high watermark is ErrOffsetOutOfRange. Followers take
// the new log start from their next fetch. It returns the new log start.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader {
		return -1, fmt.Errorf("%w: %s", ErrNotLeader, p.tp)
	}
	hw := min(p.hw, p.log.HighWatermark())
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, fmt.Errorf("%w: delete records up to %d, high watermark %d", ErrOffsetOutOfRange, offset, hw)
	}
	if offset > p.log.LogStartOffset() {
		if err := p.log.SetLogStartOffset(offset); err != nil {
			return -1, p.fail(err)
		}
		if err := p.epochs.TruncateFromStart(offset); err != nil {
			return -1, p.fail(err)
		}
	}
	return p.log.LogStartOffset(), nil
}
