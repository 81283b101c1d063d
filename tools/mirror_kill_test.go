package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// mirrorProcess is "strata mirror" run as a child process of the test binary.
type mirrorProcess struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
}

func startMirrorProcess(t *testing.T, args ...string) *mirrorProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &mirrorProcess{stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, append([]string{"mirror"}, args...)...)
	p.cmd.Env = append(os.Environ(), "STRATA_TOOLS_MAIN=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// signal sends sig and waits for the process to exit; it returns the exit code.
func (p *mirrorProcess) signal(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("mirror did not exit within 90s of %v\n%s", sig, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// keyedProducer writes keyed records to topics until stopped, then `tail`
// more batches, remembering every acknowledged record in produce order.
type keyedProducer struct {
	mu   sync.Mutex
	sent map[string][]*kgo.Record
	stop chan struct{}
	done chan error
}

func startKeyedProducer(t *testing.T, addr string, topics []string, tail int) *keyedProducer {
	t.Helper()
	cl := testClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	kp := &keyedProducer{sent: map[string][]*kgo.Record{}, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		left := -1
		for i := 0; left != 0; i++ {
			select {
			case <-kp.stop:
				if left < 0 {
					left = tail
				}
			default:
			}
			if left > 0 {
				left--
			}
			var batch []*kgo.Record
			for _, topic := range topics {
				for j := range 50 {
					n := i*50 + j
					batch = append(batch, &kgo.Record{Topic: topic, Partition: int32(n%20) % 2,
						Key: fmt.Appendf(nil, "k%d", n%20), Value: fmt.Appendf(nil, "%s-%d", topic, n),
						Headers: []kgo.RecordHeader{{Key: "seq", Value: fmt.Appendf(nil, "%d", n)}}})
				}
			}
			if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				kp.done <- err
				return
			}
			kp.mu.Lock()
			for _, r := range batch {
				kp.sent[r.Topic] = append(kp.sent[r.Topic], r)
			}
			kp.mu.Unlock()
			time.Sleep(5 * time.Millisecond) // pacing, so the mirror is killed mid-stream
		}
		kp.done <- nil
	}()
	return kp
}

func (kp *keyedProducer) finish(t *testing.T) map[string][]*kgo.Record {
	t.Helper()
	close(kp.stop)
	if err := <-kp.done; err != nil {
		t.Fatalf("source producer: %v", err)
	}
	return kp.sent
}

// TestMirrorSIGKILL mirrors two topics between two brokers while a producer
// writes keyed records, SIGKILLs the mirror process mid-stream, starts a new
// one on the same group and stops it with SIGTERM once the group has
// committed up to the end: the target holds every acknowledged source record
// at least once with per-key order kept, the second mirror exits 0 and its
// progress lines show records and lag.
func TestMirrorSIGKILL(t *testing.T) {
	src, dst := mirrorBroker(t), mirrorBroker(t)
	topics := []string{"alpha", "beta"}
	for _, topic := range topics {
		createTopic(t, src, topic, 2)
	}
	cfg := filepath.Join(t.TempDir(), "consumer.properties")
	props := "bootstrap.servers=" + src + "\ngroup.id=mirror-kill\nsession.timeout.ms=6000\nheartbeat.interval.ms=500\nmax.poll.records=500\n"
	if err := os.WriteFile(cfg, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--consumer.config", cfg, "--target-bootstrap", dst, "--whitelist", "alpha,beta",
		"--num.streams", "2", "--topic-refresh", "200ms", "--progress", "200ms"}

	kp := startKeyedProducer(t, src, topics, 40)
	first := startMirrorProcess(t, args...)
	waitFor(t, 90*time.Second, "the first mirror to deliver 2000 records",
		func() bool { return endOffsets(t, dst, topics...) >= 2000 }, first.stderr.String)
	if code := first.signal(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILLed mirror exit code %d", code)
	}
	killedAt := endOffsets(t, dst, topics...)

	second := startMirrorProcess(t, args...)
	sent := kp.finish(t)
	total := 0
	for _, recs := range sent {
		total += len(recs)
	}
	if int64(total) <= killedAt {
		t.Fatalf("the mirror was killed after the producer's last record (%d on the target, %d sent)", killedAt, total)
	}
	waitFor(t, 120*time.Second, "the second mirror's group to commit up to the end",
		func() bool { return groupCaughtUp(t, src, "mirror-kill", topics...) }, second.stderr.String)
	if code := second.signal(t, syscall.SIGTERM); code != ExitOK {
		t.Fatalf("SIGTERM: exit %d, want 0\n%s", code, second.stderr.String())
	}
	log := second.stderr.String()
	if !strings.Contains(log, "records mirrored (") || !strings.Contains(log, ", lag ") || !strings.Contains(log, "mirror: stopped:") {
		t.Errorf("no progress or stop line on stderr:\n%s", log)
	}
	t.Logf("%d records sent, %d on the target when the first mirror was killed", total, killedAt)
	for _, topic := range topics {
		checkAtLeastOnceInOrder(t, sent[topic], readAll(t, dst, topic))
	}
	if !groupCaughtUp(t, src, "mirror-kill", topics...) {
		t.Errorf("after SIGTERM the group's offsets are not at the end")
	}
}
