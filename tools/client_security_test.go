package tools

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA writes a CA certificate and a broker key store (key and
// certificate for 127.0.0.1) as PEM files and returns their paths.
func testCA(t *testing.T) (caFile, storeFile string) {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, bKey := key(), key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tools test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	b := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	bDER, err := x509.CreateCertificate(rand.Reader, b, caCert, &bKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(bKey)
	caFile, storeFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "broker.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	store := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: bDER})...)
	if err := os.WriteFile(storeFile, store, 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, storeFile
}

// TestClientSubcommandsOverSASLSSL: every client subcommand family reaches
// a broker whose only usable listener is SASL_SSL (ACLs on, the SASL user
// admin the only super user, so the PLAINTEXT listener's ANONYMOUS may do
// nothing) through --command-config with Kafka's client properties: PLAIN
// and SCRAM-SHA-256 over TLS with a PEM trust store. A wrong password
// fails each with an authentication error.
func TestClientSubcommandsOverSASLSSL(t *testing.T) {
	ca, store := testCA(t)
	s := startBroker(t, t.TempDir(), "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"ssl.keystore.type=PEM", "ssl.keystore.location="+store,
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:admin;User:scrammer",
		"connection.failed.authentication.delay.ms=10")
	addr := s.ListenerAddr("SASL_SSL").String()
	props := func(mech, module, user, pass string) string {
		return writeProps(t, "bootstrap.servers="+addr+"\nsecurity.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location="+ca+
			"\nsasl.mechanism="+mech+"\nsasl.jaas.config="+module+` required username="`+user+`" password="`+pass+`";`+"\n")
	}
	plainCfg := props("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", "admin", "admin-secret")
	badCfg := props("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", "admin", "wrong")

	must := func(want string, args ...string) {
		t.Helper()
		out, errOut, code := run(t, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("%v: exit %d\nstdout %q\nstderr %q", args, code, out, errOut)
		}
	}
	must("Created topic t.", "topics", "--command-config", plainCfg, "--create", "--topic", "t", "--partitions", "2")
	must("t\n", "topics", "--command-config", plainCfg, "--list")
	must("PartitionCount: 2", "topics", "--command-config", plainCfg, "--describe", "--topic", "t")
	must("", "groups", "--command-config", plainCfg, "--list")
	must("Completed updating config for user scrammer", "configs", "--command-config", plainCfg, "--alter", "--entity-type", "users",
		"--entity-name", "scrammer", "--add-config", "SCRAM-SHA-256=[password=scram-secret]")
	must("added: ", "acls", "--command-config", plainCfg, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "t")
	must("User:bob has ALLOW permission for READ", "acls", "--command-config", plainCfg, "--list")
	must(`"brokers":[{"broker":`, "log-dirs", "--command-config", plainCfg, "--describe")
	// a single node has no ElectLeaders nor reassignments: the answer is
	// the broker's ApiVersions read over SASL_SSL, not a connection error
	for _, args := range [][]string{
		{"elect-leaders", "--election-type", "preferred", "--all-topic-partitions"},
		{"reassign", "--verify", "--reassignment-json-file", writeProps(t, `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`)},
	} {
		_, errOut, code := run(t, append(args, "--command-config", plainCfg)...)
		if code == 0 || !strings.Contains(errOut, "does not support") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// SCRAM with the credential just stored
	scramCfg := props("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule", "scrammer", "scram-secret")
	must("t\n", "topics", "--command-config", scramCfg, "--list")
	must("SCRAM-SHA-256=iterations=4096", "configs", "--command-config", scramCfg, "--describe", "--entity-type", "users")

	// the wrong password: each family fails, saying why
	for _, args := range [][]string{
		{"topics", "--list", "--timeout", "5000"},
		{"groups", "--list", "--timeout", "5000"},
		{"acls", "--list"},
		{"configs", "--describe", "--entity-type", "users"},
		{"log-dirs", "--describe", "--timeout", "5s"},
	} {
		_, errOut, code := run(t, append(args, "--command-config", badCfg)...)
		if code == 0 || !strings.Contains(strings.ToUpper(errOut), "SASL_AUTHENTICATION_FAILED") {
			t.Errorf("%v with a wrong password: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// TestMirrorOverSASLSSL: the mirror reads the source through its SASL_SSL
// listener and writes the target through its SASL_SSL listener, both
// secured by the properties of --consumer.config and --producer.config.
func TestMirrorOverSASLSSL(t *testing.T) {
	ca, store := testCA(t)
	secure := func() (plainAddr, saslAddr string) {
		s := startBroker(t, t.TempDir(), "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "group.initial.rebalance.delay.ms=0",
			"ssl.keystore.type=PEM", "ssl.keystore.location="+store, "sasl.enabled.mechanisms=PLAIN",
			`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`)
		return s.Addr().String(), s.ListenerAddr("SASL_SSL").String()
	}
	srcPlain, srcSASL := secure()
	dstPlain, dstSASL := secure()
	sec := "security.protocol=SASL_SSL\nssl.truststore.location=" + ca + "\nsasl.mechanism=PLAIN\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";` + "\n"
	createTopic(t, srcPlain, "orders", 2)
	sent := produceOrders(t, srcPlain, "orders", 200, 10, 2)
	opts := testMirrorOptions(t, "", "", "orders")
	if err := opts.consumerProperties(writeProps(t, "bootstrap.servers="+srcSASL+"\n"+sec)); err != nil {
		t.Fatal(err)
	}
	if err := opts.producerProperties(writeProps(t, "bootstrap.servers="+dstSASL+"\n"+sec)); err != nil {
		t.Fatal(err)
	}
	r := startMirror(t, opts)
	waitFor(t, 60*time.Second, "the target to hold every record", func() bool { return endOffsets(t, dstPlain, "orders") == int64(len(sent)) }, r.stderr.String)
	if err := r.stop(t); err != nil {
		t.Fatalf("mirror: %v\n%s", err, r.stderr.String())
	}
}
