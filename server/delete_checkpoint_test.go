package server

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeleteTopicDropsCheckpointEntries (found by TestModel): DeleteRecords
// checkpoints a log start offset of 15 for t-0; the topic is deleted and
// re-created; a crash (a copy of the running broker's dir) must not give the
// new, empty t-0 the old log start offset, which would hide every record
// produced to it below offset 15.
func TestDeleteTopicDropsCheckpointEntries(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "log.flush.offset.checkpoint.interval.ms=3600000")
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopicWith(t, cl, "t", 1)
	produceN(t, cl, "t", 0, 15)
	dr := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 15
	rt.Partitions = append(rt.Partitions, rp)
	dr.Topics = append(dr.Topics, rt)
	if resp, err := dr.RequestWith(testCtx(t), cl); err != nil || resp.Topics[0].Partitions[0].LowWatermark != 15 {
		t.Fatalf("delete records: %v %+v", err, resp)
	}
	if resp := deleteTopicsReq(t, s, 6, "t"); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic: %d", resp.Topics[0].ErrorCode)
	}
	createTopicWith(t, cl, "t", 1)
	crashed := filepath.Join(t.TempDir(), "copy")
	if err := copyTree(dir, crashed); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := startServer(t, crashed)
	if rep := s2.topics.reports[0]; rep.CleanShutdown {
		t.Fatal("the copy looks cleanly shut down")
	}
	l := s2.topics.partition("t", 0).log
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 {
		t.Fatalf("re-created t-0 after a crash: log start %d, end %d, want 0, 0", l.LogStartOffset(), l.LogEndOffset())
	}
	cl2 := newClient(t, s2, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, cl2, "t", 0, 3)
	if got := consumeAll(t, s2, "t", []int32{0}, 3); got[0].Offset != 0 {
		t.Fatalf("first record at %d", got[0].Offset)
	}
}
