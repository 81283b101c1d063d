package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// faultWorkloads are the crash harness's scripts with truncations and cleaner
// swaps mixed in (newFaultWorkload), plus one under flush.messages=1, where
// the high watermark must never pass the recovery point.
func faultWorkloads() []crashWorkload {
	var ws []crashWorkload
	for i, w := range crashWorkloads()[:4] {
		ws = append(ws, newFaultWorkload(w.name, uint64(i+1), len(w.steps), w.opts))
	}
	e := ws[0].opts
	e.FlushMessages = 1
	e.RetentionBytes = -1
	ws = append(ws, newFaultWorkload("flush-every-append", 5, 60, e))
	return ws
}

// TestIOErrorConsistency is the crash loop with I/O errors instead of crashes
// (pebble's error_test.go): for every k, the k-th filesystem operation of any
// kind (reads, stats, opens and closes included) fails once and everything
// after it works (vfs.FailAt). The workload runs under runFaults: a failed
// step leaves the log either offline or as it was, and is then retried. The
// fault model of the package doc is checked at every point:
//
//   - the injected error is counted (none is swallowed): returned by a Log
//     method, wrapping the injected error, or logged at Error level by
//     background work;
//   - while the script runs: high watermark <= log end, recovery point <= log
//     end, and under flush.messages=1 high watermark <= recovery point;
//   - a log still online accepted the retried step, serves exactly the
//     acknowledged appends still in it (nothing of a failed append is
//     visible), takes one more append and closes cleanly;
//   - an offline log refuses appends, flushes and reads with ErrOffline, its
//     high watermark and recovery point never move again, and Close reports
//     it;
//   - the directory, reopened as after a process crash (everything written
//     kept) and as after a power loss (unsynced changes lost), satisfies the
//     crash invariants (checkRecovered): a prefix-consistent log holding
//     every acknowledged append below the recovery point.
func TestIOErrorConsistency(t *testing.T) {
	t0 := time.Now()
	var v violations
	var points, checked, offline, retried atomic.Int64
	report := func(s string) { v.add(s) }
	for _, w := range faultWorkloads() {
		counter := vfs.NewCounter()
		res := w.runFaults(vfs.Inject(newDataDirMem(), counter), crashDir)
		K := counter.Count()
		if res.err != nil || len(res.violations) > 0 {
			t.Fatalf("%s: workload fails without injection at step %d: %v %v", w.name, res.errStep, res.err, res.violations)
		}
		if err := res.log.Close(); err != nil {
			t.Fatal(err)
		}
		stride := faultStride()
		t.Logf("%s: %d operations", w.name, K)
		forEachK((K+stride-1)/stride, func(i int) {
			k := i * stride
			mem := newDataDirMem()
			fail := vfs.FailAt(k)
			seen := vfs.NewCounter() // the ops this run really made
			res := w.runFaults(vfs.Inject(vfs.Inject(mem, seen), fail), crashDir)
			where := fmt.Sprintf("%s k=%d/%d (failed at step %d)", w.name, k, K, res.errStep)
			if fail.Injected() == 0 {
				// Background flushes make the op count vary a little from run to
				// run; a point past this run's last op is legitimately unreached.
				if seen.Count() > k {
					report(where + ": the failure point was never reached")
				}
				return
			}
			points.Add(1)
			retried.Add(int64(res.retried))
			for _, s := range res.violations {
				report(where + ": " + s)
			}
			switch {
			case res.err == nil && res.logged.injected() == 0:
				report(where + ": the injected error was swallowed: no error returned or logged")
			case res.err != nil && !vfs.IsInjected(res.err):
				report(fmt.Sprintf("%s: error does not wrap the injected one: %v", where, res.err))
			}
			if res.offline {
				offline.Add(1)
				if err := checkOffline(res); err != nil {
					report(where + ": " + err.Error())
				}
			} else if res.log != nil {
				if err := checkOnline(res); err != nil {
					report(where + ": " + err.Error())
				}
			}
			for j, st := range []*vfs.MemFS{mem.CrashClone(vfs.CrashOptions{KeepUnsynced: true}), mem.CrashClone(vfs.CrashOptions{})} {
				rp := []int64{0, res.checkpoint}[j]
				if err := checkRecovered(st, crashDir, w.opts, rp, res); err != nil {
					report(fmt.Sprintf("%s, %s: %v", where, []string{"process crash", "power loss"}[j], err))
				}
				checked.Add(1)
			}
		})
	}
	v.report(t)
	msg := fmt.Sprintf("I/O error harness: %d failure points (%d took the log offline, %d steps rolled back and retried), %d states checked, %d violations (%v)",
		points.Load(), offline.Load(), retried.Load(), checked.Load(), v.total(), time.Since(t0).Round(time.Millisecond))
	t.Log(msg)
	fmt.Println(msg)
	if points.Load() == 0 || offline.Load() == 0 || retried.Load() == 0 {
		t.Errorf("the harness exercised %d points, %d offline, %d retries: want some of each", points.Load(), offline.Load(), retried.Load())
	}
}

