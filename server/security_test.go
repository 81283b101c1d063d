package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const testPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// startSecure starts a broker with one listener of each security protocol,
// PLAIN users from the SASL listeners' JAAS configs (Kafka's per-listener
// property names) and SCRAM enabled; extra overrides come last.
func startSecure(t testing.TB, p *testPKI, dir string, extra ...string) *Server {
	t.Helper()
	ov := []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + p.keyFile,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + p.caFile,
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + testPlainJAAS,
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + testPlainJAAS,
		"connection.failed.authentication.delay.ms=20",
	}
	return startServer(t, dir, append(ov, extra...)...)
}

// listenerAddr is the bound address of the listener called name.
func listenerAddr(t testing.TB, s *Server, name string) string {
	t.Helper()
	for i, l := range s.cfg.Listeners {
		if l.Name == name {
			return s.listeners[i].Addr().String()
		}
	}
	t.Fatalf("no listener %s", name)
	return ""
}

// secureClient is a franz-go client on listener name with TLS and SASL as
// given (nil: none).
func secureClient(t testing.TB, s *Server, name string, tc *tls.Config, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(listenerAddr(t, s, name)), kgo.DisableIdempotentWrite(), kgo.RetryTimeout(5 * time.Second),
		kgo.AllowAutoTopicCreation()}
	if tc != nil {
		o = append(o, kgo.DialTLSConfig(tc))
	}
	if mech != nil {
		o = append(o, kgo.SASL(mech))
	}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// addScramUser creates a SCRAM credential through AlterUserScramCredentials
// (kadm computes the salted password client-side, as kafka-configs does).
func addScramUser(t testing.TB, cl *kgo.Client, user, pass string, mech kadm.ScramMechanism) {
	t.Helper()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(testCtx(t), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 8192, Password: pass}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
}

// roundTripRecords produces n records to topic and consumes them back
// with fresh clients made by mk.
func roundTripRecords(t testing.TB, mk func(opts ...kgo.Opt) *kgo.Client, topic string, n int) {
	t.Helper()
	p := mk()
	for i := 0; i < n; i++ {
		if err := p.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", topic, i))}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	c := mk(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	got := 0
	for got < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d from %s: %v", got, n, topic, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s-%d", topic, got); string(r.Value) != want {
				t.Fatalf("record %d: %q, want %q", got, r.Value, want)
			}
			got++
		})
	}
}

// TestSecurityFranzEachListener: franz-go produces and consumes through
// every listener type and mechanism: PLAINTEXT, SSL (server certificate
// only), SSL with a client certificate, SASL_PLAINTEXT and SASL_SSL with
// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
func TestSecurityFranzEachListener(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir(), "ssl.client.auth=requested")
	admin := secureClient(t, s, "PLAINTEXT", nil, nil)
	addScramUser(t, admin, "bob", "bob-secret", kadm.ScramSha256)
	addScramUser(t, admin, "bob", "bob-secret-512", kadm.ScramSha512)

	cases := []struct {
		name, listener string
		tls            *tls.Config
		mech           sasl.Mechanism
	}{
		{"plaintext", "PLAINTEXT", nil, nil},
		{"ssl", "SSL", p.clientTLS(t, ""), nil},
		{"ssl-clientcert", "SSL", p.clientTLS(t, "carol"), nil},
		{"sasl-plaintext-plain", "SASL_PLAINTEXT", nil, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"sasl-plaintext-scram256", "SASL_PLAINTEXT", nil, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()},
		{"sasl-ssl-plain", "SASL_SSL", p.clientTLS(t, ""), plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"sasl-ssl-scram512", "SASL_SSL", p.clientTLS(t, ""), scram.Auth{User: "bob", Pass: "bob-secret-512"}.AsSha512Mechanism()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			roundTripRecords(t, func(opts ...kgo.Opt) *kgo.Client {
				return secureClient(t, s, tc.listener, tc.tls, tc.mech, opts...)
			}, "sec-"+tc.name, 20)
		})
	}
}

// TestSecurityMetadataPerListener: a client on the SSL listener is sent to
// the SSL port, not the first listener's (a TLS client told to dial the
// PLAINTEXT port could not go on).
func TestSecurityMetadataPerListener(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	cl := secureClient(t, s, "SSL", p.clientTLS(t, ""), nil)
	bs, err := kadm.NewClient(cl).ListBrokers(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := listenerAddr(t, s, "SSL")
	if len(bs) != 1 || net.JoinHostPort(bs[0].Host, fmt.Sprint(bs[0].Port)) != want {
		t.Fatalf("brokers %+v, want one at %s", bs, want)
	}
}

// TestSecurityScramCredentialsPersist: credentials altered on a single
// node are stored salted in the data dir (never the password) and
// authenticate after a restart; DescribeUserScramCredentials lists them
// and a deletion takes effect.
func TestSecurityScramCredentialsPersist(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	s := startSecure(t, p, dir)
	addScramUser(t, secureClient(t, s, "PLAINTEXT", nil, nil), "dave", "dave-secret", kadm.ScramSha256)
	s.Close()
	b, err := readFile(s.topics.fs, dir+"/"+UsersFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "dave-secret") || !strings.Contains(string(b), "stored_key=") || !strings.Contains(string(b), "iterations=8192") {
		t.Fatalf("users file:\n%s", b)
	}
	s = startSecure(t, p, dir)
	roundTripRecords(t, func(opts ...kgo.Opt) *kgo.Client {
		return secureClient(t, s, "SASL_PLAINTEXT", nil, scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha256Mechanism(), opts...)
	}, "after-restart", 3)
	adm := kadm.NewClient(secureClient(t, s, "PLAINTEXT", nil, nil))
	d, err := adm.DescribeUserSCRAMs(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := d["dave"]; !ok || len(u.CredInfos) != 1 || u.CredInfos[0].Iterations != 8192 || u.CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Fatalf("described %+v", d)
	}
	res, err := adm.AlterUserSCRAMs(testCtx(t), []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || res.Error() != nil {
		t.Fatalf("delete: %v %v", err, res.Error())
	}
	res, _ = adm.AlterUserSCRAMs(testCtx(t), []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}}, nil)
	if res.Error() == nil || !strings.Contains(res.Error().Error(), "RESOURCE_NOT_FOUND") {
		t.Fatalf("second delete: %v", res.Error())
	}
	bad := secureClient(t, s, "SASL_PLAINTEXT", nil, scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha256Mechanism())
	if err := bad.Ping(testCtx(t)); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("deleted credential still authenticates: %v", err)
	}
}
