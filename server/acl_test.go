package server

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// startACL starts a broker with the AclAuthorizer on: PLAIN users admin
// (a super user), alice and bob on SASL_PLAINTEXT.
func startACL(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	p := newTestPKI(t)
	return startSecure(t, p, dir, append([]string{"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:admin",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + strings.Replace(testPlainJAAS, `user_alice`, `user_bob="bob-secret" user_alice`, 1)}, extra...)...)
}

func userClient(t testing.TB, s *Server, user string, opts ...kgo.Opt) *kgo.Client {
	return secureClient(t, s, "SASL_PLAINTEXT", nil, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), opts...)
}

func createACL(t testing.TB, cl *kgo.Client, rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) int16 {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Host, c.Operation, c.PermissionType = rt, name, pt, principal, "*", op, perm
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Results[0].ErrorCode
}

// do sends r straight to broker b.
func do(t testing.TB, b *kgo.Broker, r kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := b.Request(testCtx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const (
	lit = kmsg.ACLResourcePatternTypeLiteral
	pre = kmsg.ACLResourcePatternTypePrefixed
)

// TestACLProduceConsumeAndMetadata: alice, allowed to write and read
// topics prefixed "orders" and to use group "g1", produces and consumes
// through a consumer group; a topic she has no ACL for is refused with
// TOPIC_AUTHORIZATION_FAILED and hidden from her Metadata; ACLs persist in
// the data dir across a restart.
func TestACLProduceConsumeAndMetadata(t *testing.T) {
	dir := t.TempDir()
	s := startACL(t, dir)
	admin := userClient(t, s, "admin")
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
		op   kmsg.ACLOperation
	}{
		{kmsg.ACLResourceTypeTopic, "orders", pre, kmsg.ACLOperationWrite},
		{kmsg.ACLResourceTypeTopic, "orders", pre, kmsg.ACLOperationRead},
		{kmsg.ACLResourceTypeTopic, "orders", pre, kmsg.ACLOperationCreate},
		{kmsg.ACLResourceTypeGroup, "g1", lit, kmsg.ACLOperationRead},
	} {
		if code := createACL(t, admin, c.rt, c.name, c.pt, "User:alice", c.op, kmsg.ACLPermissionTypeAllow); code != 0 {
			t.Fatalf("create ACL %+v: %d", c, code)
		}
	}
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "secret", Value: []byte("s")}).FirstErr(); err != nil {
		t.Fatalf("super user produce: %v", err)
	}
	alice := userClient(t, s, "alice")
	err := alice.ProduceSync(testCtx(t), &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice produce to secret: %v", err)
	}
	s.Close()

	s = startACL(t, dir) // the ACLs come back from strata-acls.json
	roundTripRecords(t, func(opts ...kgo.Opt) *kgo.Client {
		return userClient(t, s, "alice", append(opts, kgo.ConsumerGroup("g1"))...)
	}, "orders-eu", 5)
	md := kmsg.NewPtrMetadataRequest()
	resp, err := md.RequestWith(testCtx(t), userClient(t, s, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range resp.Topics {
		if !strings.HasPrefix(*tp.Topic, "orders") {
			t.Fatalf("alice's Metadata lists %s", *tp.Topic)
		}
	}
	md = kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("secret")
	md.Topics = append(md.Topics, mt)
	resp, err = md.RequestWith(testCtx(t), userClient(t, s, "alice"))
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's Metadata for secret: %+v %v", resp, err)
	}
	// An invalid binding is refused; one for a topic that does not exist is
	// kept (Kafka's behaviour: ACLs may precede their resources).
	admin = userClient(t, s, "admin")
	if code := createACL(t, admin, kmsg.ACLResourceTypeGroup, "g", lit, "User:alice", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow); code != kerr.InvalidRequest.Code {
		t.Fatalf("Write on a group: %d", code)
	}
	if code := createACL(t, admin, kmsg.ACLResourceTypeTopic, "not-yet", lit, "User:bob", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow); code != 0 {
		t.Fatalf("ACL for a missing topic: %d", code)
	}
}

