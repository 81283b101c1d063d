package server

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRefusalsShapes checks refusals on each shape the gate gives it: a
// topic with struct partitions (response defaults kept), -1 fields, bare
// int32 partitions, a *string topic, bare group names, a group entry
// without partitions and config resources.
func TestRefusalsShapes(t *testing.T) {
	const code = 29

	var produce []kmsg.ProduceResponseTopic
	refusals(&produce, []kmsg.ProduceRequestTopic{{Topic: "a", TopicID: [16]byte{1}, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3}, {Partition: 5}}}}, code)
	wantProduce := kmsg.NewProduceResponseTopic()
	wantProduce.Topic = "a" // no TopicID: the gate never echoed it
	for _, p := range []int32{3, 5} {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p, code
		wantProduce.Partitions = append(wantProduce.Partitions, rp)
	}
	checkRefusals(t, "produce", produce, []kmsg.ProduceResponseTopic{wantProduce})

	var del []kmsg.DeleteRecordsResponseTopic
	refusals(&del, []kmsg.DeleteRecordsRequestTopic{{Topic: "b", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 1, Offset: 9}}}}, code, "LowWatermark")
	checkRefusals(t, "delete records", del, []kmsg.DeleteRecordsResponseTopic{{Topic: "b", Partitions: []kmsg.DeleteRecordsResponseTopicPartition{{Partition: 1, ErrorCode: code, LowWatermark: -1}}}})

	var offs []kmsg.OffsetFetchResponseTopic
	refusals(&offs, []kmsg.OffsetFetchRequestTopic{{Topic: "c", Partitions: []int32{0, 2}}}, code, "Offset")
	wantOffs := kmsg.NewOffsetFetchResponseTopic()
	wantOffs.Topic = "c"
	for _, p := range []int32{0, 2} {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.Offset = p, code, -1
		wantOffs.Partitions = append(wantOffs.Partitions, rp)
	}
	checkRefusals(t, "offset fetch", offs, []kmsg.OffsetFetchResponseTopic{wantOffs})

	var md []kmsg.MetadataResponseTopic
	refusals(&md, []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("d"), TopicID: [16]byte{2}}}, code)
	wantMd := kmsg.NewMetadataResponseTopic()
	wantMd.Topic, wantMd.ErrorCode = kmsg.StringPtr("d"), code
	checkRefusals(t, "metadata", md, []kmsg.MetadataResponseTopic{wantMd})

	var groups []kmsg.DescribeGroupsResponseGroup
	refusals(&groups, []string{"g1", "g2"}, code)
	wantGroups := []kmsg.DescribeGroupsResponseGroup{kmsg.NewDescribeGroupsResponseGroup(), kmsg.NewDescribeGroupsResponseGroup()}
	wantGroups[0].Group, wantGroups[0].ErrorCode = "g1", code
	wantGroups[1].Group, wantGroups[1].ErrorCode = "g2", code
	checkRefusals(t, "describe groups", groups, wantGroups)

	var ofGroups []kmsg.OffsetFetchResponseGroup
	refusals(&ofGroups, []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}}}, code)
	checkRefusals(t, "offset fetch groups", ofGroups, []kmsg.OffsetFetchResponseGroup{{Group: "g", ErrorCode: code}})

	var cfg []kmsg.IncrementalAlterConfigsResponseResource
	refusals(&cfg, []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}, code)
	checkRefusals(t, "incremental alter configs", cfg, []kmsg.IncrementalAlterConfigsResponseResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", ErrorCode: code}})
	var dcfg []kmsg.DescribeConfigsResponseResource
	refusals(&dcfg, []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}, code)
	wantD := kmsg.NewDescribeConfigsResponseResource()
	wantD.ResourceType, wantD.ResourceName, wantD.ErrorCode = kmsg.ConfigResourceTypeTopic, "t", code
	checkRefusals(t, "describe configs", dcfg, []kmsg.DescribeConfigsResponseResource{wantD})

	var prods []kmsg.DescribeProducersResponseTopic
	refusals(&prods, []kmsg.DescribeProducersRequestTopic{{Topic: "p", Partitions: []int32{4}}}, code)
	wantProds := kmsg.NewDescribeProducersResponseTopic()
	wantProds.Topic = "p"
	rp := kmsg.NewDescribeProducersResponseTopicPartition()
	rp.Partition, rp.ErrorCode = 4, code
	wantProds.Partitions = append(wantProds.Partitions, rp)
	checkRefusals(t, "describe producers", prods, []kmsg.DescribeProducersResponseTopic{wantProds})
}

func checkRefusals[T any](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: refusals gave\n%+v\nwant\n%+v", what, got, want)
	}
}
