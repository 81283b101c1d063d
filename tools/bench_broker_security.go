package tools

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// benchSecurity is bench broker's --security-protocol for the in-process
// broker: a listener of that protocol beside PLAINTEXT, a throwaway CA and
// broker certificate made for the run (never written outside its
// temporary directory), and one SASL user.
type benchSecurity struct {
	protocol, mechanism string
	roots               *x509.CertPool
}

const (
	benchUser = "bench"
	benchPass = "bench-secret"
)

func parseBenchSecurity(protocol, mechanism string) (*benchSecurity, error) {
	protocol, mechanism = strings.ToUpper(protocol), strings.ToUpper(mechanism)
	switch protocol {
	case "", "PLAINTEXT":
		return nil, nil
	case "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, usageErr("--security-protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not %q", protocol)
	}
	switch mechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return nil, usageErr("--sasl-mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, not %q", mechanism)
	}
	return &benchSecurity{protocol: protocol, mechanism: mechanism}, nil
}

func (b *benchSecurity) tls() bool  { return b.protocol == "SSL" || b.protocol == "SASL_SSL" }
func (b *benchSecurity) sasl() bool { return strings.HasPrefix(b.protocol, "SASL_") }

// overrides are the broker properties of the secure listener; the key
// store is made in dir.
func (b *benchSecurity) overrides(dir string) ([]string, error) {
	ov := []string{"listeners=PLAINTEXT://127.0.0.1:0," + b.protocol + "://127.0.0.1:0"}
	if b.tls() {
		ks, err := b.makeKeyStore(dir)
		if err != nil {
			return nil, err
		}
		ov = append(ov, "ssl.keystore.type=PEM", "ssl.keystore.location="+ks)
	}
	if b.sasl() {
		ov = append(ov, "sasl.enabled.mechanisms="+b.mechanism,
			"listener.name."+strings.ToLower(b.protocol)+".plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_"+benchUser+"=\""+benchPass+"\";")
	}
	return ov, nil
}

// makeKeyStore writes a PEM key store for 127.0.0.1 signed by a new CA.
func (b *benchSecurity) makeKeyStore(dir string) (string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata bench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "strata bench broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	p := filepath.Join(dir, "bench-broker.pem")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		return "", err
	}
	b.roots = x509.NewCertPool()
	b.roots.AddCert(caCert)
	return p, nil
}

// clientOpts are the driver's connection options for the secure listener.
func (b *benchSecurity) clientOpts() []kgo.Opt {
	var o []kgo.Opt
	if b.tls() {
		o = append(o, kgo.DialTLSConfig(&tls.Config{RootCAs: b.roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}))
	}
	if b.sasl() {
		var m sasl.Mechanism
		switch b.mechanism {
		case "PLAIN":
			m = plain.Auth{User: benchUser, Pass: benchPass}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: benchUser, Pass: benchPass}.AsSha256Mechanism()
		default:
			m = scram.Auth{User: benchUser, Pass: benchPass}.AsSha512Mechanism()
		}
		o = append(o, kgo.SASL(m))
	}
	return o
}

// addUser gives the bench user a SCRAM credential (through the PLAINTEXT
// listener at plainAddr) when the mechanism is SCRAM.
func (b *benchSecurity) addUser(plainAddr string) error {
	if !b.sasl() || b.mechanism == "PLAIN" {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(plainAddr))
	if err != nil {
		return err
	}
	defer cl.Close()
	mech := kadm.ScramSha256
	if b.mechanism == "SCRAM-SHA-512" {
		mech = kadm.ScramSha512
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: benchUser, Mechanism: mech, Iterations: 4096, Password: benchPass}})
	if err != nil {
		return err
	}
	return res.Error()
}

func (b *benchSecurity) String() string {
	if b.sasl() {
		return fmt.Sprintf("%s/%s", b.protocol, b.mechanism)
	}
	return b.protocol
}
