package server

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// call is a raw round trip usable from any goroutine.
func (r *rawConn) call(req kmsg.Request) (kmsg.Response, error) {
	r.send(req, 7)
	b, err := r.readFrame()
	if err != nil {
		return nil, err
	}
	if len(b) < 4 || int32(binary.BigEndian.Uint32(b)) != 7 {
		return nil, errors.New("bad correlation id")
	}
	b = b[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		b = b[1:]
	}
	return resp, resp.ReadFrom(b)
}

func consumerMetadata(topics ...string) []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = topics
	return md.AppendTo(nil)
}

func joinReq(version int16, group, member string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group, r.MemberID = group, member
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 5000
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMetadata("errs")
	r.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return r
}

// join runs the two-step v5 join and returns the final response.
func join(t *testing.T, c *rawConn, group string) *kmsg.JoinGroupResponse {
	t.Helper()
	first := c.roundTrip(joinReq(5, group, ""), 1).(*kmsg.JoinGroupResponse)
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		t.Fatalf("first JoinGroup v5: error %d member %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	resp := c.roundTrip(joinReq(5, group, first.MemberID), 2).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != 0 || resp.MemberID != first.MemberID {
		t.Fatalf("second JoinGroup: error %d member %q", resp.ErrorCode, resp.MemberID)
	}
	return resp
}

func heartbeat(c *rawConn, group, member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 3
	r.Group, r.MemberID, r.Generation = group, member, gen
	resp, err := c.call(r)
	if err != nil {
		return -100
	}
	return resp.(*kmsg.HeartbeatResponse).ErrorCode
}

func commit(c *rawConn, group, member string, gen int32, topic string, p int32, off int64) int16 {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 7
	r.Group, r.MemberID, r.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, off
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	r.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp, err := c.call(r)
	if err != nil {
		return -100
	}
	return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func syncReq(group, member string, gen int32, assign map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 3
	r.Group, r.MemberID, r.Generation = group, member, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), w, want)
	}
}

// TestGroupErrors walks a group through Kafka's error cases with raw
// requests: MEMBER_ID_REQUIRED, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS (heartbeat while preparing, commit while
// completing), NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND; then a franz-go group
// consumer takes the group over and resumes from its commits.
func TestGroupErrors(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	createTopic(t, s, "errs", 2)
	const g = "g-errs"
	c1, c2, c3 := dialRaw(t, s), dialRaw(t, s), dialRaw(t, s)

	j1 := join(t, c1, g)
	m1 := j1.MemberID
	if j1.Generation != 1 || j1.LeaderID != m1 || len(j1.Members) != 1 || *j1.Protocol != "range" {
		t.Fatalf("first member: generation %d leader %q members %d protocol %v", j1.Generation, j1.LeaderID, len(j1.Members), j1.Protocol)
	}
	sr := c1.roundTrip(syncReq(g, m1, 1, map[string][]byte{m1: []byte("a1")}), 3).(*kmsg.SyncGroupResponse)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "a1" {
		t.Fatalf("sync: error %d assignment %q", sr.ErrorCode, sr.MemberAssignment)
	}
	wantCode(t, "heartbeat", heartbeat(c1, g, m1, 1), nil)
	wantCode(t, "heartbeat of generation 0", heartbeat(c1, g, m1, 0), kerr.IllegalGeneration)
	wantCode(t, "heartbeat of an unknown member", heartbeat(c1, g, "nobody", 1), kerr.UnknownMemberID)
	wantCode(t, "commit of generation 0", commit(c1, g, m1, 0, "errs", 0, 5), kerr.IllegalGeneration)
	wantCode(t, "commit of an unknown member", commit(c1, g, "nobody", 1, "errs", 0, 5), kerr.UnknownMemberID)
	wantCode(t, "standalone commit to a group with members", commit(c1, g, "", -1, "errs", 0, 5), kerr.UnknownMemberID)
	wantCode(t, "commit to an unknown topic", commit(c1, g, m1, 1, "nope", 0, 5), kerr.UnknownTopicOrPartition)
	wantCode(t, "commit", commit(c1, g, m1, 1, "errs", 0, 1), nil)
	wantCode(t, "sync of generation 0", c1.roundTrip(syncReq(g, m1, 0, nil), 4).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)

	// A second member joins: the group prepares a rebalance and the first
	// member's heartbeat says so.
	first := c2.roundTrip(joinReq(5, g, ""), 1).(*kmsg.JoinGroupResponse)
	m2 := first.MemberID
	j2c := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := c2.call(joinReq(5, g, m2))
		if err != nil {
			t.Error(err)
			j2c <- nil
			return
		}
		j2c <- resp.(*kmsg.JoinGroupResponse)
	}()
	waitFor(t, 5*time.Second, "PreparingRebalance", func() bool {
		grp := s.groups.get(g)
		grp.mu.Lock()
		defer grp.mu.Unlock()
		return grp.state == groupPreparingRebalance
	})
	wantCode(t, "heartbeat while preparing", heartbeat(c1, g, m1, 1), kerr.RebalanceInProgress)
	wantCode(t, "commit while preparing (allowed, as Kafka)", commit(c1, g, m1, 1, "errs", 0, 2), nil)
	j1 = c1.roundTrip(joinReq(5, g, m1), 5).(*kmsg.JoinGroupResponse)
	j2 := <-j2c
	if j1.ErrorCode != 0 || j2 == nil || j2.ErrorCode != 0 || j1.Generation != 2 || j2.Generation != 2 || j1.LeaderID != m1 || j2.LeaderID != m1 {
		t.Fatalf("rejoin: %+v / %+v", j1, j2)
	}
	if len(j1.Members) != 2 || len(j2.Members) != 0 {
		t.Fatalf("leader got %d members, follower %d; want 2 and 0", len(j1.Members), len(j2.Members))
	}
	wantCode(t, "commit while completing the rebalance", commit(c1, g, m1, 2, "errs", 0, 3), kerr.RebalanceInProgress)
	wantCode(t, "heartbeat while completing", heartbeat(c2, g, m2, 2), nil)
	// The follower's SyncGroup waits for the leader's.
	s2c := make(chan *kmsg.SyncGroupResponse, 1)
	go func() {
		resp, err := c2.call(syncReq(g, m2, 2, nil))
		if err != nil {
			t.Error(err)
			s2c <- nil
			return
		}
		s2c <- resp.(*kmsg.SyncGroupResponse)
	}()
	select {
	case r := <-s2c:
		t.Fatalf("follower's SyncGroup answered before the leader's: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	sr = c1.roundTrip(syncReq(g, m1, 2, map[string][]byte{m1: []byte("x1"), m2: []byte("x2")}), 6).(*kmsg.SyncGroupResponse)
	sr2 := <-s2c
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "x1" || sr2 == nil || sr2.ErrorCode != 0 || string(sr2.MemberAssignment) != "x2" {
		t.Fatalf("sync: leader %+v follower %+v", sr, sr2)
	}
	wantCode(t, "commit of the old generation", commit(c1, g, m1, 1, "errs", 0, 4), kerr.IllegalGeneration)
	wantCode(t, "commit", commit(c2, g, m2, 2, "errs", 1, 7), nil)

	del := func(group string) int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version = 2
		r.Groups = []string{group}
		resp, err := c3.call(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
	}
	wantCode(t, "delete a group with members", del(g), kerr.NonEmptyGroup)
	wantCode(t, "delete an unknown group", del("g-none"), kerr.GroupIDNotFound)

	// Both raw members leave (v3 batch); a franz-go consumer takes over
	// from the commits: partition 0 from 2, partition 1 from 7.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group = 3, g
	for _, id := range []string{m1, m2, "nobody"} {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = id
		lr.Members = append(lr.Members, lm)
	}
	lresp := c3.roundTrip(lr, 8).(*kmsg.LeaveGroupResponse)
	if lresp.ErrorCode != 0 || lresp.Members[0].ErrorCode != 0 || lresp.Members[1].ErrorCode != 0 || lresp.Members[2].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", lresp)
	}
	wantCode(t, "heartbeat after leaving", heartbeat(c1, g, m1, 2), kerr.UnknownMemberID)

	prod := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSpread(t, prod, "errs", 2, 20, 0)
	m := startMember(t, s, "kgo", g, "errs")
	// Caught up to the last record of both partitions in a settled group:
	// nothing more can come without a rebalance.
	waitFor(t, 20*time.Second, "the kgo member to consume", func() bool {
		return len(m.records()) >= 8+3 && m.caughtUp(map[int32]int64{0: 9, 1: 9})
	})
	waitSettled(t, s, g, m)
	for _, r := range m.records() {
		if (r.Partition == 0 && r.Offset < 2) || (r.Partition == 1 && r.Offset < 7) {
			t.Fatalf("kgo member got %d@%d, before the committed offset", r.Partition, r.Offset)
		}
	}
	if n := len(m.records()); n != 8+3 {
		t.Fatalf("kgo member got %d records, want 11 (partition 0 from 2, partition 1 from 7)", n)
	}
}

