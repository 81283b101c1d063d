package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// dialAddr is dialRaw to a given listener address.
func dialAddr(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc}
}

// rawSaslHandshake sends SaslHandshake v1 for mech and returns the answer.
func rawSaslHandshake(r *rawConn, mech string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, mech
	return r.roundTrip(req, 1).(*kmsg.SASLHandshakeResponse)
}

func saslAuthenticate(r *rawConn, b []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 1, b
	return r.roundTrip(req, 2).(*kmsg.SASLAuthenticateResponse)
}

// waitConns waits until the broker holds n connections (each bad
// connection must be closed and forgotten, not leaked).
func waitConns(t testing.TB, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.conns)
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker holds %d connections, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sslHealthy asserts a TLS client still completes a request on the SSL
// listener.
func sslHealthy(t testing.TB, s *Server, p *testPKI) {
	t.Helper()
	if err := secureClient(t, s, "SSL", p.clientTLS(t, ""), nil).Ping(testCtx(t)); err != nil {
		t.Fatalf("SSL listener unhealthy: %v", err)
	}
	healthy(t, s)
}

// garbageClientHello is one complete TLS record (a handshake record of
// 4,091 bytes holding a ClientHello of 4,087) whose body is seeded junk. The
// header and lengths are whole, so the TLS parser reads the ClientHello and
// must reject it; a random header could instead announce a record longer
// than what was sent, and the server would rightly wait for the rest until
// connections.max.idle.ms.
func garbageClientHello(seed uint64) []byte {
	const recLen, helloLen = 4091, 4087
	b := []byte{0x16, 0x03, 0x01, recLen >> 8, recLen & 0xff, 0x01, 0, helloLen >> 8, helloLen & 0xff}
	rng := mrand.New(mrand.NewPCG(seed, seed))
	for len(b) < 5+recLen {
		b = append(b, byte(rng.Uint32()))
	}
	return b
}

func TestSecurityTLSGarbageHandshake(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	for _, l := range []string{"SSL", "SASL_SSL"} {
		r := dialAddr(t, listenerAddr(t, s, l))
		r.write(garbageClientHello(7))
		r.expectClosed()
	}
	waitConns(t, s, 0)
	sslHealthy(t, s, p)
}

func TestSecurityPlaintextToTLSPort(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	r := dialAddr(t, listenerAddr(t, s, "SSL"))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	r.send(req, 1)
	r.expectClosed()
	waitConns(t, s, 0)
	sslHealthy(t, s, p)
}

// TestSecurityClientCertRequired: with ssl.client.auth=required a client
// without a certificate, with an expired one, or with one from another CA
// fails the handshake; one with a valid certificate is served.
func TestSecurityClientCertRequired(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir(), "listener.name.ssl.ssl.client.auth=required")
	other := newTestPKI(t)
	expired := p.clientTLS(t, "")
	der, k := p.issue(t, "old", false, time.Now().Add(-time.Hour))
	expired.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}
	untrusted := p.clientTLS(t, "")
	untrusted.Certificates = other.clientTLS(t, "mallory").Certificates
	for name, cfg := range map[string]*tls.Config{"none": p.clientTLS(t, ""), "expired": expired, "untrusted": untrusted} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", listenerAddr(t, s, "SSL"), cfg)
		if err == nil {
			// TLS 1.3: the client learns of the refusal at its first read.
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Fatalf("%s client certificate: served", name)
		}
	}
	if err := secureClient(t, s, "SSL", p.clientTLS(t, "carol"), nil).Ping(testCtx(t)); err != nil {
		t.Fatalf("valid client certificate: %v", err)
	}
	// The SASL_SSL listener kept the broker-wide ssl.client.auth (none).
	if err := secureClient(t, s, "SASL_SSL", p.clientTLS(t, ""), plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()).Ping(testCtx(t)); err != nil {
		t.Fatalf("SASL_SSL without a client certificate: %v", err)
	}
}

// TestSecurityCertificateReload: a renewed key store file is served to new
// connections without a restart.
func TestSecurityCertificateReload(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	serial := func() string {
		c, err := tls.Dial("tcp", listenerAddr(t, s, "SSL"), p.clientTLS(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	want := p.writeBrokerStore(t, time.Now().Add(48*time.Hour)).String()
	if got := serial(); got != want || got == before {
		t.Fatalf("serial after renewal %s, want %s (before %s)", got, want, before)
	}
	// A broken renewal keeps the last good certificate.
	writePEM(t, p.keyFile, []byte("not PEM"))
	if got := serial(); got != want {
		t.Fatalf("serial after a broken renewal %s, want %s", got, want)
	}
}

func TestSecuritySASLUnknownMechanism(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	r := dialAddr(t, listenerAddr(t, s, "SASL_PLAINTEXT"))
	resp := rawSaslHandshake(r, "GSSAPI")
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Fatalf("handshake answer %+v", resp)
	}
	r.expectClosed()
	waitConns(t, s, 0)
	healthy(t, s)
}

// TestSecurityRequestBeforeAuth: on a SASL listener, a request other than
// ApiVersions and the SASL ones before authentication closes the
// connection unanswered; SaslAuthenticate before SaslHandshake is
// ILLEGAL_SASL_STATE and closes it.
func TestSecurityRequestBeforeAuth(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	r := dialAddr(t, listenerAddr(t, s, "SASL_PLAINTEXT"))
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	if resp := r.roundTrip(av, 1).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions before auth: %d", resp.ErrorCode)
	}
	r.send(kmsg.NewPtrMetadataRequest(), 2)
	r.expectClosed()

	r = dialAddr(t, listenerAddr(t, s, "SASL_PLAINTEXT"))
	if resp := saslAuthenticate(r, []byte("\x00alice\x00alice-secret")); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate before handshake: %d", resp.ErrorCode)
	}
	r.expectClosed()

	// On a PLAINTEXT listener a SaslHandshake is out of place but harmless.
	r = dialAddr(t, listenerAddr(t, s, "PLAINTEXT"))
	if resp := rawSaslHandshake(r, "PLAIN"); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake on PLAINTEXT: %d", resp.ErrorCode)
	}
	if resp := r.roundTrip(av, 3).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatal("PLAINTEXT connection not served after a SaslHandshake")
	}
	waitConns(t, s, 1)
}

