package segment

import (
	"errors"
	"testing"
)

func TestReconfigure(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	o := l.Options()
	o.RetentionMs, o.RetentionBytes, o.SegmentBytes, o.SegmentMs, o.FlushMessages = 1234, 5678, 4096, 99, 7
	o.FlushMs = 1 // ignored
	if err := l.Reconfigure(o); err != nil {
		t.Fatal(err)
	}
	got := l.Options()
	if got.RetentionMs != 1234 || got.RetentionBytes != 5678 || got.SegmentBytes != 4096 || got.SegmentMs != 99 || got.FlushMessages != 7 || got.FlushMs == 1 {
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
