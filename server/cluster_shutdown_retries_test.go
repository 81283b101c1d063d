package server

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// TestClusterControlledShutdownRetries: a broker whose controlled shutdown
// cannot reach the controller (/controller names broker 999, which never
// registered: no address) makes controlled.shutdown.max.retries attempts,
// controlled.shutdown.retry.backoff.ms apart, then stops anyway (Kafka's
// "unclean shutdown": the controller will see its session go).
func TestClusterControlledShutdownRetries(t *testing.T) {
	_, connect := testZK(t)
	newFakeController(t, connect)
	logs := &msgCounter{n: map[string]int{}}
	s, err := tryClusterBrokerWith(connect, 1, t.TempDir(), &Options{Logger: slog.New(logs)},
		"controlled.shutdown.enable=true", "controlled.shutdown.max.retries=3", "controlled.shutdown.retry.backoff.ms=300")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	waitFor(t, 30*time.Second, "the broker to know the controller's id", func() bool { return s.cl.mem.ControllerID() == 999 })
	start := time.Now()
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Close still waiting for the controlled shutdown after 60 s")
	}
	took := time.Since(start)
	if got := logs.count("controlled shutdown attempt failed"); got != 3 {
		t.Errorf("%d controlled shutdown attempts, want controlled.shutdown.max.retries=3", got)
	}
	if got := logs.count("proceeding to an unclean shutdown: every controlled shutdown attempt failed"); got != 1 {
		t.Errorf("unclean shutdown logged %d times, want 1", got)
	}
	if took < 600*time.Millisecond {
		t.Errorf("Close took %v: three attempts 300 ms apart take at least 600 ms", took)
	}
}

// msgCounter is a slog.Handler counting the messages logged at info or
// above.
type msgCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *msgCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *msgCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n[r.Message]++
	h.mu.Unlock()
	return nil
}

func (h *msgCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *msgCounter) WithGroup(string) slog.Handler      { return h }

func (h *msgCounter) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}
