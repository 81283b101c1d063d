package segment

import (
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
