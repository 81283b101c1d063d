package segment

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestLogModel runs random sequences of append / read / roll / truncate /
// delete-prefix / set-start / retention / reopen against the in-memory reference,
// on both filesystems, with small segments and indexes so that rolls, index-full
// rolls and sparse index lookups all happen.
func TestLogModel(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for seed := uint64(1); seed <= 6; seed++ {
			runModel(t, fsys, dir+"/"+string(rune('a'+seed)), seed, 300)
		}
	})
}

func modelOptions(fsys vfs.FS, rng *rand.Rand) *Options {
	return &Options{
		FS:                 fsys,
		SegmentBytes:       int64(512 + rng.IntN(4096)),
		SegmentIndexBytes:  []int{24, 96, 4096}[rng.IntN(3)],
		IndexIntervalBytes: []int{0, 64, 300}[rng.IntN(3)],
		FileDeleteDelayMs:  -1,
		RetentionMs:        -1,
		Logger:             quiet,
		// Preallocated segments on the OS filesystem take mapped appends
		// (segment_map.go) below MapAppendsBelow, pwrite above it.
		Preallocate:     rng.IntN(2) == 0,
		MapAppendsBelow: []int{0, -1, 1 << 20}[rng.IntN(3)],
	}
}

var debugModel = false

func runModel(t *testing.T, fsys vfs.FS, dir string, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	o := modelOptions(fsys, rng)
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	ref := &refLog{}
	ts := int64(1_700_000_000_000)
	id := 0
	var trace []string
	for step := 0; step < steps; step++ {
		op := rng.IntN(100)
		trace = append(trace, fmt.Sprintf("%d:%d end=%d", step, op, ref.end))
		switch {
		case op < 55: // append 1-3 batches in one call
			var buf []byte
			var parts [][]byte
			for k := 1 + rng.IntN(3); k > 0; k-- {
				b := makeBatch(t, id, 1+rng.IntN(6), ts, codecs[rng.IntN(len(codecs))], rng.IntN(120))
				id++
				ts += int64(rng.IntN(50))
				parts = append(parts, b)
				buf = append(buf, b...)
			}
			info, err := l.Append(buf)
			if err != nil {
				t.Fatalf("seed %d step %d: append: %v", seed, step, err)
			}
			first := ref.end
			for _, p := range parts {
				ref.append(p)
			}
			if info.FirstOffset != first || info.LastOffset != ref.end-1 {
				t.Fatalf("append info %+v, want [%d, %d]", info, first, ref.end-1)
			}
			// One writer: once Append returns, its records are visible.
			if hw := l.HighWatermark(); hw != ref.end {
				t.Fatalf("seed %d step %d: high watermark %d after an append, want %d", seed, step, hw, ref.end)
			}
		case op < 62:
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		case op < 70: // truncate
			if ref.end > ref.start {
				off := ref.start + rng.Int64N(ref.end-ref.start+1)
				if debugModel {
					for _, sg := range l.Segments() {
						t.Logf("seg base=%d next=%d size=%d", sg.Base(), sg.NextOffset(), sg.Size())
					}
					t.Logf("truncate to %d, ref batches from: %+v", off, func() (r [][2]int64) {
						for _, b := range ref.from(off - 3) {
							r = append(r, [2]int64{b.base, b.last})
						}
						return
					}())
				}
				if err := l.TruncateTo(off); err != nil {
					t.Fatalf("seed %d step %d: truncate to %d: %v", seed, step, off, err)
				}
				ref.truncateTo(off)
			}
		case op < 76: // delete a prefix of segments
			segs := l.Segments()
			n := rng.IntN(len(segs))
			if _, err := l.DeletePrefix(n); err != nil {
				t.Fatal(err)
			}
			ref.dropBelow(l.Segments()[0].Base())
		case op < 80: // DeleteRecords
			if ref.end > ref.start {
				off := ref.start + rng.Int64N(ref.end-ref.start+1)
				if err := l.SetLogStartOffset(off); err != nil {
					t.Fatal(err)
				}
				ref.dropBelow(off)
			}
		case op < 84: // size retention
			l.o.RetentionBytes = int64(rng.IntN(8000))
			if _, err := l.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
			l.o.RetentionBytes = -1
			ref.dropBelow(l.Segments()[0].Base())
		case op < 92: // reopen, cleanly or with a full scan
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			o2 := *o
			o2.CleanShutdown = rng.IntN(2) == 0
			o2.LogStartOffset = ref.start
			if l, err = Open(dir, &o2); err != nil {
				t.Fatalf("seed %d step %d: reopen: %v", seed, step, err)
			}
		default:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if l.FlushedOffset() != ref.end {
				t.Fatalf("flushed %d, end %d", l.FlushedOffset(), ref.end)
			}
		}
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d, ops: %v", seed, trace[max(0, len(trace)-8):])
				}
			}()
			checkAgainst(t, l, ref, rng)
		})
		if t.Failed() {
			return
		}
	}
}
