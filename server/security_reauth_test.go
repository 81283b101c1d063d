package server

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/stratalog/strata/internal/kwire"
)

// startReauth starts a broker with a SASL_PLAINTEXT listener (PLAIN users
// admin and alice) and connections.max.reauth.ms=ms, its log in logs.
func startReauth(t *testing.T, ms string, logs *logBuffer) *Server {
	t.Helper()
	cfg, err := LoadConfig("", []string{"listeners=SASL_PLAINTEXT://127.0.0.1:0", "log.dirs=" + t.TempDir(),
		"sasl.enabled.mechanisms=PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + testPlainJAAS,
		"connections.max.reauth.ms=" + ms, "connection.failed.authentication.delay.ms=10"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(cfg, &Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReauthenticationKIP368: with connections.max.reauth.ms the
// SaslAuthenticate response carries the session lifetime; franz-go and
// kwire (the brokers' connections) re-authenticate in place and keep
// working across several lifetimes; a connection that does not
// re-authenticate is closed at its next request after the lifetime
// (logged); a re-authentication as another principal is refused and
// closes the connection.
func TestReauthenticationKIP368(t *testing.T) {
	var logs logBuffer
	s := startReauth(t, "1000", &logs)
	addr := s.Addr().String()
	mech := plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"),
		kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n, start := 0, time.Now()
	waitFor(t, 60*time.Second, "franz-go producing across 2.5 session lifetimes, re-authenticating", func() bool {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
		n++
		return time.Since(start) > 2500*time.Millisecond && strings.Count(logs.String(), "re-authenticated") >= 2
	})
	if strings.Contains(logs.String(), "SASL session expired") {
		t.Fatal("franz-go's connection expired although it re-authenticates")
	}

	// kwire (the brokers' own connections) re-authenticates too
	kc, err := kwire.Dial(testCtx(t), addr, kwire.Options{Security: kwire.Security{SASL: mech}})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if kc.SessionLifetimeMs() != 1000 {
		t.Fatalf("session lifetime %d ms, want 1000", kc.SessionLifetimeMs())
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	before := strings.Count(logs.String(), "re-authenticated")
	start = time.Now()
	waitFor(t, 60*time.Second, "kwire requests across 2.5 session lifetimes", func() bool {
		if _, err := kc.Request(testCtx(t), md); err != nil {
			t.Fatalf("kwire request: %v", err)
		}
		return time.Since(start) > 2500*time.Millisecond && strings.Count(logs.String(), "re-authenticated") >= before+2
	})

	// a client that authenticates by hand and never again: closed after
	// its session's end
	c, err := kwire.Dial(testCtx(t), addr, kwire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	saslBy := func(c *kwire.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
		t.Helper()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		if resp, err := c.Request(testCtx(t), hs); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("handshake: %v %+v", err, resp)
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version, au.SASLAuthBytes = 1, []byte("\x00"+user+"\x00"+pass)
		resp, err := c.Request(testCtx(t), au)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.SASLAuthenticateResponse)
	}
	if r := saslBy(c, "admin", "admin-secret"); r.ErrorCode != 0 || r.SessionLifetimeMillis != 1000 {
		t.Fatalf("authenticate: %+v", r)
	}
	<-time.After(1100 * time.Millisecond) // past the session's end, whatever the load
	var reqErr error
	for i := 0; i < 3 && reqErr == nil; i++ { // the first write may land before the close is seen
		_, reqErr = c.Request(testCtx(t), md)
	}
	if reqErr == nil || !strings.Contains(logs.String(), "SASL session expired without re-authentication") {
		t.Fatalf("a request after the session's end: %v", reqErr)
	}

	// re-authenticating as alice on admin's connection
	c2, err := kwire.Dial(testCtx(t), addr, kwire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if r := saslBy(c2, "admin", "admin-secret"); r.ErrorCode != 0 {
		t.Fatalf("authenticate: %+v", r)
	}
	if r := saslBy(c2, "alice", "alice-secret"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as alice: %+v", r)
	}
	if !strings.Contains(logs.String(), "cannot change principals during re-authentication") {
		t.Fatal("the refused re-authentication is not logged")
	}
	if _, err := c2.Request(testCtx(t), md); !errors.Is(err, kwire.ErrClosed) && err == nil {
		t.Fatal("the connection stayed open after a refused re-authentication")
	}
}

// TestReauthOffByDefault: without connections.max.reauth.ms the session
// has no lifetime (Kafka's default 0).
func TestReauthOffByDefault(t *testing.T) {
	var logs logBuffer
	s := startReauth(t, "0", &logs)
	c, err := kwire.Dial(testCtx(t), s.Addr().String(), kwire.Options{Security: kwire.Security{SASL: plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.SessionLifetimeMs() != 0 {
		t.Fatalf("session lifetime %d", c.SessionLifetimeMs())
	}
	if _, err := LoadConfig("", []string{"connections.max.reauth.ms=-1"}, nil); err == nil || !strings.Contains(err.Error(), "connections.max.reauth.ms") {
		t.Fatalf("a negative connections.max.reauth.ms: %v", err)
	}
}
