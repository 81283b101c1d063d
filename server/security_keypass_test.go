package server

import (
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/security"
)

// encryptedBrokerStore rewrites the PKI's broker key store with its key
// encrypted by `openssl pkcs8 -topk8 -v2 aes-256-cbc` under password.
func encryptedBrokerStore(t *testing.T, p *testPKI, password string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed (security.TestDecryptPKCS8 covers the decryption without it)")
	}
	b, err := os.ReadFile(p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var key, chain []byte
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		if blk.Type == "PRIVATE KEY" {
			key = pem.EncodeToMemory(blk)
		} else {
			chain = append(chain, pem.EncodeToMemory(blk)...)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain.pem")
	writePEM(t, plain, key)
	enc, err := exec.Command("openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", plain, "-passout", "pass:"+password).Output()
	if err != nil || !strings.Contains(string(enc), "ENCRYPTED PRIVATE KEY") {
		t.Fatalf("openssl: %v %s", err, enc)
	}
	writePEM(t, p.keyFile, append(enc, chain...))
}

// TestEncryptedKeyStore: a PEM key store whose key is encrypted PKCS#8
// (openssl pkcs8 -topk8 -v2 aes-256-cbc) serves TLS with ssl.key.password;
// a wrong password, no password, and a password with an unencrypted key
// each stop the start with an error naming the cause.
func TestEncryptedKeyStore(t *testing.T) {
	p := newTestPKI(t)
	unencrypted, err := os.ReadFile(p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	encryptedBrokerStore(t, p, "key-secret")
	s := startSecure(t, p, t.TempDir(), "ssl.key.password=key-secret")
	roundTripRecords(t, func(opts ...kgo.Opt) *kgo.Client { return secureClient(t, s, "SSL", p.clientTLS(t, ""), nil, opts...) }, "t", 3)

	start := func(extra ...string) error {
		cfg, err := LoadConfig("", append([]string{"listeners=SSL://127.0.0.1:0", "log.dirs=" + t.TempDir(),
			"ssl.keystore.location=" + p.keyFile}, extra...), nil)
		if err != nil {
			return err
		}
		s, err := Start(cfg, &Options{Logger: testLogger()})
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := start("ssl.key.password=wrong"); !errors.Is(err, security.ErrKeyPassword) || !strings.Contains(err.Error(), "ssl.key.password") {
		t.Errorf("wrong password: %v", err)
	}
	if err := start(); !errors.Is(err, security.ErrPEM) || !strings.Contains(err.Error(), "set ssl.key.password") {
		t.Errorf("no password: %v", err)
	}
	writePEM(t, p.keyFile, unencrypted)
	if err := start("ssl.key.password=key-secret"); !errors.Is(err, security.ErrPEM) || !strings.Contains(err.Error(), "not encrypted") {
		t.Errorf("password with an unencrypted key: %v", err)
	}
}
