package server

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// join handles a JoinGroup (g.mu held). It returns either a result or a
// channel the result arrives on when the rebalance completes.
func (g *group) join(r *kmsg.JoinGroupRequest, clientID, host string) (joinResult, <-chan joinResult) {
	fail := func(code int16) (joinResult, <-chan joinResult) {
		return joinResult{code: code, memberID: r.MemberID, generation: -1}, nil
	}
	cfg := g.co.cfg
	if r.SessionTimeoutMillis < cfg.GroupMinSessionTimeoutMs || r.SessionTimeoutMillis > cfg.GroupMaxSessionTimeoutMs {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	if r.MemberID != "" && g.members[r.MemberID] == nil && g.pending[r.MemberID] == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	if !g.supports(r.ProtocolType, r.Protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if r.MemberID == "" {
		return g.joinUnknown(r, clientID, host)
	}
	if t := g.pending[r.MemberID]; t != nil {
		t.Stop()
		delete(g.pending, r.MemberID)
		return g.addMember(r.MemberID, r, clientID, host)
	}
	if g.fenced(r.MemberID, r.InstanceID) {
		return fail(kerr.FencedInstanceID.Code)
	}
	m := g.members[r.MemberID]
	switch g.state {
	case groupPreparingRebalance:
		g.update(m, r)
		ch := g.awaitJoin(m)
		g.tryCompleteJoin()
		return joinResult{}, ch
	case groupCompletingRebalance:
		if m.sameProtocols(r.Protocols) {
			return g.result(m, g.leader), nil
		}
	case groupStable:
		if m.id != g.leader && m.sameProtocols(r.Protocols) {
			return g.result(m, g.leader), nil
		}
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
	g.update(m, r)
	ch := g.awaitJoin(m)
	g.prepareRebalance("member " + m.id + " rejoined")
	return joinResult{}, ch
}

func (g *group) joinUnknown(r *kmsg.JoinGroupRequest, clientID, host string) (joinResult, <-chan joinResult) {
	id := newMemberID(clientID)
	if r.InstanceID != nil {
		if old, ok := g.instances[*r.InstanceID]; ok {
			return g.replaceStatic(g.members[old], id, r, clientID, host)
		}
		return g.addMember(id, r, clientID, host)
	}
	if r.Version >= 4 {
		sess := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
		g.pending[id] = time.AfterFunc(sess, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.pending[id] != nil && !g.stopped {
				delete(g.pending, id)
				g.tryCompleteJoin()
			}
		})
		return joinResult{code: kerr.MemberIDRequired.Code, memberID: id, generation: -1}, nil
	}
	return g.addMember(id, r, clientID, host)
}

func (g *group) update(m *member, r *kmsg.JoinGroupRequest) {
	// kmsg's ReadFrom leaves []byte fields pointing into the request frame,
	// which the connection reuses for its next request: keep copies.
	m.protocols = make([]kmsg.JoinGroupRequestProtocol, len(r.Protocols))
	for i, p := range r.Protocols {
		p.Metadata = bytes.Clone(p.Metadata)
		m.protocols[i] = p
	}
	m.sessionTimeout = time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	m.rebalanceTimeout = m.sessionTimeout
	if r.Version >= 1 {
		m.rebalanceTimeout = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	}
}

func (g *group) addMember(id string, r *kmsg.JoinGroupRequest, clientID, host string) (joinResult, <-chan joinResult) {
	if int32(len(g.members)) >= g.co.cfg.GroupMaxSize {
		return joinResult{code: kerr.GroupMaxSizeReached.Code, memberID: id, generation: -1}, nil
	}
	m := &member{id: id, instanceID: r.InstanceID, clientID: clientID, clientHost: host, lastHB: time.Now()}
	g.update(m, r)
	if len(g.members) == 0 {
		g.protocolType = r.ProtocolType
	}
	g.members[id] = m
	if m.instanceID != nil {
		g.instances[*m.instanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	ch := g.awaitJoin(m)
	if g.state == groupPreparingRebalance && g.initialDelay {
		g.extendInitialDelay()
	}
	g.maybePrepareRebalance("member " + id + " joined")
	return joinResult{}, ch
}

// replaceStatic gives a static member that rejoined without its member id
// a new one, fencing the old id (Kafka's updateStaticMemberAndRebalance).
// In a Stable group whose selected protocol its new protocols do not change
// it gets the current generation at once (its old assignment follows in
// SyncGroup), with the old leader id so that nobody reassigns.
func (g *group) replaceStatic(old *member, id string, r *kmsg.JoinGroupRequest, clientID, host string) (joinResult, <-chan joinResult) {
	if old.joinCh != nil {
		old.joinCh <- joinResult{code: kerr.FencedInstanceID.Code, memberID: old.id, generation: -1}
		old.joinCh = nil
	}
	if old.syncCh != nil {
		old.syncCh <- syncResult{code: kerr.FencedInstanceID.Code}
		old.syncCh = nil
	}
	if old.timer != nil {
		old.timer.Stop()
	}
	oldLeader := g.leader
	m := &member{id: id, instanceID: r.InstanceID, clientID: clientID, clientHost: host,
		assignment: old.assignment, lastHB: time.Now()}
	g.update(m, r)
	delete(g.members, old.id)
	g.members[id] = m
	g.instances[*r.InstanceID] = id
	if g.leader == old.id {
		g.leader = id
	}
	g.co.log.Info("static member replaced", "group", g.id, "instance", *r.InstanceID, "old", old.id, "new", id)
	if g.state == groupStable && g.selectProtocol() == g.protocol {
		g.scheduleSession(m, m.sessionTimeout)
		if code := g.co.storeGroup(g); code != 0 {
			return joinResult{code: code, memberID: id, generation: -1}, nil
		}
		res := g.result(m, oldLeader)
		res.members = nil
		return res, nil
	}
	ch := g.awaitJoin(m)
	g.maybePrepareRebalance("static member " + *r.InstanceID + " rejoined")
	return joinResult{}, ch
}

func (g *group) maybePrepareRebalance(reason string) {
	switch g.state {
	case groupStable, groupCompletingRebalance, groupEmpty:
		g.prepareRebalance(reason)
	case groupPreparingRebalance:
		g.tryCompleteJoin()
	}
}

// prepareRebalance moves the group to PreparingRebalance: parked
// SyncGroups get REBALANCE_IN_PROGRESS; an empty group waits
// group.initial.rebalance.delay.ms, others until every member rejoined or
// the largest rebalance timeout ran out.
func (g *group) prepareRebalance(reason string) {
	g.stopSyncTimer()
	for _, m := range g.members {
		m.pendingSync = false
	}
	if g.state == groupCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncCh != nil {
				m.syncCh <- syncResult{code: kerr.RebalanceInProgress.Code}
				m.syncCh = nil
			}
		}
	}
	wasEmpty := g.state == groupEmpty
	g.setState(groupPreparingRebalance)
	g.co.log.Debug("preparing rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	maxReb := g.maxRebalanceTimeout()
	if wasEmpty {
		g.initialDelay = true
		g.delayDeadline = time.Now().Add(maxReb)
		g.armRebalanceTimer(g.initialDelayDuration())
		return
	}
	g.initialDelay = false
	g.armRebalanceTimer(maxReb)
	g.tryCompleteJoin()
}

func (g *group) initialDelayDuration() time.Duration {
	d := time.Duration(g.co.cfg.GroupInitialRebalanceDelayMs) * time.Millisecond
	if left := time.Until(g.delayDeadline); d > left {
		d = max(left, 0)
	}
	return d
}

// extendInitialDelay restarts the initial delay when a member joins during
// it, never past the largest rebalance timeout from the first join.
func (g *group) extendInitialDelay() {
	g.armRebalanceTimer(g.initialDelayDuration())
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) armRebalanceTimer(d time.Duration) {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	g.rebalanceTimer = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.rebalanceSeq == seq && g.state == groupPreparingRebalance && !g.stopped {
			g.completeJoin()
		}
	})
}

// tryCompleteJoin completes the join phase once every member rejoined and
// no MEMBER_ID_REQUIRED id is outstanding (not during the initial delay).
func (g *group) tryCompleteJoin() {
	if g.state != groupPreparingRebalance || g.initialDelay {
		return
	}
	if len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, the protocol is chosen and every parked
// JoinGroup is answered (the leader with the member list).
func (g *group) completeJoin() {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	g.initialDelay = false
	for _, m := range g.members {
		if m.joinCh == nil {
			g.co.log.Info("member did not rejoin in time", "group", g.id, "member", m.id)
			g.dropMember(m, kerr.UnknownMemberID.Code)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocolType, g.protocol, g.leader = "", "", ""
		g.setState(groupEmpty)
		g.co.storeGroup(g)
		return
	}
	if g.members[g.leader] == nil {
		g.leader = ""
		for id := range g.members {
			g.leader = id
			break
		}
	}
	g.protocol = g.selectProtocol()
	g.setState(groupCompletingRebalance)
	g.syncsLeft = len(g.members)
	g.armSyncTimer(g.maxRebalanceTimeout())
	for _, m := range g.members {
		m.joinCh <- g.result(m, g.leader)
		m.joinCh = nil
		m.lastHB = time.Now()
		g.scheduleSession(m, m.sessionTimeout)
	}
}

// dropMember removes m without starting a rebalance; its parked requests
// get code.
func (g *group) dropMember(m *member, code int16) {
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.joinCh != nil {
		m.joinCh <- joinResult{code: code, memberID: m.id, generation: -1}
		m.joinCh = nil
	}
	if m.syncCh != nil {
		m.syncCh <- syncResult{code: code}
		m.syncCh = nil
	}
	delete(g.members, m.id)
	if m.instanceID != nil && g.instances[*m.instanceID] == m.id {
		delete(g.instances, *m.instanceID)
	}
}

// removeMember removes m (left or expired) and rebalances.
func (g *group) removeMember(m *member, code int16) {
	g.dropMember(m, code)
	switch g.state {
	case groupStable, groupCompletingRebalance:
		g.prepareRebalance("member " + m.id + " left")
	case groupPreparingRebalance:
		g.tryCompleteJoin()
	}
}
