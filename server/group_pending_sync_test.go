package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinPair joins two members to group at once with JoinGroup v3 (no
// MEMBER_ID_REQUIRED step) and a rebalance timeout of rebalance; it returns
// (leader, follower) responses with the connection each came on.
func joinPair(t *testing.T, s *Server, group string, rebalance time.Duration) (lead, follow *kmsg.JoinGroupResponse, lc, fc *rawConn) {
	t.Helper()
	conns := []*rawConn{dialRaw(t, s), dialRaw(t, s)}
	type res struct {
		resp *kmsg.JoinGroupResponse
		c    *rawConn
	}
	out := make(chan res, 2)
	for _, c := range conns {
		go func() {
			req := joinReq(3, group, "")
			req.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
			resp, err := c.call(req)
			if err != nil {
				t.Error(err)
				out <- res{}
				return
			}
			out <- res{resp.(*kmsg.JoinGroupResponse), c}
		}()
	}
	a, b := <-out, <-out
	if a.resp == nil || b.resp == nil || a.resp.ErrorCode != 0 || b.resp.ErrorCode != 0 || a.resp.Generation != b.resp.Generation {
		t.Fatalf("joins: %+v / %+v", a.resp, b.resp)
	}
	if b.resp.LeaderID == b.resp.MemberID {
		a, b = b, a
	}
	if a.resp.LeaderID != a.resp.MemberID {
		t.Fatalf("no leader among %q and %q (leader %q)", a.resp.MemberID, b.resp.MemberID, a.resp.LeaderID)
	}
	return a.resp, b.resp, a.c, b.c
}

// TestPendingSyncExpires: as Kafka (pending sync members), a member that
// joined a generation must send SyncGroup within the rebalance timeout.
// A leader that keeps heartbeating but never syncs is removed, and the
// follower's parked SyncGroup gets REBALANCE_IN_PROGRESS instead of waiting
// forever; a group whose members all synced keeps them past the timeout.
func TestPendingSyncExpires(t *testing.T) {
	// Both joins of joinPair must land within the initial rebalance delay.
	s := startGroupServer(t, t.TempDir(), "group.initial.rebalance.delay.ms=1000")
	if s.cfg.GroupInitialRebalanceDelayMs != 1000 {
		t.Fatalf("group.initial.rebalance.delay.ms %d", s.cfg.GroupInitialRebalanceDelayMs)
	}
	createTopic(t, s, "errs", 1)
	const timeout = 400 * time.Millisecond

	lead, follow, lc, fc := joinPair(t, s, "g-stuck", timeout)
	type answer struct {
		resp kmsg.Response
		err  error
	}
	parked := make(chan answer, 1) // buffered: a failed test may leave the call behind
	go func() {
		resp, err := fc.call(syncReq("g-stuck", follow.MemberID, follow.Generation, nil))
		parked <- answer{resp, err}
	}()
	start := time.Now()
	var got *kmsg.SyncGroupResponse
	for got == nil {
		select {
		case a := <-parked:
			if a.err != nil {
				t.Fatalf("follower's SyncGroup: %v", a.err)
			}
			got = a.resp.(*kmsg.SyncGroupResponse)
		case <-time.After(100 * time.Millisecond):
			if time.Since(start) > 20*time.Second { // the timer fires after timeout: this only rules out forever
				t.Fatalf("the follower's SyncGroup is still parked %v after the join, with a rebalance timeout of %v", time.Since(start), timeout)
			}
			heartbeat(lc, "g-stuck", lead.MemberID, lead.Generation) // the leader stays alive but never syncs
		}
	}
	if got.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("follower's SyncGroup: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(got.ErrorCode))
	}
	// start is after the JoinGroup answers, so waited is a little short of
	// the timer's time: the bound only rules out an answer without a wait.
	if waited := time.Since(start); waited < timeout/2 {
		t.Fatalf("answered after %v, before the rebalance timeout %v", waited, timeout)
	}
	wantCode(t, "the leader's heartbeat after its sync expired", heartbeat(lc, "g-stuck", lead.MemberID, lead.Generation), kerr.UnknownMemberID)

	// Both sync: nobody is removed when the timeout passes. Both syncs must
	// land within the rebalance timeout, so this half gives them 2 s, not
	// 400 ms: a loaded 2-core machine held the follower's sync back past
	// 400 ms and the broker rightly removed it (UNKNOWN_MEMBER_ID).
	const fineTimeout = 2 * time.Second
	lead, follow, lc, fc = joinPair(t, s, "g-fine", fineTimeout)
	if r := lc.roundTrip(syncReq("g-fine", lead.MemberID, lead.Generation, map[string][]byte{lead.MemberID: []byte("a"), follow.MemberID: []byte("b")}), 3).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("leader's sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := fc.roundTrip(syncReq("g-fine", follow.MemberID, follow.Generation, nil), 3).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "b" {
		t.Fatalf("follower's sync: %v %q", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}
	for end := time.Now().Add(2 * fineTimeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		wantCode(t, "leader's heartbeat after both synced", heartbeat(lc, "g-fine", lead.MemberID, lead.Generation), nil)
		wantCode(t, "follower's heartbeat after both synced", heartbeat(fc, "g-fine", follow.MemberID, follow.Generation), nil)
	}
}