// TestACLUnprivilegedEveryAPI: bob, with no ACL at all, tries every API;
// each is refused with Kafka's error and nothing changes (the topic, its
// records, its configs, the ACLs and the credentials stay as they were).
func TestACLUnprivilegedEveryAPI(t *testing.T) {
	s := startACL(t, t.TempDir())
	admin := userClient(t, s, "admin")
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "t", Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code := createACL(t, admin, kmsg.ACLResourceTypeTopic, "t", lit, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow); code != 0 {
		t.Fatal(code)
	}
	bob := userClient(t, s, "bob")
	ctx := testCtx(t)
	// Straight to the broker: kgo would shard these by a Metadata bob may
	// not see.
	bobB := bob.Broker(int(s.NodeID()))
	topicErr, groupErr, clusterErr := kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code
	check := func(api string, got, want int16) {
		t.Helper()
		if got != want {
			t.Errorf("%s: error %d, want %d", api, got, want)
		}
	}
	{
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.ProduceResponse)
		check("Produce", resp.Topics[0].Partitions[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.ListOffsetsResponse)
		check("ListOffsets", resp.Topics[0].Partitions[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrFetchRequest()
		r.MaxWaitMillis, r.MaxBytes = 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.FetchResponse)
		check("Fetch", resp.Topics[0].Partitions[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bobs", 1, 1
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.CreateTopicsResponse)
		check("CreateTopics", resp.Topics[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TopicNames = []string{"t"}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("t")
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.DeleteTopicsResponse)
		check("DeleteTopics", resp.Topics[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "t", 4
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.CreatePartitionsResponse)
		check("CreatePartitions", resp.Topics[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.DeleteRecordsResponse)
		check("DeleteRecords", resp.Topics[0].Partitions[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1")
		rr.Configs = append(rr.Configs, c)
		r.Resources = append(r.Resources, rr)
		resp := do(t, bobB, r).(*kmsg.IncrementalAlterConfigsResponse)
		check("IncrementalAlterConfigs", resp.Resources[0].ErrorCode, topicErr)
	}
	{
		r := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		r.Resources = append(r.Resources, rr)
		resp := do(t, bobB, r).(*kmsg.DescribeConfigsResponse)
		check("DescribeConfigs broker", resp.Resources[0].ErrorCode, clusterErr)
	}
	{
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g"}
		resp := do(t, bobB, r).(*kmsg.FindCoordinatorResponse)
		code := resp.ErrorCode
		if len(resp.Coordinators) == 1 {
			code = resp.Coordinators[0].ErrorCode
		}
		check("FindCoordinator", code, groupErr)
	}
	{
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "g", 10000, 10000, "consumer"
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range"})
		resp := do(t, bobB, r).(*kmsg.JoinGroupResponse)
		check("JoinGroup", resp.ErrorCode, groupErr)
	}
	{
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation = "g", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.OffsetCommitResponse)
		check("OffsetCommit", resp.Topics[0].Partitions[0].ErrorCode, groupErr)
	}
	{
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"g"}
		resp := do(t, bobB, r).(*kmsg.DeleteGroupsResponse)
		check("DeleteGroups", resp.Groups[0].ErrorCode, groupErr)
	}
	{
		resp := do(t, bobB, kmsg.NewPtrDescribeACLsRequest()).(*kmsg.DescribeACLsResponse)
		check("DescribeAcls", resp.ErrorCode, clusterErr)
	}
	check("CreateAcls", createACL(t, bob, kmsg.ACLResourceTypeTopic, "t", lit, "User:bob", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow), clusterErr)
	{
		r := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		r.Filters = append(r.Filters, f)
		resp := do(t, bobB, r).(*kmsg.DeleteACLsResponse)
		check("DeleteAcls", resp.Results[0].ErrorCode, clusterErr)
	}
	{
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "bob", 1, 4096, []byte("salt"), []byte("salted")
		r.Upsertions = append(r.Upsertions, u)
		resp := do(t, bobB, r).(*kmsg.AlterUserSCRAMCredentialsResponse)
		check("AlterUserScramCredentials", resp.Results[0].ErrorCode, clusterErr)
	}
	{
		r := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = s.cfg.LogDirs[0]
		d.Topics = append(d.Topics, kmsg.AlterReplicaLogDirsRequestDirTopic{Topic: "t", Partitions: []int32{0}})
		r.Dirs = append(r.Dirs, d)
		resp := do(t, bobB, r).(*kmsg.AlterReplicaLogDirsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("AlterReplicaLogDirs answer: %+v", resp)
		}
		check("AlterReplicaLogDirs", resp.Topics[0].Partitions[0].ErrorCode, clusterErr)
	}
	{
		resp := do(t, bobB, kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse)
		check("DescribeLogDirs", resp.ErrorCode, clusterErr)
		if len(resp.Dirs) != 0 {
			t.Errorf("bob's DescribeLogDirs lists %d dirs", len(resp.Dirs))
		}
	}
	{
		resp := do(t, bobB, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 0 {
			t.Errorf("bob's Metadata lists %d topics", len(resp.Topics))
		}
	}
	// Nothing changed.
	all := kmsg.NewPtrDescribeACLsRequest()
	all.ResourceType, all.ResourcePatternType, all.Operation, all.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	ends, err := all.RequestWith(ctx, admin)
	if err != nil || len(ends.Resources) != 1 || len(ends.Resources[0].ACLs) != 1 {
		t.Fatalf("ACLs after bob: %+v %v", ends, err)
	}
	adm := userClient(t, s, "admin", kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := adm.PollRecords(ctx, 10)
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "1" {
		t.Fatalf("topic t after bob: %v %v", recs, fs.Errors())
	}
	if ts, ok := s.topicOverrides("t"); !ok || ts["retention.ms"] != "" {
		t.Fatalf("t's configs after bob: %v %v", ts, ok)
	}
	if _, ok := s.topicOverrides("bobs"); ok {
		t.Fatal("bob created a topic")
	}
	if cfg, _ := s.sec.scram.userConfig("bob"); len(cfg) != 0 {
		t.Fatal("bob stored a credential")
	}
}

// TestACLLogDirs: DescribeLogDirs needs Describe on the cluster and
// AlterReplicaLogDirs Alter on it, as in Kafka; Describe alone does not
// let bob move a replica.
func TestACLLogDirs(t *testing.T) {
	s := startACL(t, t.TempDir())
	admin := userClient(t, s, "admin")
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "t", Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if c := createACL(t, admin, kmsg.ACLResourceTypeCluster, "kafka-cluster", lit, "User:bob", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow); c != 0 {
		t.Fatal(c)
	}
	b := userClient(t, s, "bob").Broker(int(s.NodeID()))
	d := do(t, b, kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse)
	if d.ErrorCode != 0 || len(d.Dirs) != 1 || d.Dirs[0].Dir != s.cfg.LogDirs[0] {
		t.Fatalf("bob's DescribeLogDirs with Describe on the cluster: %+v", d)
	}
	alter := kmsg.NewPtrAlterReplicaLogDirsRequest()
	alter.Dirs = append(alter.Dirs, kmsg.AlterReplicaLogDirsRequestDir{Dir: s.cfg.LogDirs[0],
		Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{0}}}})
	a := do(t, b, alter).(*kmsg.AlterReplicaLogDirsResponse)
	if len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 1 || a.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob's AlterReplicaLogDirs with Describe only: %+v", a)
	}
	if c := createACL(t, admin, kmsg.ACLResourceTypeCluster, "kafka-cluster", lit, "User:bob", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow); c != 0 {
		t.Fatal(c)
	}
	// With Alter the request is served: the replica already lives in the
	// one log dir, which Kafka answers with NONE.
	a = do(t, b, alter).(*kmsg.AlterReplicaLogDirsResponse)
	if len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 1 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("bob's AlterReplicaLogDirs with Alter: %+v", a)
	}
}
