package tools

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/record"
)

// writeBenchLog writes a log of n batches of 1000 uncompressed 100-byte
// records (what strata bench log writes) and returns its path.
func writeBenchLog(tb testing.TB, batches int) string {
	tb.Helper()
	var log []byte
	opts := record.DefaultBatchOptions()
	recs := make([]record.Record, 1000)
	for i := range recs {
		recs[i] = record.Record{Timestamp: tpTs, Value: []byte(strings.Repeat("x", 100))}
	}
	for b := 0; b < batches; b++ {
		opts.BaseOffset = int64(b * len(recs))
		log = must(record.AppendBatch(log, opts, recs))
	}
	p := filepath.Join(tb.TempDir(), seg0+".log")
	if err := os.WriteFile(p, log, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// raceEnabled is set under the race detector (dumplog_race_test.go).
var raceEnabled bool

// TestDumplogDeepJSONAllocs: the deep JSON path allocates per file, not per
// record or batch.
func TestDumplogDeepJSONAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	small, large := writeBenchLog(t, 2), writeBenchLog(t, 20)
	for _, flags := range [][]string{{"--json"}, {"--json", "--print-data"}, {"--print-data", "--data-encoding", "hex"}} {
		allocs := func(p string) float64 {
			return testing.AllocsPerRun(3, func() {
				args := append(append([]string{"strata", "dumplog", "--deep-iteration"}, flags...), p)
				if code := Main(args, io.Discard, io.Discard); code != 0 {
					t.Fatalf("exit %d", code)
				}
			})
		}
		a2, a20 := allocs(small), allocs(large)
		// 18 more batches, 18000 more records: allow a few allocations of
		// slack (buffer growth), not one per batch.
		if a20-a2 > 10 {
			t.Errorf("%v: allocations grow with the data: %v for 2 batches, %v for 20", flags, a2, a20)
		}
	}
}

// BenchmarkDumplogDeepJSON reports records per second of
// "strata dumplog --deep-iteration --json" to a discarding writer.
func BenchmarkDumplogDeepJSON(b *testing.B) {
	p := writeBenchLog(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := Main([]string{"strata", "dumplog", "--deep-iteration", "--json", p}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(b.N)*100000/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkVerify reports MB/s of strata verify on one segment.
func BenchmarkVerify(b *testing.B) {
	p := writeBenchLog(b, 100)
	fi, _ := os.Stat(p)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Main([]string{"strata", "verify", p}, io.Discard, io.Discard)
	}
}
