package server

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionCap: CreateTopics and CreatePartitions asking for more than
// strata.max.partitions.per.topic partitions (2^31-1 among them) fail with
// INVALID_PARTITIONS, create nothing, and the broker keeps serving.
func TestPartitionCap(t *testing.T) {
	s := startServer(t, t.TempDir(), "strata.max.partitions.per.topic=8")
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t)
	create := func(name string, n int32, assign int) int16 {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
		if assign > 0 {
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			for i := range assign {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(i), []int32{0}
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			}
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode
	}
	for _, n := range []int32{math.MaxInt32, 9} {
		if ec := create("huge", n, 0); ec != kerr.InvalidPartitions.Code {
			t.Fatalf("CreateTopics with %d partitions: error %d, want INVALID_PARTITIONS", n, ec)
		}
	}
	if ec := create("huge", 0, 9); ec != kerr.InvalidPartitions.Code {
		t.Fatalf("CreateTopics with 9 assigned partitions: error %d, want INVALID_PARTITIONS", ec)
	}
	if s.topics.get("huge") != nil {
		t.Fatal("a refused topic exists")
	}
	if ec := create("ok", 8, 0); ec != 0 {
		t.Fatalf("CreateTopics at the cap: error %d", ec)
	}
	for _, n := range []int32{math.MaxInt32, 9} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "ok", n
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if ec := resp.Topics[0].ErrorCode; ec != kerr.InvalidPartitions.Code {
			t.Fatalf("CreatePartitions to %d: error %d, want INVALID_PARTITIONS", n, ec)
		}
	}
	if n := len(s.topics.parts(s.topics.get("ok"))); n != 8 {
		t.Fatalf("ok has %d partitions, want 8", n)
	}
	produceN(t, cl, "ok", 7, 5)
	if got := consumeAll(t, s, "ok", []int32{7}, 5); len(got) != 5 {
		t.Fatalf("consumed %d records", len(got))
	}
}

func TestPartitionCapConfig(t *testing.T) {
	for _, ov := range [][]string{{"strata.max.partitions.per.topic=0"}, {"strata.max.partitions.per.topic=2", "num.partitions=3"}} {
		cfg, err := LoadConfig("", ov, nil)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			t.Fatalf("%v accepted", ov)
		}
	}
	if DefaultConfig().MaxPartitionsPerTopic != DefaultMaxPartitionsPerTopic {
		t.Fatal("default cap not set")
	}
}
