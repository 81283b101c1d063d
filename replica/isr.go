package replica

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// pendingKind is the ISR change a leader has proposed to the controller.
type pendingKind uint8

const (
	noChange pendingKind = iota
	expanding
	shrinking
)

// isrState is the leader's ISR (Kafka's IsrState): the committed set, and at
// most one proposed change in flight. While an expansion is pending the new
// member already counts (the maximal ISR); while a shrink is pending the
// removed members still count, so the high watermark never relies on a set
// the controller has not accepted.
type isrState struct {
	committed []int32
	pending   pendingKind
	proposed  []int32 // the ISR sent with AlterPartition
	id        uint64  // names the proposal, so a late answer to an older one is ignored
	sent      bool    // handed to the Manager and not yet answered
	gaveUp    bool    // answered with an error Kafka does not retry: wait for LeaderAndIsr
}

func (s *isrState) maximal() []int32 {
	if s.pending == expanding {
		return s.proposed
	}
	return s.committed
}

func (s *isrState) inMaximal(id int32) bool { return slices.Contains(s.maximal(), id) }

// AlterItem is one partition's ISR change for an AlterPartition request.
type AlterItem struct {
	TP             TopicPartition
	LeaderEpoch    int32
	NewISR         []int32
	PartitionEpoch int32
	id             uint64
}

// AlterResult is one partition's part of an AlterPartition response.
type AlterResult struct {
	ErrorCode      int16
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

// propose records an ISR change (mu held).
func (p *Partition) propose(kind pendingKind, isr []int32) {
	slices.Sort(isr)
	p.isr.pending = kind
	p.isr.proposed = isr
	p.proposals++
	p.isr.id = p.proposals
	p.isr.sent = false
	p.isr.gaveUp = false
	p.logger.Info("proposing ISR change", "from", p.isr.committed, "to", isr, "leader_epoch", p.leaderEpoch, "partition_epoch", p.partitionEpoch)
	p.changed()
}

// takeAlter hands the pending ISR change to the AlterPartition sender once.
func (p *Partition) takeAlter() (AlterItem, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader || p.isr.pending == noChange || p.isr.sent || p.isr.gaveUp {
		return AlterItem{}, false
	}
	p.isr.sent = true
	return AlterItem{
		TP:             p.tp,
		LeaderEpoch:    p.leaderEpoch,
		NewISR:         slices.Clone(p.isr.proposed),
		PartitionEpoch: p.partitionEpoch,
		id:             p.isr.id,
	}, true
}

// alterUnsent puts a change whose request failed (no answer, a top-level
// error, or a response leaving the partition out) back in line.
func (p *Partition) alterUnsent(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isr.pending != noChange && p.isr.id == id {
		p.isr.sent = false
	}
}

// alterResult applies the controller's answer to proposal id, as Kafka 2.8's
// Partition.handleAlterIsrResponse does: an answer to a proposal that is no
// longer pending (a LeaderAndIsr came meanwhile) is ignored;
// UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION
// give up (the proposal stays pending, so no other change is made, until the
// next LeaderAndIsr); INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED drop the
// proposal (Kafka 3: the controller will not take it, however often it is
// sent); other errors send it again; success for another leader
// epoch or an older partition epoch is ignored; otherwise the answer's ISR
// and partition epoch become the committed state and the high watermark is
// recomputed.
func (p *Partition) alterResult(id uint64, r AlterResult, now int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader || p.isr.pending == noChange || p.isr.id != id {
		return
	}
	switch r.ErrorCode {
	case 0:
	case kerr.UnknownTopicOrPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.InvalidUpdateVersion.Code:
		p.logger.Info("ISR change refused, waiting for LeaderAndIsr", "proposed", p.isr.proposed, "code", r.ErrorCode)
		p.isr.gaveUp = true
		return
	case kerr.IneligibleReplica.Code, kerr.OperationNotAttempted.Code:
		// A member the controller does not count as online (Kafka 3's
		// KIP-841): the change is dropped, the committed ISR stands, and a
		// later fetch or check may propose again.
		p.logger.Info("ISR change refused: ineligible replica", "proposed", p.isr.proposed, "code", r.ErrorCode)
		p.isr = isrState{committed: p.isr.committed}
		p.changed()
		return
	default:
		p.logger.Warn("ISR change failed, retrying", "proposed", p.isr.proposed, "code", r.ErrorCode)
		p.isr.sent = false
		p.changed()
		return
	}
	if r.LeaderEpoch != p.leaderEpoch || r.PartitionEpoch < p.partitionEpoch {
		p.logger.Info("ignoring ISR change for another state", "leader_epoch", r.LeaderEpoch, "partition_epoch", r.PartitionEpoch)
		p.isr.gaveUp = true
		return
	}
	before := p.isr.committed
	p.isr = isrState{committed: slices.Sorted(slices.Values(r.ISR))}
	if p.cfg.OnISRChange != nil {
		p.cfg.OnISRChange(before, p.isr.committed)
	}
	p.partitionEpoch = r.PartitionEpoch
	p.logger.Info("ISR changed", "isr", p.isr.committed, "partition_epoch", p.partitionEpoch)
	p.maybeIncrementHW(now)
	p.changed()
}
