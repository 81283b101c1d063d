package security

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestParseJAASKafkaExample(t *testing.T) {
	text := `org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="alice \"quoted\" secret";`
	mods, err := ParseJAAS(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 1 || mods[0].Flag != "required" || mods[0].Options["username"] != "admin" {
		t.Fatalf("parsed %+v", mods)
	}
	users, err := PlainUsers(mods)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 2 || users["alice"] != `alice "quoted" secret` || users["admin"] != "admin-secret" {
		t.Fatalf("users %v", users)
	}
}

func TestParseJAASBad(t *testing.T) {
	for _, text := range []string{
		``,
		`org.Foo`,
		`org.Foo required`,                     // no ';'
		`org.Foo mandatory;`,                   // bad flag
		`org.Foo required a="b`,                // unterminated quote
		`org.Foo required a=;`,                 // no value
		`org.Foo required a b;`,                // no '='
		`"quoted.Class" required;`,             // class quoted
		`org.Foo required user_x="y"; ; org.B`, // stray ';'
	} {
		if _, err := ParseJAAS(text); !errors.Is(err, ErrJAAS) {
			t.Errorf("%q: err %v, want ErrJAAS", text, err)
		}
	}
	mods, err := ParseJAAS(ScramLoginModule + ` required;`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PlainUsers(mods); !errors.Is(err, ErrJAAS) {
		t.Fatalf("PlainUsers without a PLAIN module: %v", err)
	}
}

func TestPlainAuthenticate(t *testing.T) {
	users := map[string]string{"alice": "s3cret"}
	if u, err := PlainAuthenticate([]byte("\x00alice\x00s3cret"), users); err != nil || u != "alice" {
		t.Fatalf("good: %q %v", u, err)
	}
	if u, err := PlainAuthenticate([]byte("alice\x00alice\x00s3cret"), users); err != nil || u != "alice" {
		t.Fatalf("authzid = user: %q %v", u, err)
	}
	for msg, want := range map[string]error{
		"\x00alice\x00wrong":       ErrAuthentication,
		"\x00bob\x00s3cret":        ErrAuthentication,
		"bob\x00alice\x00s3cret":   ErrAuthentication,
		"alice s3cret":             ErrSASLMessage,
		"\x00alice\x00s3cret\x00x": ErrSASLMessage,
		"\x00\x00s3cret":           ErrSASLMessage,
		"\x00alice\x00":            ErrSASLMessage,
	} {
		if _, err := PlainAuthenticate([]byte(msg), users); !errors.Is(err, want) {
			t.Errorf("%q: err %v, want %v", msg, err, want)
		}
	}
}

func TestScramCredentialText(t *testing.T) {
	m, _ := ScramMechanismByName(ScramSHA512)
	c := m.NewCredential("pw", 4096)
	back, err := ParseScramCredential(c.String())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Salt, c.Salt) || !bytes.Equal(back.StoredKey, c.StoredKey) || !bytes.Equal(back.ServerKey, c.ServerKey) || back.Iterations != 4096 {
		t.Fatalf("round trip %+v -> %+v", c, back)
	}
	for _, bad := range []string{"", "salt=AA==", "salt=!!,stored_key=AA==,server_key=AA==,iterations=4096",
		"salt=AA==,stored_key=AA==,server_key=AA==,iterations=x", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096,extra=1"} {
		if _, err := ParseScramCredential(bad); !errors.Is(err, ErrCredential) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// scramRun drives franz-go's SCRAM client against a ScramServer; it returns
// the server's error, if any, and the messages the client sent.
func scramRun(t *testing.T, mech, user, pass string, lookup ScramLookup) (string, [][]byte, error) {
	t.Helper()
	a := scram.Auth{User: user, Pass: pass}
	cm := a.AsSha256Mechanism()
	if mech == ScramSHA512 {
		cm = a.AsSha512Mechanism()
	}
	sess, msg, err := cm.Authenticate(context.Background(), "broker")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewScramServer(mech, lookup)
	if err != nil {
		t.Fatal(err)
	}
	sent := [][]byte{msg}
	for {
		out, done, err := srv.Step(msg)
		if err != nil {
			return "", sent, err
		}
		cdone, next, cerr := sess.Challenge(out)
		if cerr != nil {
			t.Fatalf("client refused the server's message %q: %v", out, cerr)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			return srv.User(), sent, nil
		}
		msg = next
		sent = append(sent, next)
	}
}

func TestScramWithFranzClient(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		m, _ := ScramMechanismByName(mech)
		creds := map[string]ScramCredential{"alice": m.NewCredential("alice-secret", 8192)}
		lookup := func(mm, u string) (ScramCredential, bool) {
			if mm != mech {
				return ScramCredential{}, false
			}
			c, ok := creds[u]
			return c, ok
		}
		user, _, err := scramRun(t, mech, "alice", "alice-secret", lookup)
		if err != nil || user != "alice" {
			t.Fatalf("%s: %q %v", mech, user, err)
		}
		if _, _, err := scramRun(t, mech, "alice", "wrong", lookup); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("%s wrong password: %v", mech, err)
		}
		if _, _, err := scramRun(t, mech, "mallory", "x", lookup); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("%s unknown user: %v", mech, err)
		}
	}
}

// TestScramNonceReplay replays a recorded successful client-final message
// on a new exchange: the server's nonce differs, so it must fail.
func TestScramNonceReplay(t *testing.T) {
	m, _ := ScramMechanismByName(ScramSHA256)
	c := m.NewCredential("pw", 4096)
	lookup := func(string, string) (ScramCredential, bool) { return c, true }
	_, sent, err := scramRun(t, ScramSHA256, "alice", "pw", lookup)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := NewScramServer(ScramSHA256, lookup)
	if _, _, err := srv.Step(sent[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Step(sent[1]); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("replayed client-final: %v", err)
	}
}

func TestScramMalformed(t *testing.T) {
	lookup := func(string, string) (ScramCredential, bool) { return ScramCredential{}, false }
	for _, first := range []string{"", "x", "n", "p=tls-unique,,n=a,r=b", "n,,r=x", "n,,n=a", "n,,n=a,r=", "n,,n=a=ZZ,r=x", "n,b,n=a,r=x", "q,,n=a,r=x", "n,a=bob,n=alice,r=x"} {
		srv, _ := NewScramServer(ScramSHA256, lookup)
		if _, _, err := srv.Step([]byte(first)); err == nil {
			t.Errorf("client-first %q accepted", first)
		}
	}
	srv, _ := NewScramServer(ScramSHA256, lookup)
	if _, _, err := srv.Step([]byte("n,,n=alice,r=abc")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Step([]byte("c=biws,r=abc")); !errors.Is(err, ErrSASLMessage) {
		t.Fatalf("client-final without proof: %v", err)
	}
	if _, _, err := srv.Step([]byte("more")); !errors.Is(err, ErrSASLMessage) {
		t.Fatalf("a third message: %v", err)
	}
	if _, err := NewScramServer("SCRAM-MD5", lookup); !errors.Is(err, ErrMechanism) {
		t.Fatalf("unknown mechanism: %v", err)
	}
}
