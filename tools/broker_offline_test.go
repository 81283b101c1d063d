package tools

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/server"
)

// "strata broker" stops with a non-zero status and says why when every log
// dir has gone offline (as Kafka exits when its last log dir fails): here
// the one log dir's fsyncs fail once armed, and a produce under
// flush.messages=1 hits it.
func TestBrokerExitsWhenEveryLogDirIsOffline(t *testing.T) {
	var armed atomic.Bool
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if armed.Load() && op.Kind == vfs.OpSync {
			return vfs.ErrInjected
		}
		return nil
	})
	startServerHook = func(cfg *server.Config, o *server.Options) (*server.Server, error) {
		o.FS = vfs.Inject(vfs.OS, inj)
		return server.Start(cfg, o)
	}
	defer func() { startServerHook = server.Start }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"strata", "broker", "--override", "listeners=PLAINTEXT://" + addr,
			"--override", "log.dirs=" + filepath.Join(dir, "data"), "--override", "log.flush.interval.messages=1"}, &stdout, &stderr)
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
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
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("produce before the failure: %v", err)
	}
	armed.Store(true)
	cl.Produce(ctx, &kgo.Record{Topic: "t", Value: []byte("after")}, nil) // its fsync fails
	select {
	case code := <-done:
		if code == ExitOK || !strings.Contains(stderr.String(), "every log dir is offline") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("broker still running with every log dir offline; stderr:\n%s", stderr.String())
	}
}