// TestSecuritySASLMalformed: a SCRAM token that breaks the grammar, a
// SaslAuthenticate frame whose body does not parse, and an exchange cut
// after the client-first message each cost only their connection.
func TestSecuritySASLMalformed(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	addr := listenerAddr(t, s, "SASL_PLAINTEXT")

	r := dialAddr(t, addr)
	rawSaslHandshake(r, "SCRAM-SHA-256")
	resp := saslAuthenticate(r, []byte("\xff\xfe garbage"))
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "malformed") {
		t.Fatalf("garbage SCRAM token: %+v", resp)
	}
	r.expectClosed()

	r = dialAddr(t, addr)
	rawSaslHandshake(r, "PLAIN")
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, &kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: []byte("\x00alice\x00alice-secret")}, 2)
	frame = frame[:len(frame)-5] // the bytes field's length now overruns the frame
	frame[3] = byte(len(frame) - 4)
	r.write(frame)
	r.expectClosed()

	r = dialAddr(t, addr)
	rawSaslHandshake(r, "SCRAM-SHA-512")
	if resp := saslAuthenticate(r, []byte("n,,n=alice,r=abcdef")); resp.ErrorCode != 0 {
		t.Fatalf("client-first: %d", resp.ErrorCode)
	}
	r.nc.Close() // cut mid-way

	waitConns(t, s, 0)
	healthy(t, s)
}

// TestSecurityWrongPassword1000: a thousand wrong PLAIN passwords, 20
// connections at a time, each answered SASL_AUTHENTICATION_FAILED and
// closed, while an authenticated client keeps being served.
func TestSecurityWrongPassword1000(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	addr := listenerAddr(t, s, "SASL_PLAINTEXT")
	good := secureClient(t, s, "SASL_PLAINTEXT", nil, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	if err := good.ProduceSync(testCtx(t), &kgo.Record{Topic: "guarded", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	before := len(s.conns) // the authenticated client's
	s.mu.Unlock()
	var failed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := wrongPassword(addr); err != nil {
					errs <- err
					return
				}
				failed.Add(1)
			}
		}()
	}
	stop := make(chan struct{})
	go func() { wg.Wait(); close(stop) }()
	served := 0
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		if err := good.ProduceSync(testCtx(t), &kgo.Record{Topic: "guarded", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("authenticated client refused during the storm: %v", err)
		}
		served++
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if failed.Load() != 1000 {
		t.Fatalf("%d refusals, want 1000", failed.Load())
	}
	t.Logf("1000 wrong passwords refused; %d produces served meanwhile", served)
	waitConns(t, s, before)
}

// wrongPassword runs one PLAIN exchange with a wrong password and checks
// it is refused and the connection closed.
func wrongPassword(addr string) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	f := kmsg.NewRequestFormatter()
	b := f.AppendRequest(nil, &kmsg.SASLHandshakeRequest{Version: 1, Mechanism: "PLAIN"}, 1)
	// Two frames in one write (AppendRequest sizes from dst[0]: one each).
	b = append(b, f.AppendRequest(nil, &kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: []byte("\x00alice\x00guess")}, 2)...)
	if _, err := nc.Write(b); err != nil {
		return err
	}
	r := &rawConn{nc: nc}
	if _, err := r.readFrame(); err != nil {
		return fmt.Errorf("reading the handshake answer: %w", err)
	}
	fr, err := r.readFrame()
	if err != nil {
		return fmt.Errorf("reading the authenticate answer: %w", err)
	}
	var resp kmsg.SASLAuthenticateResponse
	resp.Version = 1
	if err := resp.ReadFrom(fr[4:]); err != nil {
		return err
	}
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		return errors.New("wrong password not refused")
	}
	if _, err := r.readFrame(); err == nil {
		return errors.New("connection open after a failed authentication")
	}
	return nil
}

// TestSecuritySASLHandshakeV0: after SaslHandshake v0 the tokens travel as
// bare size-prefixed frames (Kafka's exchange before SaslAuthenticate); a
// good PLAIN token gets an empty frame back and the connection is served,
// a wrong one closes it.
func TestSecuritySASLHandshakeV0(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"\x00alice\x00alice-secret", true}, {"\x00alice\x00guess", false}} {
		r := dialAddr(t, listenerAddr(t, s, "SASL_PLAINTEXT"))
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 0, "PLAIN"
		if resp := r.roundTrip(req, 1).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("handshake v0: %d", resp.ErrorCode)
		}
		frame := append([]byte{0, 0, 0, byte(len(tc.token))}, tc.token...)
		r.write(frame)
		if !tc.ok {
			r.expectClosed()
			continue
		}
		b, err := r.readFrame()
		if err != nil || len(b) != 0 {
			t.Fatalf("raw PLAIN answer %q %v", b, err)
		}
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		if resp := r.roundTrip(md, 2).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
			t.Fatalf("metadata after raw auth: %+v", resp)
		}
	}
}
