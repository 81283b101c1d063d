package server

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestACLIdempotentProducer: under the AclAuthorizer a client with
// franz-go's default (idempotent) producer needs InitProducerId, which
// Kafka allows to a principal with IdempotentWrite on the cluster or Write
// on any topic (KIP-679). Alice, with Write on the prefix "orders", gets a
// producer id and produces; bob, who may read but write no topic, is refused with
// CLUSTER_AUTHORIZATION_FAILED and writes nothing.
func TestACLIdempotentProducer(t *testing.T) {
	s := startACL(t, t.TempDir())
	admin := userClient(t, s, "admin")
	if code := createACL(t, admin, kmsg.ACLResourceTypeTopic, "orders", pre, "User:alice", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow); code != 0 {
		t.Fatalf("create ACL: %d", code)
	}
	// Bob may read (so he sees the topic) but write nothing.
	if code := createACL(t, admin, kmsg.ACLResourceTypeTopic, "orders", pre, "User:bob", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow); code != 0 {
		t.Fatalf("create ACL: %d", code)
	}
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "orders-1", Value: []byte("create")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	idempotent := func(user string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, s, "SASL_PLAINTEXT")), kgo.RetryTimeout(5*time.Second),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	if err := idempotent("alice").ProduceSync(testCtx(t), &kgo.Record{Topic: "orders-1", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("alice's idempotent produce: %v", err)
	}
	err := idempotent("bob").ProduceSync(testCtx(t), &kgo.Record{Topic: "orders-1", Value: []byte("b")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("bob's idempotent produce: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	reader := userClient(t, s, "admin", kgo.ConsumeTopics("orders-1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		reader.PollFetches(testCtx(t)).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "create,a" {
		t.Fatalf("orders-1 holds %v, want [create a]", got)
	}
	// Nothing from bob arrives after the two.
	end := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders-1"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	end.Topics = append(end.Topics, lt)
	resp, err := end.RequestWith(testCtx(t), admin)
	if err != nil || resp.Topics[0].Partitions[0].Offset != 2 {
		t.Fatalf("orders-1 end offset: %+v %v, want 2", resp, err)
	}
}
