package tools

import (
	"strings"
	"testing"
)

// TestConfigsQuotasCLI: strata configs alters and describes client quotas
// as kafka-configs.sh does: a client id, the default client id, a user
// and client id (--user/--client), a user with both a SCRAM credential and
// a quota; --delete-config removes a quota; an unknown key, a negative
// value and a non-number are clear errors and change nothing.
func TestConfigsQuotasCLI(t *testing.T) {
	s := startBroker(t, t.TempDir())
	b := s.Addr().String()
	ok := func(want string, args ...string) string {
		t.Helper()
		out, errOut, code := run(t, append([]string{"configs", "--bootstrap-server", b}, args...)...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("configs %v: %d %q %q, want %q", args, code, out, errOut, want)
		}
		return out
	}
	ok("Completed updating config for client c1", "--alter", "--entity-type", "clients", "--entity-name", "c1", "--add-config", "producer_byte_rate=1048576")
	ok("Completed updating config for the default client", "--alter", "--entity-type", "clients", "--entity-default", "--add-config", "consumer_byte_rate=2048,request_percentage=12.5")
	ok("Completed updating config for user alice, client c1", "--alter", "--user", "alice", "--client", "c1", "--add-config", "request_percentage=50")
	ok("Completed updating config for user alice", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=4096,password=pw],producer_byte_rate=4096")
	out := ok("Quota configs for client-id 'c1' are producer_byte_rate=1048576.0", "--describe", "--entity-type", "clients")
	if !strings.Contains(out, "Quota configs for the default client-id are consumer_byte_rate=2048.0,request_percentage=12.5") || strings.Contains(out, "alice") {
		t.Fatalf("describe clients: %q", out)
	}
	out = ok("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096", "--describe", "--entity-type", "users", "--entity-name", "alice")
	if !strings.Contains(out, "Quota configs for user-principal 'alice' are producer_byte_rate=4096.0") {
		t.Fatalf("describe alice: %q", out)
	}
	ok("Quota configs for user-principal 'alice', client-id 'c1' are request_percentage=50.0", "--describe", "--user", "alice", "--client", "c1")
	ok("Completed", "--alter", "--entity-type", "clients", "--entity-name", "c1", "--delete-config", "producer_byte_rate")
	if out := ok("", "--describe", "--entity-type", "clients", "--entity-name", "c1"); strings.Contains(out, "c1") {
		t.Fatalf("c1 after --delete-config: %q", out)
	}
	for _, bad := range []struct {
		want string
		args []string
	}{
		{"invalid configuration key producer_rate", []string{"--add-config", "producer_rate=10"}},
		{"must be greater than 0", []string{"--add-config", "consumer_byte_rate=-5"}},
		{"not a number", []string{"--add-config", "consumer_byte_rate=fast"}},
		{"SCRAM credentials belong to a named user", []string{"--add-config", "SCRAM-SHA-256=[password=x]"}},
	} {
		args := append([]string{"configs", "--bootstrap-server", b, "--alter", "--entity-type", "clients", "--entity-name", "c2"}, bad.args...)
		out, errOut, code := run(t, args...)
		if code == 0 || !strings.Contains(errOut, bad.want) {
			t.Errorf("%v: %d %q %q, want an error with %q", bad.args, code, out, errOut, bad.want)
		}
	}
	if out := ok("", "--describe", "--entity-type", "clients", "--entity-name", "c2"); out != "" {
		t.Fatalf("c2 after bad alters: %q", out)
	}
	if _, errOut, code := run(t, "configs", "--bootstrap-server", b, "--alter", "--entity-type", "clients", "--add-config", "producer_byte_rate=1"); code == 0 || !strings.Contains(errOut, "--entity-default") {
		t.Fatalf("alter without a name: %d %q", code, errOut)
	}
}
