package cluster_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
)

// testLog is a logger whose lines go to t.Log while the test runs (and
// nowhere after), so a failure shows the members' story.
func testLog(t testing.TB) *slog.Logger {
	w := &tlogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tlogWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *tlogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// memberConfig is a member of broker id with a test broker's endpoint.
func memberConfig(t testing.TB, zk cluster.ZK, b *testBroker) cluster.MemberConfig {
	return cluster.MemberConfig{ZK: zk, BrokerID: b.id, Endpoints: []cluster.Endpoint{b.endpoint()},
		Logger: testLog(t).With("member", b.id), ControllerSocketTimeout: 10 * time.Second, StartTimeout: 10 * time.Second}
}

func startMember(t testing.TB, cfg cluster.MemberConfig) *cluster.Member {
	t.Helper()
	m, err := cluster.StartMember(cfg)
	if err != nil {
		t.Fatalf("StartMember(broker %d): %v", cfg.BrokerID, err)
	}
	t.Cleanup(m.Close)
	return m
}

// controllerOf returns the member that is the active controller, nil if
// none (or more than one: then it fails).
func controllerOf(t testing.TB, ms []*cluster.Member) *cluster.Member {
	t.Helper()
	var c *cluster.Member
	for _, m := range ms {
		if m != nil && m.IsController() {
			if c != nil {
				t.Fatalf("brokers %d and %d both active controllers", c.BrokerID(), m.BrokerID())
			}
			c = m
		}
	}
	return c
}

// allLed tells whether every partition of topic has a state whose leader
// is in live, read through admin.
func allLed(t testing.TB, admin *cluster.Admin, topic string, partitions int, live map[int32]bool) bool {
	t.Helper()
	for p := 0; p < partitions; p++ {
		st, err := admin.PartitionState(topic, int32(p))
		if err != nil || st == nil || !live[st.Leader] {
			return false
		}
	}
	return true
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
