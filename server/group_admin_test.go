package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func groupGeneration(s *Server, id string) (int32, groupState) {
	g := s.groups.get(id)
	if g == nil {
		return -1, groupDead
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generation, g.state
}

// TestGroupStaticMembership: a static member (group.instance.id) that
// restarts within its session rejoins without a rebalance: the generation
// stays, it gets its old assignment back, and the other member keeps its
// partitions throughout.
func TestGroupStaticMembership(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	createTopic(t, s, "static", 6)
	a := startMember(t, s, "a", "g-static", "static", kgo.InstanceID("inst-a"), kgo.SessionTimeout(5*time.Second))
	b := startMember(t, s, "b", "g-static", "static", kgo.InstanceID("inst-b"), kgo.SessionTimeout(5*time.Second))
	waitFor(t, 20*time.Second, "3+3", func() bool { return len(a.ownedParts()) == 3 && len(b.ownedParts()) == 3 })
	gen := waitSettled(t, s, "g-static", a, b) // any follow-up rebalance done
	before := a.ownedParts()
	a.close() // a static member does not send LeaveGroup
	if _, st := groupGeneration(s, "g-static"); st != groupStable {
		t.Fatalf("group %s after the static member closed, want Stable (no LeaveGroup)", st)
	}
	a2 := startMember(t, s, "a2", "g-static", "static", kgo.InstanceID("inst-a"), kgo.SessionTimeout(5*time.Second))
	waitFor(t, 20*time.Second, "a2's assignment", func() bool { return len(a2.ownedParts()) == 3 })
	// a2's JoinGroup is answered: a rebalance it caused is under way or
	// done, and settling lets it finish, so a new generation would show.
	waitSettled(t, s, "g-static", a2, b)
	gen2, st := groupGeneration(s, "g-static")
	if gen2 != gen || st != groupStable {
		t.Fatalf("after the static rejoin: %s generation %d, want Stable generation %d (no rebalance)", st, gen2, gen)
	}
	if got := a2.ownedParts(); len(got) != 3 || got[0] != before[0] || got[1] != before[1] || got[2] != before[2] {
		t.Fatalf("static member got %v back, had %v", got, before)
	}
	if got := b.ownedParts(); len(got) != 3 {
		t.Fatalf("the other member owns %v", got)
	}
}

// TestGroupJoinReleasedOnShutdown: a JoinGroup parked in a rebalance is
// answered when the broker closes, so Close does not wait for the
// rebalance timeout or the shutdown timeout.
func TestGroupJoinReleasedOnShutdown(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	c1, c2 := dialRaw(t, s), dialRaw(t, s)
	j1 := join(t, c1, "g-shut")
	wantCode(t, "sync", c1.roundTrip(syncReq("g-shut", j1.MemberID, j1.Generation, nil), 3).(*kmsg.SyncGroupResponse).ErrorCode, nil)
	first := c2.roundTrip(joinReq(5, "g-shut", ""), 1).(*kmsg.JoinGroupResponse)
	done := make(chan error, 1)
	go func() {
		resp, err := c2.call(joinReq(5, "g-shut", first.MemberID))
		if err == nil {
			if code := resp.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
				err = kerr.ErrorForCode(code)
			}
		}
		done <- err
	}()
	waitFor(t, 5*time.Second, "the second join to park", func() bool {
		_, st := groupGeneration(s, "g-shut")
		return st == groupPreparingRebalance // set with the join parked, under the group's lock
	})
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Without the release Close would wait out its shutdown timeout.
	if took := time.Since(start); took >= time.Duration(s.cfg.ShutdownTimeoutMs)*time.Millisecond {
		t.Fatalf("Close took %v with a parked JoinGroup", took)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("parked JoinGroup: %v, want COORDINATOR_NOT_AVAILABLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked JoinGroup never answered")
	}
}

