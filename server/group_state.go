package server

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is Kafka's classic group state.
type groupState int8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	}
	return "Dead"
}

// member is one group member.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	joinCh chan joinResult // set while a JoinGroup is parked
	syncCh chan syncResult // set while a SyncGroup is parked
	lastHB time.Time
	timer  *time.Timer
}

// joinResult is what a JoinGroup is answered with.
type joinResult struct {
	code         int16
	generation   int32
	protocolType string
	protocol     string
	leader       string
	memberID     string
	members      []kmsg.JoinGroupResponseMember
}

// syncResult is what a SyncGroup is answered with.
type syncResult struct {
	code         int16
	protocolType string
	protocol     string
	assignment   []byte
}

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTs    int64
	expireTs    int64 // -1 unless the commit set a retention time
}

// group is one consumer group (or a standalone group holding only
// offsets). Every field is guarded by mu.
type group struct {
	co *coordinator
	id string

	mu           sync.Mutex
	state        groupState
	stateTs      time.Time // when the state last changed (Kafka's currentStateTimestamp)
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	instances    map[string]string      // group.instance.id -> member id
	pending      map[string]*time.Timer // ids handed out with MEMBER_ID_REQUIRED

	rebalanceSeq   uint64 // bumped to invalidate a rebalance timer
	rebalanceTimer *time.Timer
	initialDelay   bool      // in the initial rebalance delay of an empty group
	delayDeadline  time.Time // the latest the initial delay may run to
	lastJoin       time.Time // last JoinGroup of the rebalance in progress
	syncsLeft      int       // SyncGroup answers still due this generation

	offsets map[topicPartition]offsetEntry
	stopped bool // the coordinator shut down: timers do nothing
}

func newGroup(co *coordinator, id string) *group {
	return &group{co: co, id: id, state: groupEmpty, stateTs: time.Now(),
		members: map[string]*member{}, instances: map[string]string{}, pending: map[string]*time.Timer{},
		offsets: map[topicPartition]offsetEntry{}}
}

func (g *group) setState(s groupState) {
	g.state = s
	g.stateTs = time.Now()
}

// newMemberID is Kafka's member id: the client id, '-', a random UUID.
func newMemberID(clientID string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// supports says whether a joining member's protocol type and protocols fit
// the group (Kafka's supportsProtocols).
func (g *group) supports(ptype string, protos []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return ptype != "" && len(protos) > 0
	}
	if ptype != g.protocolType {
		return false
	}
	for _, c := range g.candidates() {
		for _, p := range protos {
			if p.Name == c {
				return true
			}
		}
	}
	return false
}

// candidates are the protocols every member supports, in the first
// member's order of preference.
func (g *group) candidates() []string {
	var out []string
	first := true
	for _, m := range g.members {
		if first {
			for _, p := range m.protocols {
				out = append(out, p.Name)
			}
			first = false
			continue
		}
		keep := out[:0]
		for _, c := range out {
			if m.supports(c) {
				keep = append(keep, c)
			}
		}
		out = keep
	}
	return out
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols says whether a rejoin carries the member's protocols
// unchanged (Kafka's matches).
func (m *member) sameProtocols(protos []kmsg.JoinGroupRequestProtocol) bool {
	if len(protos) != len(m.protocols) {
		return false
	}
	for i := range protos {
		if protos[i].Name != m.protocols[i].Name || !bytes.Equal(protos[i].Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// selectProtocol: each member votes for its most preferred candidate, the
// most votes win (ties go to the earlier candidate).
func (g *group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestN := "", -1
	for _, c := range cands {
		if votes[c] > bestN {
			best, bestN = c, votes[c]
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fenced says whether a request naming instance id inst comes from a member
// id other than the one the instance is registered with.
func (g *group) fenced(memberID string, inst *string) bool {
	if inst == nil {
		return false
	}
	id, ok := g.instances[*inst]
	return ok && id != memberID
}

// touch records a heartbeat.
func (g *group) touch(m *member) { m.lastHB = time.Now() }

// scheduleSession (re)arms m's session timer.
func (g *group) scheduleSession(m *member, d time.Duration) {
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timer = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.checkSession(m)
	})
}

// checkSession removes m when its session ran out; a member parked in
// JoinGroup or SyncGroup is kept alive (Kafka's shouldKeepAlive).
func (g *group) checkSession(m *member) {
	if g.members[m.id] != m || g.state == groupDead || g.stopped {
		return
	}
	if m.joinCh != nil || m.syncCh != nil {
		g.scheduleSession(m, m.sessionTimeout)
		return
	}
	if left := m.sessionTimeout - time.Since(m.lastHB); left > 0 {
		g.scheduleSession(m, left)
		return
	}
	g.co.log.Info("member session expired", "group", g.id, "member", m.id, "generation", g.generation)
	g.removeMember(m, kerr.UnknownMemberID.Code)
}

// result is the JoinGroup answer for m in the current generation.
func (g *group) result(m *member, leader string) joinResult {
	r := joinResult{generation: g.generation, protocolType: g.protocolType, protocol: g.protocol,
		leader: leader, memberID: m.id}
	if m.id == leader {
		for _, o := range g.members {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(g.protocol)
			r.members = append(r.members, jm)
		}
	}
	return r
}

// awaitJoin parks m's JoinGroup; a JoinGroup of the same member still
// parked is answered UNKNOWN_MEMBER_ID... as Kafka does for a duplicate.
func (g *group) awaitJoin(m *member) <-chan joinResult {
	if m.joinCh != nil {
		m.joinCh <- joinResult{code: kerr.UnknownMemberID.Code, memberID: m.id}
	}
	m.joinCh = make(chan joinResult, 1)
	g.lastJoin = time.Now()
	return m.joinCh
}

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
	m.protocols = r.Protocols
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
		g.syncAnswered()
		return g.syncOK(m), nil
	case groupCompletingRebalance:
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
	g.touch(m)
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
				o.assignment = a.MemberAssignment
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

// shutdown answers parked requests and stops every timer (g.mu held).
func (g *group) shutdown() {
	g.stopped = true
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	for _, m := range g.members {
		if m.timer != nil {
			m.timer.Stop()
		}
		if m.joinCh != nil {
			m.joinCh <- joinResult{code: kerr.CoordinatorNotAvailable.Code, memberID: m.id, generation: -1}
			m.joinCh = nil
		}
		if m.syncCh != nil {
			m.syncCh <- syncResult{code: kerr.CoordinatorNotAvailable.Code}
			m.syncCh = nil
		}
	}
}
