package server

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