// TestGroupAdminAPIs: ListGroups (v4 state filter), DescribeGroups,
// OffsetDelete (refused for a subscribed topic) and DeleteGroups on a
// franz-go group.
func TestGroupAdminAPIs(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	createTopic(t, s, "errs", 2)
	createTopic(t, s, "other", 1)
	m := startMember(t, s, "a", "g-admin", "errs", kgo.Balancers(kgo.RangeBalancer()), kgo.ClientID("admin-test"))
	waitFor(t, 20*time.Second, "assignment", func() bool { return len(m.ownedParts()) == 2 })
	gen := waitSettled(t, s, "g-admin", m)
	memberID, _ := m.cl.GroupMetadata()
	c := dialRaw(t, s)
	wantCode(t, "commit to another topic", commit(c, "g-admin", memberID, gen, "other", 0, 3), nil)
	wantCode(t, "commit", commit(c, "g-admin", memberID, gen, "errs", 1, 1), nil)
	wantCode(t, "standalone commit", commit(c, "g-solo", "", -1, "other", 0, 1), nil)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	groups := map[string]string{}
	for _, g := range c.roundTrip(lg, 1).(*kmsg.ListGroupsResponse).Groups {
		groups[g.Group] = g.GroupState + "/" + g.ProtocolType
	}
	if groups["g-admin"] != "Stable/consumer" || groups["g-solo"] != "Empty/" || len(groups) != 2 {
		t.Fatalf("ListGroups: %v", groups)
	}
	lg.StatesFilter = []string{"empty"}
	if gs := c.roundTrip(lg, 2).(*kmsg.ListGroupsResponse).Groups; len(gs) != 1 || gs[0].Group != "g-solo" {
		t.Fatalf("ListGroups filtered on Empty: %+v", gs)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, []string{"g-admin", "g-none"}
	dr := c.roundTrip(dg, 3).(*kmsg.DescribeGroupsResponse)
	d := dr.Groups[0]
	if d.ErrorCode != 0 || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 {
		t.Fatalf("DescribeGroups: %+v", d)
	}
	dm := d.Members[0]
	var asg kmsg.ConsumerMemberAssignment
	if dm.MemberID != memberID || dm.ClientID != "admin-test" || dm.ClientHost != "/127.0.0.1" || asg.ReadFrom(dm.MemberAssignment) != nil ||
		len(asg.Topics) != 1 || len(asg.Topics[0].Partitions) != 2 {
		t.Fatalf("DescribeGroups member: %+v (assignment %+v)", dm, asg)
	}
	if n := dr.Groups[1]; n.State != "Dead" || n.ErrorCode != 0 {
		t.Fatalf("DescribeGroups of an unknown group: %+v", n)
	}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g-admin"
	for _, tp := range []string{"errs", "other"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = tp
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		od.Topics = append(od.Topics, rt)
	}
	or := c.roundTrip(od, 4).(*kmsg.OffsetDeleteResponse)
	if or.ErrorCode != 0 || or.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || or.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %+v", or)
	}
	cl := newClient(t, s)
	if got := fetchCommitted(t, cl, "g-admin", "other"); len(got) != 0 {
		t.Fatalf("offsets of other after OffsetDelete: %v", got)
	}
	if got := fetchCommitted(t, cl, "g-admin", "errs"); got[1] != 1 {
		t.Fatalf("offsets of errs after OffsetDelete: %v", got)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"g-solo", "g-admin"}
	drs := c.roundTrip(del, 5).(*kmsg.DeleteGroupsResponse).Groups
	if drs[0].ErrorCode != 0 || drs[1].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups: %+v", drs)
	}
	if got := fetchCommitted(t, cl, "g-solo", "other"); len(got) != 0 {
		t.Fatalf("g-solo offsets after DeleteGroups: %v", got)
	}
}

// TestGroupFencedInstance: a static member rejoining without its member id
// gets a new id in the same generation; requests carrying the instance id
// with the old member id are FENCED_INSTANCE_ID.
func TestGroupFencedInstance(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	createTopic(t, s, "errs", 1)
	c := dialRaw(t, s)
	inst := "inst-1"
	jr := joinReq(5, "g-fence", "")
	jr.InstanceID = &inst
	j1 := c.roundTrip(jr, 1).(*kmsg.JoinGroupResponse) // static: no MEMBER_ID_REQUIRED step
	wantCode(t, "static join", j1.ErrorCode, nil)
	sr := syncReq("g-fence", j1.MemberID, j1.Generation, map[string][]byte{j1.MemberID: []byte("p0")})
	sr.InstanceID = &inst
	wantCode(t, "sync", c.roundTrip(sr, 2).(*kmsg.SyncGroupResponse).ErrorCode, nil)

	j2 := c.roundTrip(jr, 3).(*kmsg.JoinGroupResponse)
	if j2.ErrorCode != 0 || j2.MemberID == j1.MemberID || j2.Generation != j1.Generation {
		t.Fatalf("static rejoin: error %d member %q generation %d (was %q, %d)", j2.ErrorCode, j2.MemberID, j2.Generation, j1.MemberID, j1.Generation)
	}
	sr2 := syncReq("g-fence", j2.MemberID, j2.Generation, nil)
	sr2.InstanceID = &inst
	if r := c.roundTrip(sr2, 4).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "p0" {
		t.Fatalf("sync of the new id: %+v, want the old assignment", r)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 3, "g-fence", j1.MemberID, j1.Generation, &inst
	wantCode(t, "heartbeat of the replaced id", c.roundTrip(hb, 5).(*kmsg.HeartbeatResponse).ErrorCode, kerr.FencedInstanceID)
	hb.MemberID = j2.MemberID
	wantCode(t, "heartbeat of the new id", c.roundTrip(hb, 6).(*kmsg.HeartbeatResponse).ErrorCode, nil)
}
