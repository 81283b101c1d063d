package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHelperClusterBroker is not a test: with STRATA_HELPER_CLUSTER set
// (key=value overrides, one per line) it runs a cluster-mode broker in a
// child process of a cluster test until SIGTERM (Close, then exit 0) or
// SIGKILL. It logs to the file STRATA_HELPER_LOG.
func TestHelperClusterBroker(t *testing.T) {
	spec := os.Getenv("STRATA_HELPER_CLUSTER")
	if spec == "" {
		t.Skip("helper process only")
	}
	lf, err := os.OpenFile(os.Getenv("STRATA_HELPER_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := LoadConfig("", strings.Split(spec, "\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	s, err := Start(cfg, &Options{Logger: log})
	if err != nil {
		log.Error("start failed", "error", err)
		t.Fatal(err)
	}
	<-sigs
	if err := s.Close(); err != nil {
		log.Error("close", "error", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// procBroker is a broker in a child process (kill -9 for real).
type procBroker struct {
	t    testing.TB
	id   int32
	dir  string
	addr string
	log  string
	ov   []string
	cmd  *exec.Cmd
	done chan struct{}
}

// freeAddr reserves a loopback port (closed again: the broker binds it).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newProcBroker prepares broker id of the cluster at connect; start runs it.
func newProcBroker(t testing.TB, connect string, id int32, extra ...string) *procBroker {
	t.Helper()
	dir := t.TempDir()
	b := &procBroker{t: t, id: id, dir: filepath.Join(dir, "data"), addr: freeAddr(t), log: filepath.Join(dir, "broker.log")}
	b.ov = append([]string{"listeners=PLAINTEXT://" + b.addr, "log.dirs=" + b.dir, "strata.metrics.listener=127.0.0.1:0", "zookeeper.connect=" + connect,
		"broker.id=" + strconv.Itoa(int(id)), "zookeeper.session.timeout.ms=4000", "zookeeper.connection.timeout.ms=20000",
		"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "controlled.shutdown.retry.backoff.ms=200",
		"group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=5"}, extra...)
	t.Cleanup(func() {
		b.kill()
		if t.Failed() {
			if data, err := os.ReadFile(b.log); err == nil {
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				t.Logf("broker %d log (last lines of %d):\n%s", id, len(lines), strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
	return b
}

// start runs the broker and waits until it accepts connections.
func (b *procBroker) start() *procBroker {
	b.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClusterBroker$")
	cmd.Env = append(os.Environ(), "STRATA_HELPER_CLUSTER="+strings.Join(b.ov, "\n"), "STRATA_HELPER_LOG="+b.log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(b.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", b.addr)
		if err == nil {
			c.Close()
			return b
		}
		select {
		case <-b.done:
			b.t.Fatalf("broker %d exited at start", b.id)
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("broker %d not listening: %v", b.id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill is kill -9.
func (b *procBroker) kill() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	b.cmd = nil
}

// term is SIGTERM (controlled shutdown) and waits for the exit.
func (b *procBroker) term(timeout time.Duration) {
	b.t.Helper()
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(timeout):
		b.t.Fatalf("broker %d did not stop within %v of SIGTERM", b.id, timeout)
	}
	b.cmd = nil
}

// clusterClient is a franz-go client seeded with every broker's address.
func clusterClient(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadataOf asks the brokers at addrs (the first that answers) for topic's
// metadata.
func metadataOf(t testing.TB, addrs []string, topic string) *kmsg.MetadataResponse {
	t.Helper()
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := kwireDial(ctx, a)
		if err != nil {
			cancel()
			continue
		}
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 11
		if topic != "" {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := c.Request(ctx, req)
		c.Close()
		cancel()
		if err == nil {
			return resp.(*kmsg.MetadataResponse)
		}
	}
	t.Fatalf("no broker of %v answered Metadata", addrs)
	return nil
}