// TestGroupOffsetsLoading: while __consumer_offsets is read back at start,
// the group's requests answer COORDINATOR_LOAD_IN_PROGRESS; a franz-go group
// consumer started meanwhile retries and then resumes from the commits.
func TestGroupOffsetsLoading(t *testing.T) {
	dir := t.TempDir()
	s := startGroupServer(t, dir)
	createTopic(t, s, "load", 1)
	prod := newClient(t, s)
	produceN(t, prod, "load", 0, 10)
	c := dialRaw(t, s)
	wantCode(t, "standalone commit", commit(c, "g-load", "", -1, "load", 0, 6), nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	offsetsLoadHook = func(int32) { <-release }
	t.Cleanup(func() { offsetsLoadHook = nil })
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	s = startGroupServer(t, dir)
	c = dialRaw(t, s)
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Version, fr.Group = 7, "g-load"
	resp := c.roundTrip(fr, 1).(*kmsg.OffsetFetchResponse)
	wantCode(t, "OffsetFetch while loading", resp.ErrorCode, kerr.CoordinatorLoadInProgress)
	jr := c.roundTrip(joinReq(5, "g-load", ""), 2).(*kmsg.JoinGroupResponse)
	wantCode(t, "JoinGroup while loading", jr.ErrorCode, kerr.CoordinatorLoadInProgress)
	wantCode(t, "commit while loading", commit(c, "g-load", "", -1, "load", 0, 1), kerr.CoordinatorLoadInProgress)

	refused := loadRefusals.Load()
	m := startMember(t, s, "a", "g-load", "load")
	// The member has been refused (it retries): it has not joined, so it
	// cannot have consumed.
	waitFor(t, 20*time.Second, "the member to be told the load is in progress", func() bool { return loadRefusals.Load() > refused })
	if n := len(m.records()); n != 0 {
		t.Fatalf("member consumed %d records before the offsets were loaded", n)
	}
	close(release)
	released = true
	waitFor(t, 20*time.Second, "4 records after the load", func() bool { return len(m.records()) >= 4 && m.caughtUp(map[int32]int64{0: 9}) })
	waitSettled(t, s, "g-load", m)
	if recs := m.records(); len(recs) != 4 || recs[0].Offset != 6 {
		t.Fatalf("member got %d records from offset %d, want 4 from the committed 6", len(recs), recs[0].Offset)
	}
}
