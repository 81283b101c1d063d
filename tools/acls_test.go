package tools

import (
	"strings"
	"testing"
)

// TestACLsAndConfigsCLI: strata configs stores and describes a SCRAM
// credential; strata acls adds, lists and removes bindings, as
// kafka-configs.sh and kafka-acls.sh would, against a broker with the
// AclAuthorizer; a bad operation and a broker without an authorizer are
// clear errors.
func TestACLsAndConfigsCLI(t *testing.T) {
	s := startBroker(t, t.TempDir(), "authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:ANONYMOUS")
	b := s.Addr().String()
	out, errOut, code := run(t, "configs", "--bootstrap-server", b, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=x]")
	if code != 0 || !strings.Contains(out, "Completed updating config for user alice") {
		t.Fatalf("configs --alter: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run(t, "configs", "--bootstrap-server", b, "--describe", "--entity-type", "users")
	if code != 0 || !strings.Contains(out, "'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096") {
		t.Fatalf("configs --describe: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run(t, "acls", "--bootstrap-server", b, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
		"--topic", "orders", "--resource-pattern-type", "prefixed")
	if code != 0 || strings.Count(out, "added: ") != 2 {
		t.Fatalf("acls --add: %d %q %q", code, out, errOut)
	}
	out, _, code = run(t, "acls", "--bootstrap-server", b, "--list", "--topic", "orders-eu", "--resource-pattern-type", "match")
	if code != 0 || !strings.Contains(out, "ACLs for resource `TOPIC:PREFIXED:orders`") || !strings.Contains(out, "User:alice has ALLOW permission for WRITE from host *") {
		t.Fatalf("acls --list: %d %q", code, out)
	}
	out, _, code = run(t, "acls", "--bootstrap-server", b, "--remove", "--allow-principal", "User:alice", "--topic", "orders", "--operation", "Write")
	if code != 0 || strings.Count(out, "removed: ") != 1 {
		t.Fatalf("acls --remove: %d %q", code, out)
	}
	out, _, _ = run(t, "acls", "--bootstrap-server", b, "--list")
	if strings.Contains(out, "WRITE") || !strings.Contains(out, "READ") {
		t.Fatalf("after remove: %q", out)
	}
	if _, errOut, code = run(t, "acls", "--bootstrap-server", b, "--add", "--allow-principal", "User:alice", "--operation", "Fly", "--topic", "t"); code == 0 || !strings.Contains(errOut, "Fly") {
		t.Fatalf("bad operation: %d %q", code, errOut)
	}
	if _, errOut, code = run(t, "acls", "--bootstrap-server", b, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--group", "g"); code == 0 || !strings.Contains(errOut, "INVALID_REQUEST") {
		t.Fatalf("Write on a group: %d %q", code, errOut)
	}
	open := startBroker(t, t.TempDir())
	if _, errOut, code = run(t, "acls", "--bootstrap-server", open.Addr().String(), "--list"); code == 0 || !strings.Contains(errOut, "SECURITY_DISABLED") {
		t.Fatalf("no authorizer: %d %q", code, errOut)
	}
}
