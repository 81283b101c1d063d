package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// hasGroup reports whether the coordinator of s holds group id.
func hasGroup(s *Server, id string) bool {
	co := s.groups
	co.mu.Lock()
	defer co.mu.Unlock()
	_, ok := co.groups[id]
	return ok
}

// TestClusterCoordinatorUnloadsOnLeadershipLoss: a broker that stays up
// but loses the leadership of a group's __consumer_offsets partition
// unloads the group and answers NOT_COORDINATOR, and the new leader loads
// it with its committed offsets. The group's coordinator A stops; B leads
// the partition and loads the group; A comes back as a follower, rejoins
// the ISR, and a preferred leader election (ElectLeaders through the
// controller) gives the partition back to A while B keeps running.
func TestClusterCoordinatorUnloadsOnLeadershipLoss(t *testing.T) {
	c := startInprocCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 1, 3, nil, "orders"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("orders", 1, 3)
	var co kadm.FindCoordinatorResponses
	waitFor(t, 60*time.Second, "the group's coordinator (the offsets topic created)", func() bool {
		co = adm.FindGroupCoordinators(ctx, "g")
		return co["g"].Err == nil
	})
	p := offsetsPartition("g", int32(len(c.broker(1).groups.loading)))
	c.waitLed(OffsetsTopic, len(c.broker(1).groups.loading), 3)
	a := c.broker(co["g"].NodeID)
	var off kadm.Offsets
	off.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 42, LeaderEpoch: -1})
	if res, err := adm.CommitOffsets(ctx, "g", off); err != nil || res.Error() != nil {
		t.Fatalf("commit: %v %v", err, res.Error())
	}

	// A stops: B leads the partition and loads the group.
	aID, aDir := a.NodeID(), c.dirs[a.NodeID()-1]
	a.Close()
	var b *Server
	waitFor(t, 60*time.Second, "another coordinator holding the group", func() bool {
		for _, s := range c.brokers {
			if !s.closing.Load() && s.groups.groupCheck("g") == 0 && hasGroup(s, "g") {
				b = s
				return true
			}
		}
		return false
	})
	// A comes back as a follower and catches up.
	a = startClusterBroker(t, c.connect, aID, aDir, "replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5")
	c.brokers[aID-1] = a
	waitFor(t, 60*time.Second, "A back in the offsets partition's ISR", func() bool {
		mt := b.cl.images.load().topics[OffsetsTopic]
		return mt != nil && slices.Contains(mt.parts[p].isr, aID) && mt.parts[p].leader == b.NodeID()
	})
	if code := a.groups.groupCheck("g"); code != kerr.NotCoordinator.Code {
		t.Fatalf("the follower A answers %d for the group, want NOT_COORDINATOR", code)
	}

	// The preferred leader A takes the partition back; B stays up.
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{OffsetsTopic: {p: {}}})
	if err != nil || res[OffsetsTopic][p].Err != nil {
		t.Fatalf("preferred election of %s-%d: %v %+v", OffsetsTopic, p, err, res)
	}
	waitFor(t, 60*time.Second, "A coordinating the group again", func() bool { return a.groups.groupCheck("g") == 0 && hasGroup(a, "g") })
	waitFor(t, 30*time.Second, "B to let the group go", func() bool { return b.groups.groupCheck("g") == kerr.NotCoordinator.Code })
	if hasGroup(b, "g") {
		t.Fatalf("broker %d lost the leadership of %s-%d and still holds group g", b.NodeID(), OffsetsTopic, p)
	}
	fetched, err := kadm.NewClient(clusterClient(t, c.addrs())).FetchOffsets(ctx, "g")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, fetched.Error())
	}
	if o, ok := fetched.Lookup("orders", 0); !ok || o.At != 42 {
		t.Fatalf("committed offset after two moves: %+v %v, want 42", o, ok)
	}
	if co := adm.FindGroupCoordinators(ctx, "g"); co["g"].Err != nil || co["g"].NodeID != aID {
		t.Fatalf("coordinator after the election: %+v, want broker %d", co["g"], aID)
	}
}
