package cleaner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// TestCompactCrashSafety crashes an offline compaction (CompactDir) at every
// mutating filesystem operation and, for every state a power loss at that
// moment could leave, reopens the log (segment.Open finishes or rolls back the
// swap) and checks that each segment group holds exactly the old or exactly the
// new records, never a mixture, and that no key's last value is missing.
func TestCompactCrashSafety(t *testing.T) {
	offline := func(fsys vfs.FS) error {
		_, err := CompactDir(crashDir, crashOpts(fsys))
		return err
	}
	for _, codec := range []record.Codec{record.CodecNone, record.CodecLZ4} {
		t.Run(codec.String(), func(t *testing.T) { runCrash(t, codec, offline, true) })
	}
}

// TestBackgroundCleanCrashSafety is the same crash loop over a background
// pass: the Manager cleaning an open log (its active segment untouched) and
// writing cleaner-offset-checkpoint.
func TestBackgroundCleanCrashSafety(t *testing.T) {
	live := func(fsys vfs.FS) error {
		l, err := segment.Open(crashDir, &segment.Options{FS: fsys, SegmentBytes: 700, SegmentIndexBytes: 4096, FileDeleteDelayMs: -1, Logger: quiet})
		if err != nil {
			return err
		}
		defer l.Close()
		m, err := NewManager(&Config{FS: fsys, Logger: quiet, DedupeBufferBytes: 1 << 20, Now: func() int64 { return 5000 }})
		if err != nil {
			return err
		}
		defer m.Close()
		tp := checkpoint.TopicPartition{Topic: "t"}
		if err := m.Register(tp, l, &LogConfig{CleanupPolicy: "compact", MinCleanableDirtyRatio: -1, SegmentBytes: 1400}); err != nil {
			return err
		}
		if st, ok := m.CleanOnce(); !ok || st.BytesIn == 0 {
			return fmt.Errorf("no pass ran")
		}
		if u := m.Uncleanable(); len(u) > 0 {
			return fmt.Errorf("uncleanable: %v", u)
		}
		return nil
	}
	runCrash(t, record.CodecNone, live, false)
}

const crashDir = "/data/t-0"

var stride = 1

func crashSetup(t *testing.T, codec record.Codec) (*vfs.MemFS, []refRec) {
	base := vfs.NewMem()
	l, err := segment.Open(crashDir, &segment.Options{FS: base, SegmentBytes: 700, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var ref []refRec
	for b := 0; b < 14; b++ {
		recs := make([]record.Record, 3)
		next := l.LogEndOffset()
		for i := range recs {
			o := next + int64(i)
			var v []byte
			if o%7 != 3 {
				v = fmt.Appendf(nil, "value-%d", o)
			}
			recs[i] = record.Record{Timestamp: 1000 + o, Key: key(int(o*5) % 6), Value: v}
			ref = append(ref, refRec{Offset: o, Timestamp: 1000 + o, Key: recs[i].Key, Value: v})
		}
		if _, err := appendBatch(l, batchOf(t, codec, recs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Start from a state where everything is durable.
	return base.CrashClone(vfs.CrashOptions{KeepUnsynced: true}), ref
}

func crashOpts(fsys vfs.FS) *CompactOptions {
	return &CompactOptions{FS: fsys, SegmentBytes: 1400, SegmentIndexBytes: 4096, Now: func() int64 { return 5000 }, Logger: quiet}
}

// groupContents reads the log and splits its records by the group bases.
func groupContents(t *testing.T, l *segment.Log, bases []int64) [][]int64 {
	got, _ := readAll(t, l)
	out := make([][]int64, len(bases))
	for _, r := range got {
		g := 0
		for g+1 < len(bases) && r.Offset >= bases[g+1] {
			g++
		}
		out[g] = append(out[g], r.Offset)
	}
	return out
}

// runCrash runs the crash loop; strict asks every crashed run to report an
// error (the Manager only logs a failed checkpoint write).
func runCrash(t *testing.T, codec record.Codec, run func(vfs.FS) error, strict bool) {
	base, _ := crashSetup(t, codec)
	oldFS := base.CrashClone(vfs.CrashOptions{KeepUnsynced: true})
	lo := &segment.Options{FS: oldFS, Logger: quiet, SegmentBytes: 700, SegmentIndexBytes: 4096}
	// The clean run: the expected new contents and the group bases.
	newFS := base.CrashClone(vfs.CrashOptions{KeepUnsynced: true})
	counter := vfs.NewCounter(vfs.MutatingOps...)
	if err := run(vfs.Inject(newFS, counter)); err != nil {
		t.Fatal(err)
	}
	ln, err := segment.Open(crashDir, &segment.Options{FS: newFS, Logger: quiet, SegmentIndexBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, s := range ln.Segments() {
		bases = append(bases, s.Base())
	}
	want := groupContents(t, ln, bases)
	ln.Close()
	lold, err := segment.Open(crashDir, lo)
	if err != nil {
		t.Fatal(err)
	}
	old := groupContents(t, lold, bases)
	lold.Close()
	changed := 0
	for g := range bases {
		if !slices.Equal(old[g], want[g]) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("%d groups changed by the pass: too few to tell old from new", changed)
	}
	finalOf := map[string]int64{}
	ln, _ = segment.Open(crashDir, &segment.Options{FS: newFS, Logger: quiet, SegmentIndexBytes: 4096})
	all, _ := readAll(t, ln)
	ln.Close()
	for _, r := range all {
		finalOf[string(r.Key)] = r.Offset
	}

	states := 0
	if testing.Short() {
		stride = 7
	}
	for k := 0; k <= counter.Count(); k += stride {
		mem := base.CrashClone(vfs.CrashOptions{KeepUnsynced: true})
		crash := vfs.CrashAt(k, vfs.MutatingOps...)
		err := run(vfs.Inject(mem, crash))
		if strict && k < counter.Count() && err == nil && crash.Crashed() {
			t.Fatalf("k=%d: no error from a crashed pass", k)
		}
		n := 0
		for desc, after := range mem.AllCrashStates(vfs.CrashOptions{TornPoints: -1, NoExtend: true}) {
			states++
			n++
			l, err := segment.Open(crashDir, &segment.Options{FS: after, Logger: quiet, SegmentIndexBytes: 4096})
			if err != nil {
				t.Fatalf("k=%d state %s: open: %v", k, desc, err)
			}
			got := groupContents(t, l, bases)
			recs, _ := readAll(t, l)
			l.Close()
			for g := range bases {
				if !slices.Equal(got[g], old[g]) && !slices.Equal(got[g], want[g]) {
					t.Fatalf("k=%d state %s: group %d holds %v, neither old %v nor new %v", k, desc, g, got[g], old[g], want[g])
				}
			}
			seen := map[int64]bool{}
			for _, r := range recs {
				seen[r.Offset] = true
			}
			for kk, off := range finalOf {
				if !seen[off] {
					t.Fatalf("k=%d state %s: key %s lost its last value at %d", k, desc, kk, off)
				}
			}
		}
		if testing.Verbose() && n > 50 {
			t.Logf("k=%d: %d states", k, n)
		}
	}
	t.Logf("%d crash points (stride %d), %d states", counter.Count()+1, stride, states)
}
