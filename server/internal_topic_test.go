package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsTopicProtected: __consumer_offsets, which the group coordinator
// holds, cannot be deleted (INVALID_REQUEST), grown (INVALID_REQUEST: groups
// map to a partition by hash modulo the count) or have its records deleted
// (INVALID_TOPIC_EXCEPTION, as Kafka); a committed offset survives all three
// attempts, and other topics are still deleted.
func TestOffsetsTopicProtected(t *testing.T) {
	s := startServer(t, t.TempDir(), "offsets.topic.num.partitions=3")
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopicWith(t, cl, "data", 1)
	produceN(t, cl, "data", 0, 5)
	ctx := testCtx(t)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g-keep", -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "data"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Offset = 3
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	cr, err := oc.RequestWith(ctx, cl)
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v %+v", err, cr)
	}
	offsetsEnd := func() (parts int, end int64) {
		for _, p := range s.topics.parts(s.topics.get(OffsetsTopic)) {
			end += p.log.LogEndOffset()
		}
		return len(s.topics.parts(s.topics.get(OffsetsTopic))), end
	}
	parts0, end0 := offsetsEnd()
	if parts0 != 3 || end0 == 0 {
		t.Fatalf("%s: %d partitions, %d records after a commit", OffsetsTopic, parts0, end0)
	}

	for _, v := range []int16{1, 6} {
		if c := deleteTopicsReq(t, s, v, OffsetsTopic).Topics[0].ErrorCode; c != kerr.InvalidRequest.Code {
			t.Fatalf("DeleteTopics v%d of %s: %v, want INVALID_REQUEST", v, OffsetsTopic, kerr.ErrorForCode(c))
		}
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 5000
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = OffsetsTopic, 5
	cp.Topics = append(cp.Topics, ct)
	cpr, err := cp.RequestWith(ctx, cl)
	if err != nil || cpr.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("CreatePartitions of %s: %v %+v, want INVALID_REQUEST", OffsetsTopic, err, cpr)
	}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 5000
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = OffsetsTopic
	for p := range int32(3) {
		dp := kmsg.NewDeleteRecordsRequestTopicPartition()
		dp.Partition, dp.Offset = p, -1
		dt.Partitions = append(dt.Partitions, dp)
	}
	dr.Topics = append(dr.Topics, dt)
	drr, err := dr.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range drr.Topics[0].Partitions {
		if p.ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("DeleteRecords of %s-%d: %v, want INVALID_TOPIC_EXCEPTION", OffsetsTopic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}

	if parts, end := offsetsEnd(); parts != parts0 || end != end0 {
		t.Fatalf("%s after the refused calls: %d partitions, %d records; want %d and %d", OffsetsTopic, parts, end, parts0, end0)
	}
	for _, p := range s.topics.parts(s.topics.get(OffsetsTopic)) {
		if p.log.LogStartOffset() != 0 {
			t.Fatalf("%s: log start offset %d", OffsetsTopic, p.log.LogStartOffset())
		}
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g-keep"
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "data", Partitions: []int32{0}}}
	ofr, err := of.RequestWith(ctx, cl)
	if err != nil || len(ofr.Topics) != 1 || ofr.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("offset fetch after the refused calls: %v %+v", err, ofr)
	}
	if c := deleteTopicsReq(t, s, 6, "data").Topics[0].ErrorCode; c != 0 {
		t.Fatalf("DeleteTopics of an ordinary topic: %v", kerr.ErrorForCode(c))
	}
}
