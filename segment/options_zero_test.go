package segment

import (
	"testing"
	"time"

	"github.com/stratalog/strata/record"
)

// TestExplicitZeros: with ExplicitZeros, retention.ms=0 and
// retention.bytes=0 delete every segment (the active one rolled first) and
// flush.ms=0 is kept, at Open and through Reconfigure; without it zero is
// still "the default" (7 days, no size limit, never).
func TestExplicitZeros(t *testing.T) {
	o := (&Options{}).EnsureDefaults()
	if o.RetentionMs != DefaultRetentionMs || o.RetentionBytes != -1 || o.FlushMs != Never {
		t.Fatalf("defaults: %+v", o)
	}
	for _, c := range []struct {
		name   string
		ms, by int64
	}{{"retention.ms=0", 0, -1}, {"retention.bytes=0", -1, 0}} {
		l, err := Open(t.TempDir(), &Options{RetentionMs: c.ms, RetentionBytes: c.by, FlushMs: Never, ExplicitZeros: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Options(); got.RetentionMs != c.ms || got.RetentionBytes != c.by {
			t.Fatalf("%s: options %+v", c.name, got)
		}
		for i := range 3 {
			b := makeBatch(t, i, 2, time.Now().UnixMilli()-10, record.CodecNone, 10)
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != l.LogEndOffset() || l.LogEndOffset() != 6 {
			t.Fatalf("%s: log start %d, end %d after retention", c.name, l.LogStartOffset(), l.LogEndOffset())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Open(t.TempDir(), &Options{FlushMs: 0, ExplicitZeros: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.Options().FlushMs; got != 0 {
		t.Fatalf("flush.ms=0 opened as %d", got)
	}
	lo := l.Options()
	lo.RetentionMs, lo.ExplicitZeros = 0, true
	if err := l.Reconfigure(lo); err != nil || l.Options().RetentionMs != 0 {
		t.Fatalf("Reconfigure retention.ms=0: %v, %d", err, l.Options().RetentionMs)
	}
	lo.ExplicitZeros = false
	if err := l.Reconfigure(lo); err != nil || l.Options().RetentionMs != DefaultRetentionMs {
		t.Fatalf("Reconfigure retention.ms=0 without ExplicitZeros: %v, %d", err, l.Options().RetentionMs)
	}
}
