package fuzz

import "github.com/twmb/franz-go/pkg/kmsg"

// groupSeeds are one request of each group coordinator API, for
// FuzzBrokerFrame's seed corpus: a consumer group "fg" on topic t.
func groupSeeds() []kmsg.Request {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey = 3, "fg"

	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{"t"}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.ProtocolType = 5, "fg", "consumer"
	jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 6000, 1000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", md.AppendTo(nil)
	jg.Protocols = append(jg.Protocols, jp)

	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Version, sg.Group, sg.Generation, sg.MemberID = 3, "fg", 1, "m"
	ga := kmsg.NewSyncGroupRequestGroupAssignment()
	ga.MemberID, ga.MemberAssignment = "m", []byte{0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	sg.GroupAssignment = append(sg.GroupAssignment, ga)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.Generation, hb.MemberID = 3, "fg", 1, "m"

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 7, "fg", -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset = 0, 1
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 6, "fg"
	oft := kmsg.NewOffsetFetchRequestTopic()
	oft.Topic, oft.Partitions = "t", []int32{0, 1}
	of.Topics = append(of.Topics, oft)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, []string{"fg"}
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version = 4
	lv.Group = "fg"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "m"
	lv.Members = append(lv.Members, lm)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "fg"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t"
	odp := kmsg.NewOffsetDeleteRequestTopicPartition()
	odt.Partitions = append(odt.Partitions, odp)
	od.Topics = append(od.Topics, odt)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"fg"}
	return []kmsg.Request{fc, jg, sg, hb, oc, of, lg, dg, lv, od, del}
}
