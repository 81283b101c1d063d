package server

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sync handles a SyncGroup (g.mu held).
func (g *group) sync(r *kmsg.SyncGroupRequest) (syncResult, <-chan syncResult) {
	fail := func(code int16) (syncResult, <-chan syncResult) { return syncResult{code: code}, nil }
	m := g.members[r.MemberID]
	switch {
	case m == nil:
		return fail(kerr.UnknownMemberID.Code)
	case g.fenced(r.MemberID, r.InstanceID):
		return fail(kerr.FencedInstanceID.Code)
	case r.Generation != g.generation:
		return fail(kerr.IllegalGeneration.Code)
	case r.ProtocolType != nil && *r.ProtocolType != g.protocolType,
		r.Protocol != nil && *r.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	switch g.state {
	case groupPreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case groupStable:
		g.touch(m)
		g.synced(m)
		g.syncAnswered()
		return g.syncOK(m), nil
	case groupCompletingRebalance:
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
	g.touch(m)
	g.synced(m)
	if m.syncCh != nil {
		m.syncCh <- syncResult{code: kerr.UnknownMemberID.Code}
	}
	m.syncCh = make(chan syncResult, 1)
	ch := m.syncCh
	if m.id == g.leader {
		for _, o := range g.members {
			o.assignment = []byte{}
		}
		for _, a := range r.GroupAssignment {
			if o := g.members[a.MemberID]; o != nil {
				o.assignment = bytes.Clone(a.MemberAssignment) // not the reused request frame
			}
		}
		code := g.co.storeGroup(g)
		if code != 0 {
			for _, o := range g.members {
				o.assignment = nil
			}
			g.prepareRebalance("storing the group failed")
		} else {
			g.setState(groupStable)
		}
		for _, o := range g.members {
			if o.syncCh == nil {
				continue
			}
			res := syncResult{code: code}
			if code == 0 {
				res = g.syncOK(o)
				g.syncAnswered()
			}
			o.syncCh <- res
			o.syncCh = nil
		}
	}
	return syncResult{}, ch
}

// Pending syncs (Kafka's pendingSyncMembers). When the join phase
// completes, every member owes a SyncGroup within the group's rebalance
// timeout; the timer removes those that did not send one and rebalances.
// Without it, a leader that keeps heartbeating but never sends its
// SyncGroup would leave the followers' SyncGroups parked forever (a parked
// member's session does not expire).

// armSyncTimer marks every member as owing a SyncGroup and arms the timer.
func (g *group) armSyncTimer(d time.Duration) {
	for _, m := range g.members {
		m.pendingSync = true
	}
	g.stopSyncTimer()
	seq := g.syncSeq
	g.syncTimer = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.syncSeq == seq && !g.stopped {
			g.expirePendingSyncs()
		}
	})
}

// stopSyncTimer cancels the pending-sync timer.
func (g *group) stopSyncTimer() {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	g.syncSeq++
}

// synced notes m's SyncGroup; the timer stops once nobody owes one.
func (g *group) synced(m *member) {
	m.pendingSync = false
	for _, o := range g.members {
		if o.pendingSync {
			return
		}
	}
	g.stopSyncTimer()
}

// expirePendingSyncs removes the members that owe a SyncGroup when the
// rebalance timeout ran out, and rebalances the others.
func (g *group) expirePendingSyncs() {
	if g.state != groupCompletingRebalance && g.state != groupStable {
		return
	}
	var removed []string
	for _, m := range g.members {
		if m.pendingSync {
			removed = append(removed, m.id)
			g.dropMember(m, kerr.UnknownMemberID.Code)
		}
	}
	if len(removed) == 0 {
		return
	}
	g.co.log.Info("members did not send SyncGroup within the rebalance timeout", "group", g.id, "generation", g.generation, "members", removed)
	g.prepareRebalance("pending syncs expired")
}

func (g *group) syncOK(m *member) syncResult {
	return syncResult{protocolType: g.protocolType, protocol: g.protocol, assignment: m.assignment}
}

// syncAnswered counts one SyncGroup answer of the generation; the last one
// completes the rebalance's timing.
func (g *group) syncAnswered() {
	if g.syncsLeft <= 0 {
		return
	}
	g.syncsLeft--
	if g.syncsLeft == 0 {
		g.co.addStat(RebalanceStat{Group: g.id, Generation: g.generation, Members: len(g.members), Duration: time.Since(g.lastJoin)})
	}
}

// heartbeat handles a Heartbeat (g.mu held).
func (g *group) heartbeat(r *kmsg.HeartbeatRequest) int16 {
	m := g.members[r.MemberID]
	switch {
	case g.fenced(r.MemberID, r.InstanceID):
		return kerr.FencedInstanceID.Code
	case m == nil:
		return kerr.UnknownMemberID.Code
	case r.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	g.touch(m)
	if g.state == groupPreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// leave removes one member (g.mu held).
func (g *group) leave(memberID string, inst *string) int16 {
	if memberID == "" && inst != nil {
		id, ok := g.instances[*inst]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		memberID = id
	}
	if g.fenced(memberID, inst) {
		return kerr.FencedInstanceID.Code
	}
	if t := g.pending[memberID]; t != nil {
		t.Stop()
		delete(g.pending, memberID)
		g.tryCompleteJoin()
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.co.log.Info("member left", "group", g.id, "member", memberID)
	g.removeMember(m, kerr.UnknownMemberID.Code)
	return 0
}

// commitCheck is Kafka's doCommitOffsets gate (g.mu held).
func (g *group) commitCheck(gen int32, memberID string, inst *string) int16 {
	switch {
	case g.fenced(memberID, inst):
		return kerr.FencedInstanceID.Code
	case gen < 0 && g.state == groupEmpty:
		return 0
	case g.state == groupCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if gen != g.generation {
		return kerr.IllegalGeneration.Code
	}
	g.touch(m)
	return 0
}
