package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// mirrorBroker starts an in-process broker whose groups rebalance at once.
func mirrorBroker(t *testing.T, overrides ...string) string {
	t.Helper()
	s := startBroker(t, t.TempDir(), append([]string{"group.initial.rebalance.delay.ms=0"}, overrides...)...)
	return s.Addr().String()
}

// testMirrorOptions is the configuration the CLI builds from
// --source-bootstrap src --target-bootstrap dst --whitelist wl, with a quick
// topic refresh and no progress lines.
func testMirrorOptions(t *testing.T, src, dst, wl string) mirrorOptions {
	t.Helper()
	re, err := mirrorTopicFilter("whitelist", wl)
	if err != nil {
		t.Fatal(err)
	}
	return mirrorOptions{source: []string{src}, target: []string{dst}, group: "mirror-test", include: re,
		streams: 1, earliest: true, topicRefresh: 100 * time.Millisecond, shutdown: 30 * time.Second,
		consumerOpts: []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond)}}
}

// runningMirror is an in-process mirror started by startMirror.
type runningMirror struct {
	m      *mirror
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startMirror runs a mirror in process until stop (or the test's end).
func startMirror(t *testing.T, opts mirrorOptions) *runningMirror {
	t.Helper()
	r := &runningMirror{stderr: &syncBuffer{}, done: make(chan error, 1)}
	m, err := newMirror(opts, r.stderr)
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- m.run(ctx) }()
	t.Cleanup(func() { _ = r.stop(t) })
	return r
}

// stop cancels the mirror and returns what run returned.
func (r *runningMirror) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("the mirror did not stop within 60s\n%s", r.stderr.String())
		return nil
	}
}

// testClient is a franz-go client for the tests' own produce and admin calls.
func testClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(),
		kgo.RetryTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(testClient(t, addr)).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, addr, err)
	}
}

// endOffsets sums the end offsets of topics on addr (0 for a missing topic).
func endOffsets(t *testing.T, addr string, topics ...string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(testClient(t, addr)).ListEndOffsets(ctx, topics...)
	if err != nil {
		return -1
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// groupCaughtUp reports whether group's committed offsets on addr equal the
// end offset of every partition of topics.
func groupCaughtUp(t *testing.T, addr, group string, topics ...string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(testClient(t, addr))
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return false
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		c, found := committed.Lookup(o.Topic, o.Partition)
		if o.Err != nil || (o.Offset > 0 && (!found || c.At != o.Offset)) {
			ok = false
		}
	})
	return ok
}

// committedTotal sums group's committed offsets on addr.
func committedTotal(t *testing.T, addr, group string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	committed, err := kadm.NewClient(testClient(t, addr)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	var n int64
	committed.Each(func(o kadm.OffsetResponse) { n += o.At })
	return n
}

// waitFor polls cond every 20ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool, extra func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if extra != nil {
				msg = extra()
			}
			t.Fatalf("timed out after %v waiting for %s\n%s", d, what, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readAll consumes every record of topic on addr from the start, up to the
// end offsets listed first.
func readAll(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	want := endOffsets(t, addr, topic)
	cl := testClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s on %s", len(out), want, topic, addr)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// recordText is a record's mirrored content: key, value, headers, timestamp.
func recordText(r *kgo.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "key=%q value=%q ts=%d", r.Key, r.Value, r.Timestamp.UnixMilli())
	for _, h := range r.Headers {
		fmt.Fprintf(&b, " %s=%q", h.Key, h.Value)
	}
	return b.String()
}

// checkAtLeastOnceInOrder checks that got (read from the target) holds every
// record of sent (in produce order) at least once, and that per key the first
// arrival of each record follows produce order: a record may repeat (the
// mirror redelivers what it had not committed) but none is missing and none
// arrives before an earlier record of its key.
func checkAtLeastOnceInOrder(t *testing.T, sent, got []*kgo.Record) {
	t.Helper()
	want := byKey(sent)
	next := map[string]int{}
	seen := map[string]bool{}
	dups := 0
	for _, r := range got {
		k, text := string(r.Key), recordText(r)
		w := want[k]
		switch {
		case next[k] < len(w) && text == w[next[k]]:
			next[k]++
			seen[text] = true
		case seen[text]:
			dups++
		default:
			t.Fatalf("key %s: target record %s arrives out of order or was never sent (next expected %q)", k, text, first(w[min(next[k], len(w)):]))
		}
	}
	for k, w := range want {
		if next[k] != len(w) {
			t.Errorf("key %s: %d of %d records on the target; first missing %s", k, next[k], len(w), w[next[k]])
		}
	}
	t.Logf("%d records sent, %d on the target (%d duplicates)", len(sent), len(got), dups)
}
