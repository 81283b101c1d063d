package server

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/security"
)

// TestClusterScramAndACLsInZooKeeper: in cluster mode a SCRAM credential
// altered through broker 1 lands in /config/users/<user> in Kafka's format
// and authenticates on broker 2; an ACL created through broker 1 lands in
// /kafka-acl/Topic/<name> and, after the change notification, is enforced
// by broker 2 too.
func TestClusterScramAndACLsInZooKeeper(t *testing.T) {
	c := startInprocCluster(t, 2, "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=SCRAM-SHA-256",
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:ANONYMOUS")
	b1, b2 := c.broker(1), c.broker(2)
	admin := secureClient(t, b1, "PLAINTEXT", nil, nil)
	addScramUser(t, admin, "alice", "alice-secret", kadm.ScramSha256)
	if code := createACL(t, admin, kmsg.ACLResourceTypeTopic, "t", lit, "User:alice", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow); code != 0 {
		t.Fatalf("create ACL: %d", code)
	}
	zk := testZKConn(t, c.connect)
	data, _, err := zk.Get("/config/users/alice")
	if err != nil || !strings.Contains(string(data), `"SCRAM-SHA-256":"salt=`) || !strings.Contains(string(data), "iterations=8192") {
		t.Fatalf("/config/users/alice: %s %v", data, err)
	}
	data, _, err = zk.Get("/kafka-acl/Topic/t")
	if err != nil || string(data) != `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"All","host":"*"}]}` {
		t.Fatalf("/kafka-acl/Topic/t: %s %v", data, err)
	}
	waitFor(t, 20*time.Second, "broker 2 to load the ACL", func() bool {
		return b2.acls.auth.Load().Authorize("User:alice", "127.0.0.1", security.OpWrite, security.ResourceTopic, "t")
	})
	if _, err := kadm.NewClient(admin).CreateTopic(testCtx(t), 1, 2, nil, "t"); err != nil {
		t.Fatal(err)
	}
	c.waitLed("t", 1, 2)
	alice := func(opts ...kgo.Opt) *kgo.Client {
		return secureClient(t, b2, "SASL_PLAINTEXT", nil, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), opts...)
	}
	roundTripRecords(t, alice, "t", 5)
	err = alice().ProduceSync(testCtx(t), &kgo.Record{Topic: "u", Value: []byte("x")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice produce to u: %v", err)
	}
}
