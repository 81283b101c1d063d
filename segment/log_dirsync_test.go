package segment

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// waitDone waits for an append running in the background, failing the test
// when it has not returned within a generous deadline (it is blocked).
func waitDone(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s is blocked", what)
	}
}

// A roll's directory sync runs off the writer lock: while it is held, the
// append that rolled and the appends after it to the new segment return,
// and readers see them; but the recovery point does not move into the new
// segment, and a Flush (what a checkpoint or a clean shutdown waits for)
// returns only after the directory sync.
func TestRollDirSyncOffWriterLock(t *testing.T) {
	var armed atomic.Bool
	held, entered, release := blockFirst(func(op vfs.Op) bool { return op.Kind == vfs.OpSyncDir && armed.Load() })
	defer release()
	l, err := Open(t.TempDir(), &Options{FS: vfs.Inject(vfs.OS, held), SegmentBytes: 400, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer release() // before Close
	for i := range 3 {
		if _, err := l.Append(makeBatch(t, i, 2, 1000, record.CodecNone, 60)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	before := len(l.Segments())
	armed.Store(true)
	done := make(chan error, 1)
	go func() {
		for i := range 6 { // the first rolls
			if _, err := l.Append(makeBatch(t, 10+i, 2, 2000, record.CodecNone, 60)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-entered
	waitDone(t, done, "appends while the roll's directory sync is held")
	segs := l.Segments()
	if len(segs) <= before {
		t.Fatalf("%d segments: the appends did not roll", len(segs))
	}
	if got := readAll(t, l, 0, 1<<20); len(got) != 9 {
		t.Fatalf("read %d batches during the directory sync, want 9", len(got))
	}
	newBase := segs[before].Base()
	flushed := make(chan error, 1)
	go func() { flushed <- l.Flush() }()
	if rp := l.FlushedOffset(); rp > newBase {
		t.Fatalf("recovery point %d moved into the new segment (base %d) before its directory sync", rp, newBase)
	}
	release()
	waitDone(t, flushed, "Flush after the directory sync")
	if l.FlushedOffset() != l.LogEndOffset() {
		t.Fatalf("recovery point %d after Flush, log end %d", l.FlushedOffset(), l.LogEndOffset())
	}
}

// Under flush.messages=1 an append to a new segment is acknowledged (and
// seen by consumers) only after the roll's directory sync: its fsynced data
// is lost with the file's name otherwise.
func TestRollDirSyncBeforeFlushedAck(t *testing.T) {
	var armed atomic.Bool
	held, entered, release := blockFirst(func(op vfs.Op) bool { return op.Kind == vfs.OpSyncDir && armed.Load() })
	l, err := Open(t.TempDir(), &Options{FS: vfs.Inject(vfs.OS, held), FlushMessages: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer release() // before Close
	if _, err := l.Append(makeBatch(t, 0, 2, 1000, record.CodecNone, 60)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	rolled := make(chan error, 1)
	go func() { rolled <- l.Roll() }()
	<-entered
	waitDone(t, rolled, "a roll whose directory sync is held") // its sync runs behind
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(makeBatch(t, 1, 2, 1001, record.CodecNone, 60))
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for l.LogEndOffset() != 4 {
		if time.Now().After(deadline) {
			t.Fatal("the append never reached the log")
		}
		time.Sleep(time.Millisecond)
	}
	if hw, rp := l.HighWatermark(), l.FlushedOffset(); hw != 2 || rp != 2 {
		t.Fatalf("before the directory sync: high watermark %d, recovery point %d; want 2, 2", hw, rp)
	}
	release()
	waitDone(t, done, "the append after the directory sync")
	if hw, rp := l.HighWatermark(), l.FlushedOffset(); hw != 4 || rp != 4 {
		t.Fatalf("after the directory sync: high watermark %d, recovery point %d; want 4, 4", hw, rp)
	}
}

// A retention delete renames under the writer lock and syncs the directory
// behind it: appends go on, and the recovery point jumps over the deleted
// (never flushed) segments only after the sync.
func TestDeleteDirSyncOffWriterLock(t *testing.T) {
	var armed atomic.Bool
	held, entered, release := blockFirst(func(op vfs.Op) bool { return op.Kind == vfs.OpSyncDir && armed.Load() })
	l, err := Open(t.TempDir(), &Options{FS: vfs.Inject(vfs.OS, held), FileDeleteDelayMs: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer release() // before Close
	for i := range 3 {
		if _, err := l.Append(makeBatch(t, i, 2, 1000, record.CodecNone, 60)); err != nil {
			t.Fatal(err)
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	l.bg.Wait()
	rp := l.FlushedOffset()
	armed.Store(true)
	deleted := make(chan error, 1)
	go func() {
		n, err := l.DeletePrefix(2)
		if err == nil && n != 2 {
			err = fmt.Errorf("deleted %d segments, want 2", n)
		}
		deleted <- err
	}()
	<-entered
	waitDone(t, deleted, "a deletion whose directory sync is held")
	if got := l.FlushedOffset(); got != rp {
		t.Fatalf("recovery point %d -> %d before the deletion's directory sync", rp, got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(makeBatch(t, 9, 2, 2000, record.CodecNone, 60))
		done <- err
	}()
	waitDone(t, done, "an append while the deletion's directory sync is held")
	release()
	l.bg.Wait()
	if got, want := l.FlushedOffset(), l.Segments()[0].Base(); got < want {
		t.Fatalf("recovery point %d after the directory sync, below the first segment %d", got, want)
	}
}
