package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRequestPartitionsCounts checks the partition count of the slow-request
// line for each API that names partitions, with two topics of 2 and 3.
func TestRequestPartitionsCounts(t *testing.T) {
	produce := kmsg.NewPtrProduceRequest()
	produce.Topics = []kmsg.ProduceRequestTopic{{Partitions: make([]kmsg.ProduceRequestTopicPartition, 2)}, {Partitions: make([]kmsg.ProduceRequestTopicPartition, 3)}}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Topics = []kmsg.FetchRequestTopic{{Partitions: make([]kmsg.FetchRequestTopicPartition, 2)}, {Partitions: make([]kmsg.FetchRequestTopicPartition, 3)}}
	list := kmsg.NewPtrListOffsetsRequest()
	list.Topics = []kmsg.ListOffsetsRequestTopic{{Partitions: make([]kmsg.ListOffsetsRequestTopicPartition, 2)}, {Partitions: make([]kmsg.ListOffsetsRequestTopicPartition, 3)}}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Partitions: make([]kmsg.OffsetCommitRequestTopicPartition, 2)}, {Partitions: make([]kmsg.OffsetCommitRequestTopicPartition, 3)}}
	offFetch := kmsg.NewPtrOffsetFetchRequest()
	offFetch.Topics = []kmsg.OffsetFetchRequestTopic{{Partitions: make([]int32, 2)}}
	offFetch.Groups = []kmsg.OffsetFetchRequestGroup{{Topics: []kmsg.OffsetFetchRequestGroupTopic{{Partitions: make([]int32, 3)}}}}
	delRec := kmsg.NewPtrDeleteRecordsRequest()
	delRec.Topics = []kmsg.DeleteRecordsRequestTopic{{Partitions: make([]kmsg.DeleteRecordsRequestTopicPartition, 2)}, {Partitions: make([]kmsg.DeleteRecordsRequestTopicPartition, 3)}}
	epoch := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epoch.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Partitions: make([]kmsg.OffsetForLeaderEpochRequestTopicPartition, 2)}, {Partitions: make([]kmsg.OffsetForLeaderEpochRequestTopicPartition, 3)}}
	lisr := kmsg.NewPtrLeaderAndISRRequest()
	lisr.PartitionStates = make([]kmsg.LeaderAndISRRequestTopicPartition, 2) // v0-1
	lisr.TopicStates = []kmsg.LeaderAndISRRequestTopicState{{PartitionStates: make([]kmsg.LeaderAndISRRequestTopicPartition, 3)}}
	stop := kmsg.NewPtrStopReplicaRequest()
	stop.Topics = []kmsg.StopReplicaRequestTopic{{Partitions: make([]int32, 2)}, {PartitionStates: make([]kmsg.StopReplicaRequestTopicPartitionState, 3)}}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Partitions: make([]int32, 2)}, {Partitions: make([]int32, 3)}}
	offDel := kmsg.NewPtrOffsetDeleteRequest()
	offDel.Topics = []kmsg.OffsetDeleteRequestTopic{{Partitions: make([]kmsg.OffsetDeleteRequestTopicPartition, 2)}, {Partitions: make([]kmsg.OffsetDeleteRequestTopicPartition, 3)}}
	for _, req := range []kmsg.Request{produce, fetch, list, commit, offFetch, delRec, epoch, lisr, stop, elect, offDel} {
		if n := requestPartitions(req); n != 5 {
			t.Errorf("%s: %d partitions, want 5", kmsg.NameForKey(req.Key()), n)
		}
	}
	if n := requestPartitions(kmsg.NewPtrMetadataRequest()); n != 0 {
		t.Errorf("Metadata: %d partitions, want 0", n)
	}
}
