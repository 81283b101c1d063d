package segment

import (
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// The probes: each I/O error below used to leave the log half
// advanced. These tests pin the fault model of the package doc.

// A failed fsync under flush.messages=1 takes the log offline: the append
// fails, neither the high watermark nor the recovery point moves past it, and
// the next append is refused instead of being acknowledged by a later fsync
// that "succeeds" over pages the failed one may have dropped.
func TestFailedFsyncTakesLogOffline(t *testing.T) {
	mem := newDataDirMem()
	inj := injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, LogSuffix)
	})
	l, err := Open(crashDir, &Options{FS: vfs.Inject(mem, inj), FlushMessages: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(makeBatch(t, 0, 3, 1000, record.CodecNone, 20)); !vfs.IsInjected(err) {
		t.Fatalf("append whose fsync fails: %v", err)
	}
	if hw, rp := l.HighWatermark(), l.FlushedOffset(); hw != 0 || rp != 0 {
		t.Fatalf("after the failed fsync: high watermark %d, recovery point %d; want 0, 0", hw, rp)
	}
	for i := range 3 {
		if _, err := l.Append(makeBatch(t, 1+i, 2, 1001, record.CodecNone, 20)); err == nil {
			t.Fatalf("append %d after a failed fsync succeeded", i)
		}
	}
	if hw, rp := l.HighWatermark(), l.FlushedOffset(); hw != 0 || rp != 0 {
		t.Fatalf("after later appends: high watermark %d, recovery point %d; want 0, 0", hw, rp)
	}
	if err := l.Flush(); err == nil {
		t.Fatal("Flush of an offline log succeeded")
	}
	if r, err := l.ReadToHighWatermark(0, 1<<20); err == nil && r.Len > 0 {
		t.Fatalf("an offline log served %d bytes", r.Len)
	}
}

// A roll whose new index file cannot be created rolls back: the new .log
// file it had created is removed, so the next roll does not fail with "file
// already exists", and the log keeps taking appends.
func TestFailedRollRollsBack(t *testing.T) {
	mem := newDataDirMem()
	inj := injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpCreate && strings.HasSuffix(op.Path, TimeIndexSuffix) && !strings.Contains(op.Path, "/00000000000000000000")
	})
	l, err := Open(crashDir, &Options{FS: vfs.Inject(mem, inj), SegmentBytes: 300, FileDeleteDelayMs: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var want [][]byte
	failed := 0
	for i := range 40 {
		b := makeBatch(t, i, 2, 1000+int64(i), record.CodecNone, 30)
		if _, err := l.Append(b); err != nil {
			if !vfs.IsInjected(err) {
				t.Fatalf("append %d: %v", i, err)
			}
			failed++
			continue
		}
		want = append(want, b)
	}
	if failed != 1 {
		t.Fatalf("%d appends failed, want the one whose roll hit the injected error", failed)
	}
	got := readAll(t, l, 0, 1<<20)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if err := checkIndexes(l, nil); err != nil {
		t.Fatal(err)
	}
}

// An append whose time index write fails after its offset index entry was
// written rolls back whole: the entry is withdrawn, the max timestamp and
// roll time restored, and the appends after it index correctly.
func TestFailedIndexWriteRollsBack(t *testing.T) {
	mem := newDataDirMem()
	inj := injectFirst(func(op vfs.Op) bool {
		return op.Kind == vfs.OpWriteAt && strings.HasSuffix(op.Path, TimeIndexSuffix)
	})
	l, err := Open(crashDir, &Options{FS: vfs.Inject(mem, inj), IndexIntervalBytes: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first := makeBatch(t, 0, 2, 1000, record.CodecNone, 20)
	if _, err := l.Append(first); err != nil {
		t.Fatal(err)
	}
	// The second batch gets an offset index entry, then its time index
	// entry fails.
	if _, err := l.Append(makeBatch(t, 1, 4, 5000, record.CodecNone, 20)); !vfs.IsInjected(err) {
		t.Fatalf("append with a failing time index write: %v", err)
	}
	if ts := l.Segments()[0].MaxTimestamp(); ts != 1001 {
		t.Fatalf("max timestamp %d after the failed append, want 1001", ts)
	}
	want := [][]byte{first}
	for i := range 20 {
		b := makeBatch(t, 2+i, 2, 2000+int64(i), record.CodecNone, 20)
		if _, err := l.Append(b); err != nil {
			t.Fatalf("append %d after the rolled-back one: %v", i, err)
		}
		want = append(want, b)
	}
	got := readAll(t, l, 0, 1<<20)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	if err := checkIndexes(l, nil); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := l.OffsetForTimestamp(5000); err != nil || ok {
		t.Fatalf("timestamp 5000 of the rolled-back batch found: %+v %v %v", r, ok, err)
	}
}
