package tools

import (
	"strings"
	"testing"
	"time"
)

// TestMirrorTargetDown: the target broker stops while records wait to be
// mirrored. The mirror retries with backoff — over a 3 s window it makes
// few connection attempts and uses little CPU, where a retry loop without
// backoff makes thousands — and commits nothing it has not delivered. When
// the target is back (same port, same data) every record arrives, per-key
// order kept, and the group commits up to the end.
func TestMirrorTargetDown(t *testing.T) {
	src := mirrorBroker(t)
	dstDir := t.TempDir()
	dstS := startBroker(t, dstDir, "group.initial.rebalance.delay.ms=0")
	dst := dstS.Addr().String()
	createTopic(t, src, "t", 2)
	sent := produceRange(t, src, "t", 0, 200, 10, 2)
	opts := testMirrorOptions(t, src, dst, "t")
	r := startMirror(t, opts)
	waitFor(t, 60*time.Second, "the first 200 records mirrored", func() bool { return groupCaughtUp(t, src, opts.group, "t") }, r.stderr.String)

	if err := dstS.Close(); err != nil {
		t.Fatal(err)
	}
	sent = append(sent, produceRange(t, src, "t", 200, 500, 10, 2)...)
	waitFor(t, 60*time.Second, "new records handed to the producer of the stopped target",
		func() bool { return r.m.produced.Load() > 200 }, r.stderr.String)

	const window = 3 * time.Second
	dials0, cpu0 := r.m.targetDials.Load(), processCPU()
	time.Sleep(window) // a measurement window, not a wait for a condition
	dials, cpu := r.m.targetDials.Load()-dials0, processCPU()-cpu0
	t.Logf("target down for %v: %d connection attempts, %v CPU (whole test process)", window, dials, cpu)
	if dials > 30 {
		t.Errorf("%d connection attempts to a stopped target in %v: no backoff", dials, window)
	}
	if cpu > window/2 {
		t.Errorf("%v CPU in %v while the target is down: a busy loop", cpu, window)
	}
	if n := committedTotal(t, src, opts.group); n != 200 {
		t.Errorf("the group committed %d offsets while the target was down, want the 200 delivered", n)
	}

	startBroker(t, dstDir, "group.initial.rebalance.delay.ms=0", "listeners=PLAINTEXT://"+dst)
	waitFor(t, 90*time.Second, "all 500 records mirrored after the target returned",
		func() bool { return groupCaughtUp(t, src, opts.group, "t") }, r.stderr.String)
	if err := r.stop(t); err != nil {
		t.Fatalf("mirror: %v\n%s", err, r.stderr.String())
	}
	checkAtLeastOnceInOrder(t, sortedBySeq(sent), readAll(t, dst, "t"))
}

// TestMirrorStopWhileTargetDown: SIGINT/SIGTERM while the target is down
// waits --shutdown-timeout for its acknowledgements, then stops cleanly (no
// error: nothing is lost) committing only what was delivered, and says how
// many records go again on the next start.
func TestMirrorStopWhileTargetDown(t *testing.T) {
	src := mirrorBroker(t)
	dstS := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	createTopic(t, src, "t", 1)
	produceRange(t, src, "t", 0, 50, 5, 1)
	opts := testMirrorOptions(t, src, dstS.Addr().String(), "t")
	opts.shutdown = time.Second
	r := startMirror(t, opts)
	waitFor(t, 60*time.Second, "the first 50 records mirrored", func() bool { return groupCaughtUp(t, src, opts.group, "t") }, r.stderr.String)
	if err := dstS.Close(); err != nil {
		t.Fatal(err)
	}
	produceRange(t, src, "t", 50, 80, 5, 1)
	waitFor(t, 60*time.Second, "new records handed to the producer of the stopped target",
		func() bool { return r.m.produced.Load() > 50 }, r.stderr.String)
	start := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("stop while the target is down: %v\n%s", err, r.stderr.String())
	}
	t.Logf("stopped in %v", time.Since(start))
	if !strings.Contains(r.stderr.String(), "not committed (the target did not acknowledge them within 1s): mirrored again on restart") {
		t.Errorf("no word of the unacknowledged records:\n%s", r.stderr.String())
	}
	if n := committedTotal(t, src, opts.group); n != 50 {
		t.Errorf("the group committed %d offsets, want the 50 delivered", n)
	}
}
