package cleaner

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// TestCompactionModel checks Kafka's compaction guarantees against an in-memory
// reference log on random workloads (keys, tombstones, codecs, clock jumps,
// partial passes through a tiny map), running background-style passes (the
// active segment untouched) and offline passes (CompactDir semantics):
//   - offsets never change and order is kept (what is read is an in-order
//     subsequence of what was appended, contents and timestamps equal);
//   - a reader from the start sees at least the final value of every key, and
//     never an older value of a key whose tombstone is gone;
//   - every tombstone younger than delete.retention.ms is still there (a
//     reader reaching the head within delete.retention.ms sees it);
//   - everything at or above the next first dirty offset is untouched (a
//     caught-up reader sees every record), and the log end never moves.
func TestCompactionModel(t *testing.T) {
	for _, c := range []record.Codec{record.CodecNone, record.CodecLZ4, record.CodecGzip, record.CodecZstd} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", c, seed), func(t *testing.T) { runModel(t, c, seed) })
		}
	}
}

func runModel(t *testing.T, codec record.Codec, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const retention = 10_000
	now := int64(1_000_000)
	var clk atomic.Int64 // the log's background flushes read the clock
	clk.Store(now)
	clock := clk.Load
	fsys := vfs.NewMem()
	dir := "/data/t-0"
	lopts := &segment.Options{FS: fsys, SegmentBytes: 1500 + int64(rng.IntN(3000)), FileDeleteDelayMs: -1, RetentionMs: -1, Now: clock, Logger: quiet}
	l, err := segment.Open(dir, lopts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	nkeys := 5 + rng.IntN(40)
	var ref []refRec
	mapBytes := int64(SlotBytes * (8 + rng.IntN(200))) // often small: partial passes
	m, err := NewOffsetMap(mapBytes, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	firstDirty := int64(-1)
	var removed, tombsRemoved, partial, rebuilt int64
	for step := 0; step < 60; step++ {
		// Append a few batches.
		for b := rng.IntN(6); b > 0; b-- {
			n := 1 + rng.IntN(5)
			recs := make([]record.Record, n)
			next := l.LogEndOffset()
			for i := range recs {
				k := rng.IntN(nkeys)
				var v []byte
				if rng.IntN(8) != 0 {
					v = fmt.Appendf(nil, "v-%d-%d", next+int64(i), rng.IntN(1000))
				}
				ts := now - int64(rng.IntN(100))
				recs[i] = record.Record{Timestamp: ts, Key: key(k), Value: v}
				ref = append(ref, refRec{Offset: next + int64(i), Timestamp: ts, Key: key(k), Value: v, AppendMs: now})
			}
			if _, err := appendBatch(l, batchOf(t, codec, recs)); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(4) == 0 {
			now += int64(rng.IntN(retention))
			clk.Store(now)
		}
		if rng.IntN(3) != 0 {
			continue
		}
		offline := rng.IntN(4) == 0
		endBefore := l.LogEndOffset()
		st, err := clean(l, m, firstDirty, passOptions{
			now: now, deleteRetentionMs: retention, segmentBytes: lopts.SegmentBytes * 2, indexBytes: 1 << 20,
			offline: offline, logger: quiet,
		})
		if err != nil && err != ErrNothingToClean {
			t.Fatalf("step %d: clean: %v", step, err)
		}
		if err == nil {
			firstDirty = st.EndOffset
			removed += st.RecordsIn - st.RecordsOut
			tombsRemoved += st.TombstonesRemoved
			rebuilt += int64(st.BatchesRebuilt)
			if st.Partial {
				partial++
			}
		}
		if l.LogEndOffset() != endBefore {
			t.Fatalf("log end moved from %d to %d", endBefore, l.LogEndOffset())
		}
		checkModel(t, l, ref, now, retention, max(firstDirty, 0))
	}
	if removed == 0 || rebuilt == 0 {
		t.Fatalf("the workload removed nothing (removed %d, rebuilt %d)", removed, rebuilt)
	}
	t.Logf("removed %d records (%d tombstones), %d partial passes", removed, tombsRemoved, partial)
	// Everything survives a reopen.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = segment.Open(dir, lopts); err != nil {
		t.Fatal(err)
	}
	checkModel(t, l, ref, now, retention, max(firstDirty, 0))
}

func checkModel(t *testing.T, l *segment.Log, ref []refRec, now, retention, firstDirty int64) {
	t.Helper()
	got, _ := readAll(t, l)
	checkSubsequence(t, got, ref)
	present := map[int64]bool{}
	lastGot := map[string]int64{}
	for _, g := range got {
		present[g.Offset] = true
		lastGot[string(g.Key)] = g.Offset
	}
	last := map[string]*refRec{}
	for i := range ref {
		r := &ref[i]
		last[string(r.Key)] = r
		if r.Offset >= firstDirty && !present[r.Offset] {
			t.Fatalf("offset %d at or above the first dirty offset %d is gone: a caught-up reader missed it", r.Offset, firstDirty)
		}
	}
	for k, r := range last {
		switch {
		case r.Value != nil && !present[r.Offset]:
			t.Fatalf("key %s: final value at %d missing", k, r.Offset)
		case r.Value == nil && now < r.AppendMs+retention && !present[r.Offset]:
			t.Fatalf("key %s: tombstone at %d removed %d ms after its append, delete.retention.ms is %d", k, r.Offset, now-r.AppendMs, retention)
		case r.Value == nil && !present[r.Offset]:
			if o, ok := lastGot[k]; ok {
				t.Fatalf("key %s: tombstone at %d removed but an older record at %d remains", k, r.Offset, o)
			}
		}
		if o, ok := lastGot[k]; ok && o != r.Offset && present[r.Offset] == false {
			t.Fatalf("key %s: latest visible %d is not the final %d", k, o, r.Offset)
		}
	}
}
