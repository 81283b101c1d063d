package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestClusterElectLeaders: ElectLeaders (key 43) over the wire, as
// kafka-leader-election.sh and kadm send it to the controller. A partition
// whose preferred leader (the first replica) stopped is led by the other
// replica; once the preferred one is back in the ISR (no automatic
// rebalance: leader.imbalance.check.interval.seconds is Kafka's 300 s),
// a preferred election moves the leadership back; a second one answers
// ELECTION_NOT_NEEDED, and a partition that does not exist
// UNKNOWN_TOPIC_OR_PARTITION.
func TestClusterElectLeaders(t *testing.T) {
	c := startInprocCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "elect"
	if res, err := kadm.NewClient(clusterClient(t, c.addrs())).CreateTopic(ctx, 1, 2, nil, topic); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed(topic, 1, 2)
	_, _, replicas := partitionState(t, c.addrs(), topic, 0)
	preferred, other := replicas[0], replicas[1]
	c.broker(preferred).Close()
	waitFor(t, 60*time.Second, "the other replica leading", func() bool {
		leader, _, _ := partitionState(t, c.addrs(), topic, 0)
		return leader == other
	})
	c.brokers[preferred-1] = startClusterBroker(t, c.connect, preferred, c.dirs[preferred-1],
		"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5")
	c.waitLed(topic, 1, 2)
	if leader, _, _ := partitionState(t, c.addrs(), topic, 0); leader != other {
		t.Fatalf("leader %d before the election, want %d", leader, other)
	}

	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	elect := func(topic string) error {
		t.Helper()
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatalf("ElectLeaders: %v", err)
		}
		r, ok := res[topic][0]
		if !ok {
			t.Fatalf("ElectLeaders: no result for %s-0: %+v", topic, res)
		}
		return r.Err
	}
	if err := elect(topic); err != nil {
		t.Fatalf("preferred election: %v", err)
	}
	waitFor(t, 30*time.Second, "the preferred replica leading", func() bool {
		leader, _, _ := partitionState(t, c.addrs(), topic, 0)
		return leader == preferred
	})
	if err := elect(topic); !errors.Is(err, kerr.ElectionNotNeeded) {
		t.Fatalf("second preferred election: %v, want ELECTION_NOT_NEEDED", err)
	}
	if err := elect("no-such-topic"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("election for a missing partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
