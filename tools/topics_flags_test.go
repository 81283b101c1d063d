package tools

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unreachable is a bootstrap address nothing listens on: a bad command line
// must be refused before the tool tries to connect, with its own message.
const unreachable = "127.0.0.1:1"

// TestTopicsUsage: every bad flag combination or value exits 2 with a
// message naming the problem (Kafka's where Kafka has one), before any
// connection is tried.
func TestTopicsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap-server", unreachable}, "give exactly one of --list, --describe, --create, --alter or --delete"},
		{[]string{"--bootstrap-server", unreachable, "--list", "--describe"}, "give exactly one of"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--partitions", "1"}, "--create needs --topic"},
		{[]string{"--bootstrap-server", unreachable, "--delete"}, "--delete needs --topic"},
		{[]string{"--bootstrap-server", unreachable, "--alter", "--topic", "t"}, "--alter needs --partitions"},
		{[]string{"--bootstrap-server", unreachable, "--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"}, "IncrementalAlterConfigs"},
		{[]string{"--bootstrap-server", unreachable, "--alter", "--topic", "t", "--partitions", "2", "--replication-factor", "2"}, "--replication-factor does not go with --alter"},
		{[]string{"--bootstrap-server", unreachable, "--list", "--partitions", "2"}, "--partitions does not go with --list"},
		{[]string{"--bootstrap-server", unreachable, "--delete", "--topic", "t", "--if-not-exists"}, "--if-not-exists does not go with --delete"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--if-exists"}, "--if-exists does not go with --create"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--exclude-internal"}, "--exclude-internal does not go with --create"},
		{[]string{"--bootstrap-server", unreachable, "--list", "--under-replicated-partitions"}, "--under-replicated-partitions does not go with --list"},
		{[]string{"--bootstrap-server", unreachable, "--describe", "--topics-with-overrides", "--unavailable-partitions"}, "--topics-with-overrides does not go with --unavailable-partitions"},
		{[]string{"--bootstrap-server", unreachable, "--describe", "--if-exists"}, "--describe --if-exists needs --topic"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replica-assignment", "1", "--partitions", "1"}, "--replica-assignment does not go with --partitions or --replication-factor"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replication-factor", "0"}, "The replication factor must be between 1 and 32767 inclusive"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replication-factor", "32768"}, "The replication factor must be between 1 and 32767 inclusive"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--partitions", "0"}, "The partitions must be greater than 0"},
		{[]string{"--bootstrap-server", unreachable, "--alter", "--topic", "t", "--partitions", "-1"}, "The partitions must be greater than 0"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--config", "retention.ms"}, `Invalid topic config: all configs to be added must be in the format "key=val".`},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--config", "a=b=c"}, "Invalid topic config"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--config", "=v"}, "Invalid topic config"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--config", "k= "}, "Invalid topic config"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replica-assignment", "1:2:1"}, "Partition replica lists may not contain duplicate entries: 1"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replica-assignment", "1:2,3"}, "Partition 1 has different replication factor: [3]"},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replica-assignment", "1:x"}, `partition 0: "x" is not a broker id`},
		{[]string{"--bootstrap-server", unreachable, "--create", "--topic", "t", "--replica-assignment", "1,,2"}, `partition 1: "" is not a broker id`},
		{[]string{"--bootstrap-server", unreachable, "--alter", "--topic", "t", "--partitions", "3", "--replica-assignment", "1:2,2"}, "Partition 1 has different replication factor: [2]"},
		{[]string{"--bootstrap-server", unreachable, "--alter", "--topic", "t", "--partitions", "3", "--replica-assignment", "1:2,2:3"}, "--replica-assignment lists 2 partitions and --partitions asks for 3"},
		{[]string{"--bootstrap-server", unreachable, "--list", "--topic", "a[b"}, "--topic a[b is an invalid regex"},
		{[]string{"--bootstrap-server", unreachable, "--zookeeper", "127.0.0.1:2181", "--list"}, "Only one of --bootstrap-server or --zookeeper must be specified"},
		{[]string{"--zookeeper", unreachable, "--list", "--timeout", "300"}, "cannot reach ZooKeeper at " + unreachable},
		{[]string{"--zookeeper", "127.0.0.1:2181/a//b", "--list"}, "--zookeeper: cluster: bad zookeeper.connect"},
		{[]string{"--zookeeper", "127.0.0.1:2181/kafka", "--create", "--topic", "t", "--partitions", "1"}, "--create with --zookeeper needs --partitions and --replication-factor"},
		{[]string{"--zookeeper", "127.0.0.1:2181", "--command-config", "x.properties", "--list"}, "--command-config goes with --bootstrap-server"},
		{[]string{"--list"}, "--bootstrap-server must be specified"},
		{[]string{"--bootstrap-server", unreachable, "--list", "extra"}, `topics takes no arguments, got "extra"`},
		{[]string{"--bootstrap-server", unreachable, "--list", "--timeout", "0"}, "--timeout must be positive"},
		{[]string{"--bootstrap-server", unreachable, "--list", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"--bootstrap-server", unreachable, "--list", "--timeout", "5000"}, "cannot reach a broker at 127.0.0.1:1"},
	} {
		r := runTopicsCmd(t, "", c.args...)
		// urfave/cli prints the usage on stdout after an unknown flag.
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) || r.stdout != "" && !strings.Contains(c.want, "not defined") {
			t.Errorf("strata topics %s: exit %d, stdout %q, stderr %q; want exit 2 and %q",
				strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.want)
		}
	}
}

