package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a certificate authority made in the test, its certificates
// written as PEM files (no private key is committed anywhere).
type testPKI struct {
	dir     string
	caCert  *x509.Certificate
	caKey   *ecdsa.PrivateKey
	caFile  string // the CA's certificate: the clients' and broker's trust store
	keyFile string // the broker's key store: key and certificate chain in one PEM file
}

func newSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	return n.Add(n, big.NewInt(1))
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	p.caKey = mustKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "strata test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.caFile = filepath.Join(p.dir, "ca.pem")
	writePEM(t, p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	p.keyFile = filepath.Join(p.dir, "broker.pem")
	p.writeBrokerStore(t, time.Now().Add(24*time.Hour))
	return p
}

func mustKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // atomic: a reload never sees half a file
		t.Fatal(err)
	}
}

// issue signs a certificate for subject (server: for 127.0.0.1 and
// localhost) and returns its DER and key.
func (p *testPKI) issue(t testing.TB, cn string, server bool, notAfter time.Time) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	k := mustKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: cn, OrganizationalUnit: []string{"test"}},
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if server {
		// a broker presents it as client too (inter-broker TLS)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &k.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, k
}

func keyPEM(t testing.TB, k *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
}

// writeBrokerStore (re)writes the broker's PEM key store with a new
// certificate and returns its serial number.
func (p *testPKI) writeBrokerStore(t testing.TB, notAfter time.Time) *big.Int {
	der, k := p.issue(t, "broker", true, notAfter)
	b := keyPEM(t, k)
	b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	writePEM(t, p.keyFile, b)
	c, _ := x509.ParseCertificate(der)
	return c.SerialNumber
}

// clientFiles writes a client certificate and key (for kcat) and returns
// their paths.
func (p *testPKI) clientFiles(t testing.TB, cn string, notAfter time.Time) (certFile, keyFile string) {
	der, k := p.issue(t, cn, false, notAfter)
	certFile = filepath.Join(p.dir, cn+".crt")
	keyFile = filepath.Join(p.dir, cn+".key")
	writePEM(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writePEM(t, keyFile, keyPEM(t, k))
	return certFile, keyFile
}

// clientTLS is a client configuration trusting the CA, with a client
// certificate for cn when cn is not empty.
func (p *testPKI) clientTLS(t testing.TB, cn string) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cn != "" {
		der, k := p.issue(t, cn, false, time.Now().Add(time.Hour))
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}
	}
	return cfg
}
