package segment

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// Regression tests for what the crash and I/O-error harnesses found, and a
// self-check that the harness's checker can fail.

// TestCrashCheckerDetectsViolations breaks a cleanly closed, fully flushed log
// (or the record of what was promised) in ways the invariant forbids, and
// expects checkRecovered to report each.
func TestCrashCheckerDetectsViolations(t *testing.T) {
	w := crashWorkloads()[0]
	mem := newDataDirMem()
	res := w.run(mem, crashDir)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if err := res.log.Close(); err != nil {
		t.Fatal(err)
	}
	res.flushed = res.log.LogEndOffset()
	res.checkpoint = res.flushed
	segs := res.log.Segments()
	if len(segs) < 3 {
		t.Fatalf("the workload left %d segments, want 3 or more", len(segs))
	}
	if err := checkRecovered(mem.CrashClone(vfs.CrashOptions{}), crashDir, w.opts, 0, res); err != nil {
		t.Fatalf("the intact log fails the check: %v", err)
	}
	writeAt := func(t *testing.T, fsys *vfs.MemFS, name string, b []byte, off int64) {
		f, err := fsys.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	mid := segs[len(segs)/2]
	cases := []struct {
		name   string
		rp     int64
		break_ func(t *testing.T, fsys *vfs.MemFS, res *wlResult)
		want   string
	}{
		{"flipped byte in a flushed batch", 0, func(t *testing.T, fsys *vfs.MemFS, _ *wlResult) {
			writeAt(t, fsys, mid.Path(LogSuffix), []byte{0xff}, mid.Size()/2)
		}, "lost"},
		{"a flushed segment removed", 0, func(t *testing.T, fsys *vfs.MemFS, _ *wlResult) {
			if err := fsys.Remove(mid.Path(LogSuffix)); err != nil {
				t.Fatal(err)
			}
		}, "overlaps the flushed range"},
		{"a promised batch differs", 0, func(_ *testing.T, _ *vfs.MemFS, r *wlResult) {
			for i := range r.batches {
				if r.batches[i].acked && r.batches[i].base >= mid.Base() {
					b := append([]byte(nil), r.batches[i].bytes...)
					b[len(b)-1] ^= 1
					r.batches[i].bytes = b
					return
				}
			}
		}, "never appended"},
		{"an index entry inside a batch, below the recovery point", res.checkpoint, func(t *testing.T, fsys *vfs.MemFS, _ *wlResult) {
			// Entry 0 (relative offset, position) of a sealed segment's offset
			// index with two entries or more now points 7 bytes into the log.
			for _, s := range segs[:len(segs)-1] {
				if fi, err := fsys.Stat(s.Path(IndexSuffix)); err == nil && fi.Size() >= 16 {
					writeAt(t, fsys, s.Path(IndexSuffix), []byte{0, 0, 0, 0, 0, 0, 0, 7}, 0)
					return
				}
			}
			t.Fatal("no sealed segment has two index entries")
		}, "position 7"}, // reads through the bad entry fail (Open trusts it, as Kafka does)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: true}) // index trims at Close kept
			r := *res
			r.batches = append([]wlBatch(nil), res.batches...)
			c.break_(t, st, &r)
			err := checkRecovered(st, crashDir, w.opts, c.rp, &r)
			if err == nil {
				t.Fatalf("the checker accepted a broken log")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the checker said %q, want a report containing %q", err, c.want)
			}
			t.Logf("detected: %v", err)
		})
	}
}

// injectFirst fails the first operation match accepts.
func injectFirst(match func(op vfs.Op) bool) vfs.Injector {
	var once sync.Once
	return vfs.InjectorFunc(func(op vfs.Op) error {
		var err error
		if match(op) {
			once.Do(func() { err = vfs.ErrInjected })
		}
		return err
	})
}

