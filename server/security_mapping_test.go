package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSSLPrincipalMappingFeedsACLs: with ssl.principal.mapping.rules
// turning "CN=Alice,OU=test" into "alice", a client certificate of CN
// Alice is User:alice for the authorizer: allowed on topic t by an ACL for
// User:alice, refused on u; the second rule maps CN=zed,OU=test to
// "zed@test", which no ACL allows; a certificate no rule applies to
// (CN=carol: the rules have no DEFAULT) fails the handshake's
// authentication.
func TestSSLPrincipalMappingFeedsACLs(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir(), "listener.name.ssl.ssl.client.auth=required",
		`ssl.principal.mapping.rules=RULE:^CN=([A-Z][a-z]*),OU=test$/$1/L,RULE:^CN=(zed),OU=(.*?)$/$1@$2/`,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:ANONYMOUS")
	admin := secureClient(t, s, "PLAINTEXT", nil, nil)
	if _, err := kadm.NewClient(admin).CreateTopics(testCtx(t), 1, 1, nil, "t", "u"); err != nil {
		t.Fatal(err)
	}
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe} {
		if code := createACL(t, admin, kmsg.ACLResourceTypeTopic, "t", lit, "User:alice", op, kmsg.ACLPermissionTypeAllow); code != 0 {
			t.Fatalf("create ACL: %d", code)
		}
	}
	if code := createACL(t, admin, kmsg.ACLResourceTypeGroup, "*", lit, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow); code != 0 {
		t.Fatalf("create ACL: %d", code)
	}
	alice := func(opts ...kgo.Opt) *kgo.Client {
		return secureClient(t, s, "SSL", p.clientTLS(t, "Alice"), nil, opts...)
	}
	roundTripRecords(t, alice, "t", 3)
	err := alice().ProduceSync(testCtx(t), &kgo.Record{Topic: "u", Value: []byte("x")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice produce to u: %v", err)
	}
	// the second rule: CN=zed,OU=test -> "zed@test", which has no ACL
	err = secureClient(t, s, "SSL", p.clientTLS(t, "zed"), nil).ProduceSync(testCtx(t), &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("zed@test produce to t: %v", err)
	}
	// no rule applies to CN=carol,OU=test (lower case first letter): the
	// connection fails authentication
	if err := secureClient(t, s, "SSL", p.clientTLS(t, "carol"), nil).Ping(testCtx(t)); err == nil {
		t.Fatal("a certificate no rule maps was accepted")
	}
}

// TestSSLPrincipalMappingRulesRefusedAtStart: a malformed rule stops the
// configuration from loading, naming the property.
func TestSSLPrincipalMappingRulesRefusedAtStart(t *testing.T) {
	for _, rules := range []string{"DEFAUL", "RULE:^CN=(.*$/$1/", "RULE:^CN=(.*)$/$1/X"} {
		_, err := LoadConfig("", []string{"listeners=SSL://127.0.0.1:0", "ssl.keystore.location=/nonexistent.pem",
			"ssl.principal.mapping.rules=" + rules}, nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "ssl.principal.mapping.rules") {
			t.Errorf("%q: %v", rules, err)
		}
	}
}
