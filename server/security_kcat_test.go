package server

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kcatAt runs kcat against addr with extra librdkafka settings.
func kcatAt(t *testing.T, addr, stdin string, args ...string) (string, error) {
	t.Helper()
	bin := kcatBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"-b", addr, "-q", "-X", "socket.timeout.ms=10000", "-X", "message.timeout.ms=10000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %q timed out; stderr:\n%s", args, errb.String())
	}
	if err != nil {
		return out.String(), fmt.Errorf("kcat %q: %v; stderr:\n%s", args, err, errb.String())
	}
	return out.String(), nil
}

// TestSecurityKcat: kcat (librdkafka) produces and consumes through every
// listener type with the settings its users write: security.protocol,
// ssl.ca.location (and a client certificate), sasl.mechanisms,
// sasl.username/sasl.password; a wrong password fails.
func TestSecurityKcat(t *testing.T) {
	kcatBin(t)
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir(), "listener.name.ssl.ssl.client.auth=required")
	addScramUser(t, secureClient(t, s, "PLAINTEXT", nil, nil), "bob", "bob-secret", kadm.ScramSha256)
	addScramUser(t, secureClient(t, s, "PLAINTEXT", nil, nil), "bob", "bob-secret-512", kadm.ScramSha512)
	certFile, keyFile := p.clientFiles(t, "kcat-client", time.Now().Add(time.Hour))
	cases := []struct {
		name, listener string
		x              []string
	}{
		{"ssl-clientcert", "SSL", []string{"security.protocol=SSL", "ssl.ca.location=" + p.caFile,
			"ssl.certificate.location=" + certFile, "ssl.key.location=" + keyFile}},
		{"sasl-plaintext-plain", "SASL_PLAINTEXT", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN",
			"sasl.username=alice", "sasl.password=alice-secret"}},
		{"sasl-plaintext-scram512", "SASL_PLAINTEXT", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=SCRAM-SHA-512",
			"sasl.username=bob", "sasl.password=bob-secret-512"}},
		{"sasl-ssl-plain", "SASL_SSL", []string{"security.protocol=SASL_SSL", "ssl.ca.location=" + p.caFile, "sasl.mechanisms=PLAIN",
			"sasl.username=alice", "sasl.password=alice-secret"}},
		{"sasl-ssl-scram256", "SASL_SSL", []string{"security.protocol=SASL_SSL", "ssl.ca.location=" + p.caFile, "sasl.mechanisms=SCRAM-SHA-256",
			"sasl.username=bob", "sasl.password=bob-secret"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var x []string
			for _, kv := range tc.x {
				x = append(x, "-X", kv)
			}
			addr := listenerAddr(t, s, tc.listener)
			topic := "kcat-" + tc.name
			if _, err := kcatAt(t, addr, "one\ntwo\nthree\n", append(x, "-P", "-t", topic)...); err != nil {
				t.Fatal(err)
			}
			out, err := kcatAt(t, addr, "", append(x, "-C", "-t", topic, "-o", "beginning", "-c", "3", "-e")...)
			if err != nil {
				t.Fatal(err)
			}
			if out != "one\ntwo\nthree\n" {
				t.Fatalf("consumed %q", out)
			}
		})
	}
	_, err := kcatAt(t, listenerAddr(t, s, "SASL_SSL"), "", "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location="+p.caFile,
		"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=bob", "-X", "sasl.password=nope", "-L")
	if err == nil {
		t.Fatal("kcat with a wrong password got metadata")
	}
}
