package tools

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBrokerCommand starts "strata broker" in-process, waits for it to
// accept connections, stops it with SIGTERM and checks a clean exit.
func TestBrokerCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("listeners=PLAINTEXT://127.0.0.1:1\nnum.partitions=2\nsome.unknown.key=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"strata", "broker", "--config", props,
			"--override", "listeners=PLAINTEXT://" + addr,
			// A comma inside a value is the value's (Kafka's list syntax),
			// not a second --override.
			"--override", "log.dirs=" + filepath.Join(dir, "data") + "," + filepath.Join(dir, "data2")}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case code := <-done:
			t.Fatalf("broker exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker not listening: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("broker did not stop on SIGTERM")
	}
	for _, d := range []string{"data", "data2"} {
		if _, err := os.Stat(filepath.Join(dir, d, "meta.properties")); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"listening", addr, "some.unknown.key", "shut down cleanly"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestBrokerCommandBadConfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{
		{"--override", "num.partitions=0"},
		{"--config", filepath.Join(t.TempDir(), "missing.properties")},
		{"--override", "novalue"},
		{"extra-arg"},
	} {
		code := Main(append([]string{"strata", "broker"}, args...), &stdout, &stderr)
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
	}
}

// TestBrokerCommandZooKeeperDown: with zookeeper.connect naming a port
// nothing listens on, "strata broker" gives up after
// zookeeper.connection.timeout.ms, says so and exits non-zero.
func TestBrokerCommandZooKeeperDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	zk := ln.Addr().String()
	ln.Close()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := Main([]string{"strata", "broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
		"--override", "log.dirs=" + t.TempDir(), "--override", "zookeeper.connect=" + zk,
		"--override", "zookeeper.connection.timeout.ms=1000"}, &stdout, &stderr)
	if code == ExitOK || !strings.Contains(stderr.String(), "zookeeper.connection.timeout.ms") || !strings.Contains(stderr.String(), zk) {
		t.Fatalf("exit %d after %v:\n%s", code, time.Since(start), stderr.String())
	}
}
