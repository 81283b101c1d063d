package segment

import (
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// TestHighWatermarkWaitsForFlush: with flush.messages=1 a record becomes
// readable to consumers (ReadToHighWatermark, HighWatermark, Changed) only
// once its fsync has returned, as Kafka moves the high watermark after the
// append's flush. The fsync is held open to look at the log meanwhile.
func TestHighWatermarkWaitsForFlush(t *testing.T) {
	gate := vfs.NewSyncGate(LogSuffix)
	fsys := vfs.Inject(vfs.OS, gate)
	l, err := Open(t.TempDir(), &Options{FS: fsys, FlushMessages: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer gate.Release() // a failing check must not leave an fsync held (the deferred Close would wait on it)
	b := makeBatch(t, 0, 3, 1, record.CodecNone, 40)
	if _, err := l.Append(append([]byte(nil), b...)); err != nil {
		t.Fatal(err)
	}
	if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != 3 || leo != 3 {
		t.Fatalf("after a flushed append: high watermark %d, log end %d; want 3, 3", hw, leo)
	}

	gate.Hold()
	changed := l.Changed()
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(append([]byte(nil), b...))
		done <- err
	}()
	<-gate.Entered() // the second append is in its fsync
	if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != 3 || leo != 6 {
		t.Fatalf("during the fsync: high watermark %d, log end %d; want 3, 6", hw, leo)
	}
	select {
	case <-changed:
		t.Fatal("Changed fired before the appended records were flushed")
	default:
	}
	r, err := l.ReadToHighWatermark(3, 1<<20)
	if err != nil || r.Len != 0 {
		t.Fatalf("ReadToHighWatermark(3) during the fsync: %d bytes, %v; want an empty region", r.Len, err)
	}
	r.Release()
	r, err = l.ReadToHighWatermark(0, 1<<20)
	if err != nil || r.Len != int64(len(b)) {
		t.Fatalf("ReadToHighWatermark(0) during the fsync: %d bytes, %v; want the first batch only (%d)", r.Len, err, len(b))
	}
	r.Release()
	r, err = l.Read(3, 1<<20) // the log itself (a replica's view) holds them
	if err != nil || r.Len != int64(len(b)) {
		t.Fatalf("Read(3) during the fsync: %d bytes, %v; want %d", r.Len, err, len(b))
	}
	r.Release()
	if _, err := l.ReadToHighWatermark(7, 1<<20); err == nil {
		t.Fatal("ReadToHighWatermark past the log end: no error")
	}

	gate.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Changed did not fire once the records were flushed")
	}
	if hw := l.HighWatermark(); hw != 6 {
		t.Fatalf("after the fsync: high watermark %d, want 6", hw)
	}
	r, err = l.ReadToHighWatermark(3, 1<<20)
	if err != nil || r.Len != int64(len(b)) {
		t.Fatalf("ReadToHighWatermark(3) after the fsync: %d bytes, %v; want %d", r.Len, err, len(b))
	}
	r.Release()
}

// TestHighWatermarkWithoutFlush: with no flush.messages the high watermark is
// the log end after every append, and truncation lowers both.
func TestHighWatermarkWithoutFlush(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 4 {
		if _, err := l.Append(makeBatch(t, 0, 2, 1, record.CodecNone, 30)); err != nil {
			t.Fatal(err)
		}
		if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != leo || hw != int64(2*(i+1)) {
			t.Fatalf("append %d: high watermark %d, log end %d", i, hw, leo)
		}
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("after TruncateTo(4): high watermark %d", hw)
	}
}

// hookAt returns a test hook that, the first time stage is reached, signals
// on reached and waits for resume.
func hookAt(stage string) (hook func(string), reached, resume chan struct{}) {
	reached, resume = make(chan struct{}), make(chan struct{})
	var once sync.Once
	return func(s string) {
		if s == stage {
			once.Do(func() {
				close(reached)
				<-resume
			})
		}
	}, reached, resume
}

// TruncateTo lowers the high watermark to the new end, never raises it:
// records the cut keeps that still wait for their fsync (flush.messages=1)
// stay invisible to consumers.
func TestTruncateKeepsUnflushedAboveHighWatermark(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{FlushMessages: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(makeBatch(t, 0, 3, 1, record.CodecNone, 20)); err != nil {
		t.Fatal(err)
	}
	hook, reached, resume := hookAt("appended")
	l.testHook = hook
	// One append of two batches, [3, 6) and [6, 9), stopped before its fsync.
	two := append(makeBatch(t, 1, 3, 2, record.CodecNone, 20), makeBatch(t, 2, 3, 3, record.CodecNone, 20)...)
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(two)
		done <- err
	}()
	<-reached
	if err := l.TruncateTo(6); err != nil { // keeps [3, 6), unflushed
		t.Fatal(err)
	}
	if hw, leo, rp := l.HighWatermark(), l.LogEndOffset(), l.FlushedOffset(); hw != 3 || leo != 6 || rp != 3 {
		t.Fatalf("after the truncation: high watermark %d, log end %d, recovery point %d; want 3, 6, 3", hw, leo, rp)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if hw, rp := l.HighWatermark(), l.FlushedOffset(); hw > rp {
		t.Fatalf("after the fsync: high watermark %d above the recovery point %d", hw, rp)
	}
}

// The high watermark raise after an append's fsync (outside the writer lock)
// does not cover records appended after a truncation removed that append's
// own records: those wait for their own fsync.
func TestRaiseAfterFsyncSkipsTruncatedRange(t *testing.T) {
	gate := vfs.NewSyncGate(LogSuffix)
	l, err := Open(t.TempDir(), &Options{FS: vfs.Inject(vfs.OS, gate), FlushMessages: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer gate.Release() // before Close: a failed check must not leave an fsync held
	if _, err := l.Append(makeBatch(t, 0, 3, 1, record.CodecNone, 20)); err != nil {
		t.Fatal(err)
	}
	hook, reached, resume := hookAt("flushed")
	l.testHook = hook
	first := make(chan error, 1)
	go func() { // [3, 6): flushed, stopped before it raises the high watermark
		_, err := l.Append(makeBatch(t, 1, 3, 2, record.CodecNone, 20))
		first <- err
	}()
	<-reached
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	gate.Hold()
	second := make(chan error, 1)
	go func() { // [3, 7): appended after the truncation, held in its fsync
		_, err := l.Append(makeBatch(t, 2, 4, 3, record.CodecNone, 20))
		second <- err
	}()
	<-gate.Entered()
	close(resume)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != 3 || leo != 7 {
		t.Fatalf("while the second append waits for its fsync: high watermark %d, log end %d; want 3, 7", hw, leo)
	}
	gate.Release()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 7 {
		t.Fatalf("after both fsyncs: high watermark %d, want 7", hw)
	}
}

// Changing flush.messages while an append waits for its fsync keeps later
// appends behind it: one that no longer reaches flush.messages itself waits
// for a flush too instead of raising the high watermark over the pending
// records.
func TestReconfigureFlushMessagesKeepsPendingFlush(t *testing.T) {
	gate := vfs.NewSyncGate(LogSuffix)
	o := Options{FS: vfs.Inject(vfs.OS, gate), FlushMessages: 1, Logger: quiet}
	l, err := Open(t.TempDir(), &o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer gate.Release() // before Close: a failed check must not leave an fsync held
	gate.Hold()
	first := make(chan error, 1)
	go func() {
		_, err := l.Append(makeBatch(t, 0, 1, 1, record.CodecNone, 20))
		first <- err
	}()
	<-gate.Entered()
	o = l.Options()
	o.FlushMessages = 1000
	if err := l.Reconfigure(o); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := l.Append(makeBatch(t, 1, 1, 2, record.CodecNone, 20))
		second <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for l.LogEndOffset() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second append never reached the log")
		}
		time.Sleep(time.Millisecond)
	}
	// The second append's writer-lock part is over once the lock is free.
	l.mu.Lock()
	hw := l.HighWatermark()
	l.mu.Unlock()
	if hw != 0 {
		t.Fatalf("while the first append waits for its fsync: high watermark %d, want 0", hw)
	}
	gate.Release()
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if hw := l.HighWatermark(); hw != 2 {
		t.Fatalf("after the fsync: high watermark %d, want 2", hw)
	}
}