// TestFailedIndexWriteLeavesNoGhostBatch: an append whose index write fails
// after the batch reached the .log used to leave the batch's bytes past the
// segment's committed size. A roll kept them in the sealed segment, recovery
// took them for data, found their offsets reaching the next segment's base,
// cut there and removed the next segment with the flushed appends after the
// error. Found by TestIOErrorConsistency.
func TestFailedIndexWriteLeavesNoGhostBatch(t *testing.T) {
	mem := newDataDirMem()
	inj := injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpWriteAt && strings.HasSuffix(op.Path, IndexSuffix) && op.Len == 8
	})
	o := &Options{FS: vfs.Inject(mem, inj), IndexIntervalBytes: 1, FileDeleteDelayMs: -1, Logger: quiet}
	l, err := Open(crashDir, o)
	if err != nil {
		t.Fatal(err)
	}
	a := makeBatch(t, 1, 2, 1000, record.CodecNone, 20)
	if _, err := l.Append(a); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 2, 2, 1001, record.CodecNone, 20)); !vfs.IsInjected(err) {
		t.Fatalf("append with a failing index write: %v", err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	c := makeBatch(t, 3, 3, 1002, record.CodecNone, 20)
	info, err := l.Append(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	o.FS = mem
	l, rep, err := OpenWithReport(crashDir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep.BytesTruncated != 0 || rep.SegmentsRemoved != 0 {
		t.Fatalf("recovery cut the log: %v", rep.Truncations)
	}
	got := readAll(t, l, 0, 1<<20)
	if len(got) != 2 || string(got[0]) != string(a) || string(got[1]) != string(c) {
		t.Fatalf("read %d batches, want the two acknowledged ones", len(got))
	}
	if l.LogEndOffset() != info.LastOffset+1 {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), info.LastOffset+1)
	}
}

// TestLoadTailReadErrorSurfaces: a clean-shutdown open read the first batch
// header for the segment's roll timestamp and dropped a read error there.
func TestLoadTailReadErrorSurfaces(t *testing.T) {
	mem := newDataDirMem()
	o := &Options{FS: mem, IndexIntervalBytes: 1, Logger: quiet}
	l, err := Open(crashDir, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := l.Append(makeBatch(t, i, 2, 1000, record.CodecNone, 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	o.FS = vfs.Inject(mem, injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpReadAt && strings.HasSuffix(op.Path, LogSuffix) && op.Off == 0
	}))
	o.CleanShutdown = true
	l, err = Open(crashDir, o)
	if err == nil {
		l.Close()
		t.Fatal("open succeeded although a read of the log failed")
	}
	if !vfs.IsInjected(err) {
		t.Fatalf("open: %v, want the injected read error", err)
	}
}

// TestIndexStatErrorSurfaces: opening an index treated a failed Stat as "the
// file exists", skipping the preallocation a memory mapping relies on.
func TestIndexStatErrorSurfaces(t *testing.T) {
	mem := newDataDirMem()
	o := &Options{FS: vfs.Inject(mem, injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpStat && strings.HasSuffix(op.Path, IndexSuffix)
	})), Logger: quiet}
	l, err := Open(crashDir, o)
	if err == nil {
		l.Close()
		t.Fatal("open succeeded although a stat of the new index failed")
	}
	if !vfs.IsInjected(err) {
		t.Fatalf("open: %v, want the injected stat error", err)
	}
}

