package security

import (
	"errors"
	"fmt"
	"testing"
)

func allow(rt ResourceType, pt PatternType, name, principal string, op Operation) Binding {
	return Binding{ResourceType: rt, Name: name, Pattern: pt, Principal: principal, Host: "*", Operation: op, Permission: PermissionAllow}
}

// TestAuthorizerKafkaSemantics is a table of what Kafka's AclAuthorizer
// allows and refuses.
func TestAuthorizerKafkaSemantics(t *testing.T) {
	deny := func(b Binding) Binding { b.Permission = PermissionDeny; return b }
	onHost := func(b Binding, h string) Binding { b.Host = h; return b }
	bs := []Binding{
		allow(ResourceTopic, PatternLiteral, "orders", "User:alice", OpRead),
		allow(ResourceTopic, PatternLiteral, "orders", "User:bob", OpWrite),
		allow(ResourceTopic, PatternPrefixed, "logs-", "User:carol", OpAll),
		deny(allow(ResourceTopic, PatternLiteral, "logs-secret", "User:carol", OpRead)),
		allow(ResourceTopic, PatternLiteral, "*", "User:dave", OpDescribe),
		allow(ResourceTopic, PatternLiteral, "conf", "User:erin", OpAlterConfigs),
		onHost(allow(ResourceTopic, PatternLiteral, "hosted", "User:alice", OpRead), "10.0.0.1"),
		allow(ResourceTopic, PatternLiteral, "public", WildcardPrincipal, OpRead),
		deny(allow(ResourceTopic, PatternLiteral, "public", "User:mallory", OpAll)),
		allow(ResourceGroup, PatternPrefixed, "app-", "User:alice", OpRead),
		allow(ResourceCluster, PatternLiteral, ClusterName, "User:ops", OpCreate),
		allow(ResourceTransactionalID, PatternLiteral, "tx", "User:bob", OpWrite),
	}
	a := NewAuthorizer(bs, []string{"User:admin"}, false)
	open := NewAuthorizer(bs, nil, true)
	cases := []struct {
		principal, host string
		op              Operation
		rt              ResourceType
		name            string
		want, wantOpen  bool
	}{
		{"User:alice", "1.2.3.4", OpRead, ResourceTopic, "orders", true, true},
		{"User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "orders", true, true}, // Read implies Describe
		{"User:alice", "1.2.3.4", OpWrite, ResourceTopic, "orders", false, false},
		{"User:bob", "1.2.3.4", OpDescribe, ResourceTopic, "orders", true, true}, // Write implies Describe
		{"User:bob", "1.2.3.4", OpRead, ResourceTopic, "orders", false, false},
		{"User:carol", "1.2.3.4", OpWrite, ResourceTopic, "logs-app", true, true},     // prefixed All
		{"User:carol", "1.2.3.4", OpRead, ResourceTopic, "logs-secret", false, false}, // deny wins
		{"User:carol", "1.2.3.4", OpWrite, ResourceTopic, "logs-secret", true, true},
		{"User:carol", "1.2.3.4", OpRead, ResourceTopic, "logs", false, false},    // not under the prefix, but dave's wildcard binding applies: ACLs are found
		{"User:dave", "1.2.3.4", OpDescribe, ResourceTopic, "orders", true, true}, // wildcard resource
		{"User:dave", "1.2.3.4", OpRead, ResourceTopic, "orders", false, false},
		{"User:dave", "1.2.3.4", OpDescribe, ResourceTopic, "unlisted", true, true},
		{"User:erin", "1.2.3.4", OpDescribeConfigs, ResourceTopic, "conf", true, true}, // AlterConfigs implies DescribeConfigs
		{"User:erin", "1.2.3.4", OpDescribe, ResourceTopic, "conf", false, false},
		{"User:alice", "10.0.0.1", OpRead, ResourceTopic, "hosted", true, true},
		{"User:alice", "10.0.0.2", OpRead, ResourceTopic, "hosted", false, false},
		{"User:anyone", "1.2.3.4", OpRead, ResourceTopic, "public", true, true},
		{"User:mallory", "1.2.3.4", OpRead, ResourceTopic, "public", false, false},
		{"User:alice", "1.2.3.4", OpRead, ResourceGroup, "app-1", true, true},
		{"User:alice", "1.2.3.4", OpDelete, ResourceGroup, "app-1", false, false},
		{"User:alice", "1.2.3.4", OpRead, ResourceGroup, "other", false, true},
		{"User:ops", "1.2.3.4", OpCreate, ResourceCluster, ClusterName, true, true},
		{"User:alice", "1.2.3.4", OpCreate, ResourceCluster, ClusterName, false, false},
		{"User:bob", "1.2.3.4", OpDescribe, ResourceTransactionalID, "tx", true, true},
		{"User:admin", "1.2.3.4", OpDelete, ResourceTopic, "orders", true, false}, // super user
		{"User:admin", "1.2.3.4", OpAlter, ResourceCluster, ClusterName, true, false},
		{"User:ANONYMOUS", "1.2.3.4", OpRead, ResourceTopic, "nothing-here", false, false},
		{"User:ANONYMOUS", "1.2.3.4", OpWrite, ResourceTransactionalID, "other", false, true}, // no ACL found for it
	}
	for _, c := range cases {
		if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
			t.Errorf("%s@%s %s %s:%s = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
		}
		if got := open.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.wantOpen {
			t.Errorf("allow.everyone.if.no.acl.found: %s@%s %s %s:%s = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.wantOpen)
		}
	}
}

func TestBindingCheckAndFilter(t *testing.T) {
	good := allow(ResourceTopic, PatternLiteral, "t", "User:a", OpRead)
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, b := range []Binding{
		allow(ResourceGroup, PatternLiteral, "g", "User:a", OpWrite),        // Write is not a group operation
		allow(ResourceCluster, PatternLiteral, "other", "User:a", OpCreate), // cluster named kafka-cluster
		allow(ResourceTopic, PatternPrefixed, "*", "User:a", OpRead),
		allow(ResourceTopic, PatternLiteral, "t", "alice", OpRead),
		allow(ResourceTopic, PatternMatch, "t", "User:a", OpRead),
		allow(ResourceAny, PatternLiteral, "t", "User:a", OpRead),
		allow(ResourceTopic, PatternLiteral, "", "User:a", OpRead),
		allow(ResourceTopic, PatternLiteral, "t", "User:a", OpAny),
	} {
		if b.Check() == nil {
			t.Errorf("%v accepted", b)
		}
	}
	name := "logs-app"
	f := Filter{ResourceType: ResourceTopic, Name: &name, Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny}
	if !f.Matches(allow(ResourceTopic, PatternPrefixed, "logs-", "User:a", OpRead)) || !f.Matches(allow(ResourceTopic, PatternLiteral, "*", "User:a", OpRead)) ||
		f.Matches(allow(ResourceTopic, PatternLiteral, "logs", "User:a", OpRead)) {
		t.Fatal("MATCH filter")
	}
}

func TestACLJSONRoundTrip(t *testing.T) {
	bs := []Binding{allow(ResourceTopic, PatternLiteral, "t", "User:a", OpRead), allow(ResourceTopic, PatternPrefixed, "p-", "User:b", OpWrite),
		allow(ResourceTopic, PatternLiteral, "t", "User:c", OpAll)}
	back, err := DecodeACLFile(EncodeACLFile(bs))
	want := []Binding{bs[0], bs[2], bs[1]} // grouped per resource
	if err != nil || fmt.Sprint(back) != fmt.Sprint(want) {
		t.Fatalf("round trip %v -> %v %v", bs, back, err)
	}
	z := EncodeACLZnode(bs[:1])
	if string(z) != `{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read","host":"*"}]}` {
		t.Fatalf("znode %s", z)
	}
	for _, bad := range []string{`{`, `{"version":2,"acls":[]}`, `{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe","operation":"Read","host":"*"}]}`,
		`{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Write","host":"*"}]}`} {
		if _, err := DecodeACLZnode(ResourceGroup, PatternLiteral, "g", []byte(bad)); !errors.Is(err, ErrACL) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// BenchmarkAuthorize1000 checks one topic operation with 1,000 bindings
// defined (half literal, half prefixed, over 50 prefix lengths): the
// issue's floor is 100 ns per check.
func BenchmarkAuthorize1000(b *testing.B) {
	var bs []Binding
	for i := 0; i < 500; i++ {
		bs = append(bs, allow(ResourceTopic, PatternLiteral, fmt.Sprintf("topic-%d", i), fmt.Sprintf("User:u%d", i%20), OpRead))
		bs = append(bs, allow(ResourceTopic, PatternPrefixed, fmt.Sprintf("team%d-%s", i, string(make([]byte, i%50))), fmt.Sprintf("User:u%d", i%20), OpWrite))
	}
	a := NewAuthorizer(bs, nil, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !a.Authorize("User:u7", "10.0.0.1", OpRead, ResourceTopic, "topic-7") {
			b.Fatal("refused")
		}
	}
}

// TestAuthorizeAny: Kafka's authorizeByResourceType (KIP-679) for
// InitProducerId: some resource of the type allowed and not denied.
func TestAuthorizeAny(t *testing.T) {
	deny := func(b Binding) Binding { b.Permission = PermissionDeny; return b }
	bs := []Binding{
		allow(ResourceTopic, PatternPrefixed, "orders", "User:alice", OpWrite),
		allow(ResourceTopic, PatternLiteral, "logs", "User:bob", OpWrite),
		deny(allow(ResourceTopic, PatternLiteral, "logs", "User:bob", OpWrite)),
		allow(ResourceTopic, PatternPrefixed, "app-x", "User:carol", OpAll),
		deny(allow(ResourceTopic, PatternPrefixed, "app-", "User:carol", OpWrite)),
		allow(ResourceTopic, PatternLiteral, "t", "User:dave", OpWrite),
		deny(allow(ResourceTopic, PatternLiteral, WildcardResource, "User:dave", OpAll)),
		allow(ResourceTopic, PatternLiteral, "r", "User:erin", OpRead),
		deny(allow(ResourceTopic, PatternPrefixed, "", "User:frank", OpWrite)),
	}
	a := NewAuthorizer(bs, []string{"User:admin"}, false)
	for _, c := range []struct {
		principal string
		want      bool
	}{
		{"User:alice", true},  // a prefixed allow
		{"User:bob", false},   // his one allow cancelled by a literal deny
		{"User:carol", false}, // her app-x allow cancelled by a deny of the prefix app-
		{"User:erin", false},  // Read does not imply Write
		{"User:dave", false},  // a deny of every topic
		{"User:frank", false}, // a deny of the prefix "": every topic
		{"User:admin", true},  // super user
	} {
		if got := a.AuthorizeAny(c.principal, "1.2.3.4", OpWrite, ResourceTopic); got != c.want {
			t.Errorf("AuthorizeAny(%s, Write, Topic) = %v, want %v", c.principal, got, c.want)
		}
	}
	if a.AuthorizeAny("User:zed", "h", OpWrite, ResourceGroup) {
		t.Error("no group bindings and AllowIfNoACL false: allowed")
	}
	if !NewAuthorizer(nil, nil, true).AuthorizeAny("User:zed", "h", OpWrite, ResourceTopic) {
		t.Error("no bindings and AllowIfNoACL: refused")
	}
}