func writeProps(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTopicsCommandConfig: --command-config gives the bootstrap servers
// (--bootstrap-server wins), warns about keys it does not know and refuses
// security settings it cannot honour, naming them.
func TestTopicsCommandConfig(t *testing.T) {
	addr := startBroker(t, t.TempDir()).Addr().String()
	ok := writeProps(t, "# admin client\nbootstrap.servers = "+addr+"\nclient.id=ops-tool\nrequest.timeout.ms=30000\nlinger.ms=5\nsecurity.protocol=PLAINTEXT\n")
	r := mustTopics(t, ExitOK, "", "--command-config", ok, "--create", "--topic", "cc", "--partitions", "1")
	if r.stdout != "Created topic cc.\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "the configuration 'linger.ms' was supplied but isn't a known config") || strings.Contains(r.stderr, "request.timeout.ms") {
		t.Errorf("stderr %q: want a warning for linger.ms only", r.stderr)
	}
	// --bootstrap-server wins over the file's bootstrap.servers.
	wrong := writeProps(t, "bootstrap.servers="+unreachable+"\n")
	if r := mustTopics(t, ExitOK, addr, "--command-config", wrong, "--list"); r.stdout != "cc\n" {
		t.Errorf("--list: %q", r.stdout)
	}
	for _, c := range []struct{ props, want string }{
		// security settings that cannot work are usage errors before any connection
		{"security.protocol=TLS\n", "security.protocol=TLS: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"},
		{"security.protocol=SASL_SSL\n", "sasl.mechanism=GSSAPI"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", "sasl.jaas.config"},
		{"security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/etc/ts.jks\n", "PEM stores only"},
		{"security.protocol=SSL\nssl.truststore.location=/nonexistent/ts.pem\n", "ssl.truststore.location"},
	} {
		p := writeProps(t, "bootstrap.servers="+addr+"\n"+c.props)
		if r := runTopicsCmd(t, "", "--command-config", p, "--list"); r.code != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.props, r.code, r.stderr, c.want)
		}
	}
	if r := runTopicsCmd(t, "", "--command-config", filepath.Join(t.TempDir(), "missing.properties"), "--list"); r.code != ExitUsage || !strings.Contains(r.stderr, "--command-config") {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestTopicsClientID: the client.id of --command-config is the one the
// broker sees in the request header (read here off a real socket).
func TestTopicsClientID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ids := make(chan string, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				// size, api key, api version, correlation id, client id (int16 length).
				var hdr [14]byte
				if _, err := io.ReadFull(conn, hdr[:]); err != nil {
					return
				}
				n := int(int16(binary.BigEndian.Uint16(hdr[12:])))
				if n < 0 || n > 1000 {
					return
				}
				id := make([]byte, n)
				if _, err := io.ReadFull(conn, id); err == nil {
					ids <- string(id)
				}
			}()
		}
	}()
	p := writeProps(t, "bootstrap.servers="+ln.Addr().String()+"\nclient.id=ops-tool\n")
	if r := runTopicsCmd(t, "", "--command-config", p, "--list", "--timeout", "1000"); r.code != ExitUsage {
		t.Errorf("a broker that hangs up: exit %d, want 2; stderr %q", r.code, r.stderr)
	}
	select {
	case id := <-ids:
		if id != "ops-tool" {
			t.Errorf("client id %q, want ops-tool", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the listener")
	}
}