// TestRetiredSegmentCloseErrorLogged: closing a deleted segment's files could
// fail silently; the failure is now logged.
func TestRetiredSegmentCloseErrorLogged(t *testing.T) {
	mem := newDataDirMem()
	logged := &errLog{}
	o := &Options{FS: vfs.Inject(mem, injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpClose && strings.HasSuffix(op.Path, "00000000000000000000"+LogSuffix)
	})), FileDeleteDelayMs: -1, Logger: slog.New(logged)}
	l, err := Open(crashDir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(makeBatch(t, 0, 2, 1000, record.CodecNone, 30)); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeletePrefix(1); err != nil || n != 1 {
		t.Fatalf("DeletePrefix: %d, %v", n, err)
	}
	if logged.injected() != 1 {
		t.Fatalf("%d injected errors logged, want the failed close", logged.injected())
	}
	if _, err := mem.Stat(FilePath(crashDir, 0, LogSuffix+DeletedSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted segment file still there: %v", err)
	}
}

// TestDeletedUnflushedSegmentDoesNotCostFlushedData: a segment deleted before
// its data was ever flushed (the flush after its roll had not run yet) comes
// back after a power loss when its rename to .deleted was not durable, with a
// torn tail. Recovery cut it there and removed every later segment, with
// appends acknowledged as flushed after the delete. (When that flush fails
// instead, the log goes offline: TestIOErrorConsistency.) Here the roll's
// directory sync, which the flush waits for, is held while the segment is
// deleted and more is appended and flushed.
func TestDeletedUnflushedSegmentDoesNotCostFlushedData(t *testing.T) {
	mem := newDataDirMem()
	var armed atomic.Bool // from the roll on
	held, entered, release := blockFirst(func(op vfs.Op) bool { return op.Kind == vfs.OpSyncDir && armed.Load() })
	defer release()
	o := &Options{FS: vfs.Inject(mem, held), FileDeleteDelayMs: -1, Logger: quiet}
	l, err := Open(crashDir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var batches []wlBatch // the deleted ones may come back: below firstKept
	for i := range 3 {
		b := makeBatch(t, i, 2, 1000, record.CodecNone, 40)
		info, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, wlBatch{base: info.FirstOffset, last: info.LastOffset, bytes: b, acked: true})
	}
	armed.Store(true)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	<-entered // the roll's directory sync is held: segment 0 is not flushed
	if _, err := l.DeletePrefix(1); err != nil {
		t.Fatal(err)
	}
	b := makeBatch(t, 9, 3, 2000, record.CodecNone, 40)
	info, err := l.Append(b)
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- l.Flush() }()
	release()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	l.bg.Wait()
	if l.FlushedOffset() <= info.LastOffset {
		t.Fatalf("flushed offset %d does not cover the append", l.FlushedOffset())
	}
	res := &wlResult{
		batches:   append(batches, wlBatch{base: info.FirstOffset, last: info.LastOffset, bytes: b, acked: true}),
		flushed:   l.FlushedOffset(),
		firstKept: l.Segments()[0].Base(),
	}
	res.checkpoint = res.flushed
	n := 0
	for desc, st := range mem.AllCrashStates(vfs.CrashOptions{}) {
		for _, rp := range []int64{0, res.checkpoint} {
			if err := checkRecovered(st.CrashClone(vfs.CrashOptions{}), crashDir, Options{FileDeleteDelayMs: -1}, rp, res); err != nil {
				t.Errorf("[%s] %v", desc, err)
			}
		}
		n++
	}
	t.Logf("%d crash states", n)
}

// blockFirst holds the first operation match accepts until release, after
// announcing it on entered. release may be called more than once.
func blockFirst(match func(op vfs.Op) bool) (inj vfs.Injector, entered <-chan struct{}, release func()) {
	var once, rel sync.Once
	ent, gate := make(chan struct{}, 1), make(chan struct{})
	inj = vfs.InjectorFunc(func(op vfs.Op) error {
		if match(op) {
			first := false
			once.Do(func() { first = true })
			if first {
				ent <- struct{}{}
				<-gate
			}
		}
		return nil
	})
	return inj, ent, func() { rel.Do(func() { close(gate) }) }
}

// TestCloseMakesIndexTrimDurable: after Close, a power loss must find every
// index file trimmed to its entries, so a clean-shutdown marker written after
// Close never vouches for zero-padded indexes.
func TestCloseMakesIndexTrimDurable(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mem.SyncAll()
	l, err := Open("/d", &Options{FS: mem, IndexIntervalBytes: 1, SegmentIndexBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := l.Append(makeBatch(t, i, 2, int64(1000+i), record.CodecNone, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	names, err := crashed.ReadDir("/d")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, n := range names {
		if !strings.HasSuffix(n, IndexSuffix) && !strings.HasSuffix(n, TimeIndexSuffix) {
			continue
		}
		after, err := crashed.Stat("/d/" + n)
		if err != nil {
			t.Fatal(err)
		}
		before, err := mem.Stat("/d/" + n)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() != before.Size() || after.Size() >= 4096 {
			t.Errorf("%s: %d bytes after a power loss, %d after Close (capacity 4096)", n, after.Size(), before.Size())
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("checked %d index files, want 2", checked)
	}
}
