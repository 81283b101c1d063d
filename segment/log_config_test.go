package segment

import (
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
)

// TestReconfigureFlushMs: a log opened without flush.ms gets a background
// flusher when flush.ms is set on the open log, and appends become durable
// (the recovery point advances) without an explicit Flush.
func TestReconfigureFlushMs(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, 1, 3, 1000, record.CodecNone, 10)
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if got := l.FlushedOffset(); got != 0 {
		t.Fatalf("flushed to %d with flush.ms unset", got)
	}
	o := l.Options()
	o.FlushMs = 10
	if err := l.Reconfigure(o); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.FlushedOffset() != l.LogEndOffset() {
		if time.Now().After(deadline) {
			t.Fatalf("recovery point %d, end %d: flush.ms not applied to the open log", l.FlushedOffset(), l.LogEndOffset())
		}
		time.Sleep(5 * time.Millisecond)
	}
	o.FlushMs = 0 // back to never: the flusher idles
	if err := l.Reconfigure(o); err != nil || l.Options().FlushMs != Never {
		t.Fatalf("flush.ms 0: %v, %d", err, l.Options().FlushMs)
	}
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if l.FlushedOffset() == l.LogEndOffset() {
		t.Fatal("flushed after flush.ms was reset to never")
	}
}

func TestReconfigure(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	o := l.Options()
	o.RetentionMs, o.RetentionBytes, o.SegmentBytes, o.SegmentMs, o.FlushMessages = 1234, 5678, 4096, 99, 7
	o.FlushMs = 1
	if err := l.Reconfigure(o); err != nil {
		t.Fatal(err)
	}
	got := l.Options()
	if got.RetentionMs != 1234 || got.RetentionBytes != 5678 || got.SegmentBytes != 4096 || got.SegmentMs != 99 || got.FlushMessages != 7 || got.FlushMs != 1 {
		t.Fatalf("after Reconfigure: %+v", got)
	}
	bad := got
	bad.SegmentBytes = 3
	if err := l.Reconfigure(bad); err == nil || l.Options().SegmentBytes != 4096 {
		t.Fatalf("invalid segment.bytes accepted: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Reconfigure(got); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed log: %v", err)
	}
}
