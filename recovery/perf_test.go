package recovery

import (
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/segment"
)

// buildWide creates a cleanly shut down data directory of n partitions (topics
// of 50 partitions) with a few small batches each, with default segment options.
func buildWide(t testing.TB, dir string, n int) {
	t.Helper()
	opts := &Options{Logger: quiet}
	d, _, err := OpenDataDir(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := batch(t, 1, 3, 50)
	for i := 0; i < n; i++ {
		tp := TopicPartition{Topic: fmt.Sprintf("topic%d", i/50), Partition: int32(i % 50)}
		l, err := segment.Open(d.PartitionDir(tp), &segment.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 4; k++ {
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.AddLog(tp, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// openWide opens and cleanly closes dir, returning the open time.
func openWide(t testing.TB, dir string, n int) time.Duration {
	t.Helper()
	t0 := time.Now()
	d, rep, err := OpenDataDir(dir, &Options{Logger: quiet})
	el := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.CleanShutdown || rep.Totals.Partitions != n || rep.Totals.SegmentsScanned != 0 {
		t.Fatalf("report %+v", rep.Totals)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return el
}

// Opening a cleanly shut down data directory of 1,000 partitions scans nothing
// and takes under 0.3 s (best of five: the machine is shared).
func TestOpen1000PartitionsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1,000 partitions")
	}
	const n = 1000
	dir := t.TempDir()
	buildWide(t, dir, n)
	best := time.Hour
	for i := 0; i < 5; i++ {
		best = min(best, openWide(t, dir, n))
	}
	t.Logf("OpenDataDir of %d cleanly shut down partitions: %v (best of 5)", n, best)
	if best > 300*time.Millisecond && !raceEnabled {
		t.Fatalf("OpenDataDir of %d partitions took %v, want < 0.3 s", n, best)
	}
}

func BenchmarkOpenDataDir1000Clean(b *testing.B) {
	const n = 1000
	dir := b.TempDir()
	buildWide(b, dir, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		openWide(b, dir, n)
	}
}
