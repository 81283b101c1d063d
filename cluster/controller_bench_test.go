package cluster

import (
	"testing"
)

// benchSnapshot: brokers 1-3, one topic of n partitions with three
// replicas rotated over them, every partition led by its first replica
// with the full ISR.
func benchSnapshot(n int) *Snapshot {
	s := &Snapshot{ControllerID: 1, ControllerEpoch: 1, EpochVersion: 1}
	for id := int32(1); id <= 3; id++ {
		s.Brokers = append(s.Brokers, Broker{ID: id, Epoch: int64(id), Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9090 + id}}})
	}
	ts := TopicSnapshot{Topic: Topic{Name: "bench", ID: [16]byte{1}, Configs: map[string]string{}}, PartitionsNode: true}
	for i := 0; i < n; i++ {
		rs := []int32{int32(1 + i%3), int32(1 + (i+1)%3), int32(1 + (i+2)%3)}
		ts.Replicas = append(ts.Replicas, rs)
		ts.States = append(ts.States, &PartitionState{Leader: rs[0], ISR: rs, ControllerEpoch: 1})
		ts.PartitionNodes = append(ts.PartitionNodes, true)
	}
	s.Topics = []TopicSnapshot{ts}
	return s
}

// ackAll acknowledges every write batch as applied and returns how many
// batches and requests the decision took.
func ackAll(c *Controller) (batches, requests int) {
	for {
		rd := c.Ready()
		requests += len(rd.Requests)
		if len(rd.Writes) == 0 {
			return batches, requests
		}
		for _, b := range rd.Writes {
			c.Step(WriteResult{Batch: b.ID})
			batches++
		}
	}
}

// BenchmarkControllerBrokerFailover1000: broker 1 of 3 dies with 1,000
// partitions (334 led by it): the controller re-elects those, drops 1 from
// every ISR (1,000 state writes), batches the writes and builds
// LeaderAndIsr and UpdateMetadata for the two survivors. Measured: Step
// and Ready with every batch acknowledged, no ZooKeeper.
func BenchmarkControllerBrokerFailover1000(b *testing.B) {
	s := benchSnapshot(1000)
	survivors := BrokersChanged{Brokers: s.Brokers[1:]}
	c := NewController(1, nil)
	b.ReportAllocs()
	var batches, requests int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c.Step(Activate{Snapshot: s})
		ackAll(c)
		b.StartTimer()
		c.Step(survivors)
		batches, requests = ackAll(c)
	}
	b.ReportMetric(float64(batches), "multis/op")
	b.ReportMetric(float64(requests), "requests/op")
	if st := c.topics["bench"].parts[0].st; st.Leader != 2 || st.LeaderEpoch != 1 {
		b.Fatalf("partition 0 after the failover: %s", fmtState(&st))
	}
}

// BenchmarkControllerActivate1000: a new controller takes over 1,000
// partitions on 3 brokers (one of them dead): full UpdateMetadata and
// LeaderAndIsr to the live brokers, 1,000 state writes.
func BenchmarkControllerActivate1000(b *testing.B) {
	s := benchSnapshot(1000)
	s.Brokers = s.Brokers[:2]
	c := NewController(1, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Step(Activate{Snapshot: s})
		ackAll(c)
	}
}