// faultStride is the step between the failure points tried: every one (1),
// every third under the race detector (the unit tests' run; scripts/crash.sh
// runs them all), every fifth with -short. STRATA_FAULT_STRIDE overrides it.
func faultStride() int {
	if v, err := strconv.Atoi(os.Getenv("STRATA_FAULT_STRIDE")); err == nil && v > 0 {
		return v
	}
	switch {
	case testing.Short():
		return 5
	case raceEnabled:
		return 3
	}
	return 1
}

// checkOffline holds an offline log to the fault model: every write refused
// with ErrOffline, reads refused, the high watermark and recovery point where
// the failure left them, and Close reporting the failure.
func checkOffline(res *wlResult) error {
	l := res.log
	if l == nil {
		return nil // closed by the step that failed
	}
	if err := l.Err(); !errors.Is(err, ErrOffline) || !vfs.IsInjected(err) {
		return fmt.Errorf("offline log's Err: %v", err)
	}
	nb := append([]byte(nil), tailBatch...)
	if _, err := l.Append(nb); !errors.Is(err, ErrOffline) {
		return fmt.Errorf("append to an offline log: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrOffline) && l.FlushedOffset() < l.LogEndOffset() {
		return fmt.Errorf("flush of an offline log: %v", err)
	}
	if err := l.Roll(); !errors.Is(err, ErrOffline) {
		return fmt.Errorf("roll of an offline log: %v", err)
	}
	if _, err := l.Read(l.LogStartOffset(), 1<<20); !errors.Is(err, ErrOffline) {
		return fmt.Errorf("read of an offline log: %v", err)
	}
	if hw, rp := l.HighWatermark(), l.FlushedOffset(); hw != res.hw || rp != res.rp {
		return fmt.Errorf("offline log moved: high watermark %d -> %d, recovery point %d -> %d", res.hw, hw, res.rp, rp)
	}
	if err := l.Close(); !errors.Is(err, ErrOffline) {
		return fmt.Errorf("close of an offline log: %v", err)
	}
	return nil
}

// checkOnline holds a log that rolled its failures back to the fault model:
// it serves exactly the acknowledged appends still in it, takes one more
// append that reads back, and closes cleanly (which makes everything
// durable, promised to the recovery checks).
func checkOnline(res *wlResult) error {
	l := res.log
	served, err := readLog(l)
	if err != nil {
		return fmt.Errorf("reading the live log: %w", err)
	}
	var want []wlBatch
	for _, b := range res.batches {
		if b.acked && b.last >= l.LogStartOffset() {
			want = append(want, b)
		}
	}
	// Batches below the first segment's base were deleted; the log start may
	// lie inside a batch, which is then served whole.
	if len(served) != len(want) {
		return fmt.Errorf("live log serves %d batches, %d acknowledged ones are in it", len(served), len(want))
	}
	for i := range served {
		if served[i].base != want[i].base || !bytes.Equal(served[i].bytes, want[i].bytes) {
			return fmt.Errorf("live log serves batch [%d, %d] where [%d, %d] was acknowledged", served[i].base, served[i].last, want[i].base, want[i].last)
		}
	}
	nb := append([]byte(nil), tailBatch...)
	info, err := l.Append(nb)
	if err != nil {
		return fmt.Errorf("append after the rolled-back error: %w", err)
	}
	res.batches = append(res.batches, wlBatch{base: info.FirstOffset, last: info.LastOffset, bytes: nb, acked: true})
	r, err := l.Read(info.FirstOffset, 1<<20)
	if err != nil {
		return fmt.Errorf("read after the error: %w", err)
	}
	got, err := r.ReadInto(nil)
	r.Release()
	if err != nil || !bytes.Equal(got, nb) {
		return fmt.Errorf("append after the error reads back %d bytes (%v)", len(got), err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("close after the rolled-back error: %w", err)
	}
	res.flushed = max(res.flushed, l.LogEndOffset())
	res.checkpoint = l.LogEndOffset()
	return nil
}

// failKth fails the k-th operation (from 0) once and remembers it.
type failKth struct {
	k      int
	mu     sync.Mutex
	seen   int
	failed *vfs.Op
}

func (f *failKth) MaybeError(op vfs.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen++
	if f.seen-1 == f.k {
		f.failed = &op
		return vfs.ErrInjected
	}
	return nil
}

// scratchDir is a directory on tmpfs when the machine has one (/dev/shm:
// mmap and fallocate work, fsyncs are cheap), else t.TempDir().
func scratchDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "strata-segment-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// TestIOErrorConsistencyMapped runs the I/O error loop on the real
// filesystem with a preallocated log that is never flushed by policy, so
// appends are copied into the segment's mapping and index entries written
// into the memory-mapped indexes: writes that make no system call, reached
// by the injector through vfs.OpMapWrite. Every k-th operation fails once;
// the log must roll back or go offline as elsewhere, and the directory,
// reopened as after a process crash (the page cache keeps everything), must
// recover every acknowledged append (checkRecovered). A power loss cannot be
// simulated on the real filesystem; the MemFS harness covers it for the
// same code with pwrite.
func TestIOErrorConsistencyMapped(t *testing.T) {
	opts := crashWorkloads()[0].opts
	opts.Preallocate = true
	opts.SegmentBytes = 8 << 10
	opts.SegmentIndexBytes = 1200
	opts.RetentionBytes = -1
	w := newFaultWorkload("mapped", 6, 60, opts)
	root := scratchDir(t)
	counter := vfs.NewCounter()
	mapped := vfs.NewCounter(vfs.OpMapWrite)
	res := w.runFaults(vfs.Inject(vfs.Inject(vfs.OS, counter), mapped), filepath.Join(root, "clean", "topic-0"))
	if res.err != nil || len(res.violations) > 0 {
		t.Fatalf("workload fails without injection at step %d: %v %v", res.errStep, res.err, res.violations)
	}
	if err := res.log.Close(); err != nil {
		t.Fatal(err)
	}
	K := counter.Count()
	t.Logf("%d operations, %d of them writes through a mapping", K, mapped.Count())
	if mapped.Count() < 20 {
		t.Fatalf("only %d mapped writes: the workload does not reach the mapped path", mapped.Count())
	}
	var v violations
	var points, offline, mappedPoints atomic.Int64
	stride := faultStride()
	forEachK((K+stride-1)/stride, func(i int) {
		k := i * stride
		dir := filepath.Join(root, strconv.Itoa(k), "topic-0")
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			v.add(err.Error())
			return
		}
		fail := &failKth{k: k}
		res := w.runFaults(vfs.Inject(vfs.OS, fail), dir)
		if fail.failed == nil {
			return // past this run's last operation
		}
		points.Add(1)
		if fail.failed.Kind == vfs.OpMapWrite {
			mappedPoints.Add(1)
		}
		where := fmt.Sprintf("k=%d/%d (%v, failed at step %d)", k, K, fail.failed, res.errStep)
		for _, s := range res.violations {
			v.add(where + ": " + s)
		}
		switch {
		case res.err == nil && res.logged.injected() == 0:
			v.add(where + ": the injected error was swallowed: no error returned or logged")
		case res.err != nil && !vfs.IsInjected(res.err):
			v.add(fmt.Sprintf("%s: error does not wrap the injected one: %v", where, res.err))
		}
		if res.offline {
			offline.Add(1)
			if err := checkOffline(res); err != nil {
				v.add(where + ": " + err.Error())
			}
		} else if res.log != nil {
			if err := checkOnline(res); err != nil {
				v.add(where + ": " + err.Error())
			}
		}
		if err := checkRecovered(vfs.OS, dir, w.opts, []int64{0, res.checkpoint}[k%2], res); err != nil {
			v.add(fmt.Sprintf("%s, process crash: %v", where, err))
		}
		os.RemoveAll(filepath.Dir(dir))
	})
	v.report(t)
	msg := fmt.Sprintf("I/O error harness (mapped, OS): %d failure points (%d in mapped writes, %d took the log offline), %d violations",
		points.Load(), mappedPoints.Load(), offline.Load(), v.total())
	t.Log(msg)
	fmt.Println(msg)
	if mappedPoints.Load() == 0 {
		t.Error("no failure point fell on a mapped write")
	}
}
