package segment

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// savedCut is one SaveCut call with the bytes the file held then.
type savedCut struct {
	file      string
	pos, n    int64
	kind      string
	data      []byte
	sizeAfter int64 // the file's size once Open returned (-1: gone)
}

// tornLog writes 40 batches over several small segments and closes the log
// cleanly; it returns the .log paths, oldest first, and the batches.
func tornLog(t *testing.T, fsys vfs.FS, dir string) ([]string, [][]byte) {
	t.Helper()
	l, err := Open(dir, &Options{FS: fsys, SegmentBytes: 1500, IndexIntervalBytes: 100, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := l.Append(makeBatch(t, i, 1+i%3, 1000, record.CodecNone, 60)); err != nil {
			t.Fatal(err)
		}
	}
	batches := readAll(t, l, 0, 1<<20)
	var logs []string
	for _, s := range l.Segments() {
		logs = append(logs, s.Path(LogSuffix))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(logs) < 5 {
		t.Fatalf("want at least 5 segments, have %d", len(logs))
	}
	return logs, batches
}

// tear cuts a .log in the middle of its second batch and returns the byte
// position of that batch (where recovery will cut).
func tear(t *testing.T, fsys vfs.FS, path string) int64 {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := make([]byte, record.BatchHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseEntryHeader(hdr, 0)
	if err != nil {
		t.Fatal(err)
	}
	second := h.TotalSize()
	if err := f.Truncate(second + 30); err != nil {
		t.Fatal(err)
	}
	return second
}

// openSaving opens dir with the given recovery point and clean flag,
// recording every SaveCut call with the bytes it was shown; Inspect must
// predict the same cuts.
func openSaving(t *testing.T, fsys vfs.FS, dir string, rp int64, clean bool, logger *slog.Logger) (*Log, *LoadReport, []savedCut) {
	t.Helper()
	var saved []savedCut
	o := &Options{FS: fsys, SegmentBytes: 1500, IndexIntervalBytes: 100, SegmentIndexBytes: 4096, Logger: logger,
		RecoveryPoint: rp, CleanShutdown: clean}
	irep, err := Inspect(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	o.SaveCut = func(file string, pos, n int64, kind string) (string, error) {
		f, err := fsys.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b := make([]byte, n)
		if _, err := f.ReadAt(b, pos); err != nil {
			return "", err
		}
		if st, _ := f.Stat(); st.Size() != pos+n {
			t.Errorf("SaveCut(%s, %d, %d): the file holds %d bytes", file, pos, n, st.Size())
		}
		saved = append(saved, savedCut{file: file, pos: pos, n: n, kind: kind, data: b})
		return "/backup/" + file, nil
	}
	l, rep, err := OpenWithReport(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(irep.Cuts) != len(rep.Cuts) || irep.SegmentsRemoved != rep.SegmentsRemoved || irep.LogEndOffset != rep.LogEndOffset {
		t.Fatalf("Inspect predicted %+v, Open did %+v", irep.Cuts, rep.Cuts)
	}
	for i := range rep.Cuts {
		if irep.Cuts[i] != rep.Cuts[i] {
			t.Fatalf("Inspect predicted cut %+v, Open made %+v", irep.Cuts[i], rep.Cuts[i])
		}
	}
	for i := range saved {
		saved[i].sizeAfter = -1
		if st, err := fsys.Stat(saved[i].file); err == nil {
			saved[i].sizeAfter = st.Size()
		}
	}
	return l, rep, saved
}

// TestTornSegmentBelowRecoveryPoint: a segment below the recovery point (any
// segment after a clean shutdown) torn in the middle of a batch loses only its
// own tail; every later segment is kept and served, the offsets keep a gap,
// the cut is logged at ERROR with its offsets and bytes, and SaveCut is shown
// exactly the bytes cut. Before, every later segment was deleted.
func TestTornSegmentBelowRecoveryPoint(t *testing.T) {
	for _, c := range []struct {
		name  string
		clean bool
		rp    func(end int64) int64
	}{
		{"clean shutdown", true, func(int64) int64 { return 0 }},
		{"crash, recovery point past the torn segment", false, func(end int64) int64 { return end - 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
				logs, batches := tornLog(t, fsys, dir)
				end := record.Batch(batches[len(batches)-1]).LastOffset() + 1
				torn := logs[2]
				before := readFileT(t, fsys, torn)
				pos := tear(t, fsys, torn)
				var logbuf bytes.Buffer
				l, rep, saved := openSaving(t, fsys, dir, c.rp(end), c.clean, slog.New(slog.NewTextHandler(&logbuf, nil)))
				defer l.Close()
				if rep.SegmentsRemoved != 0 || len(l.Segments()) != len(logs) || l.LogEndOffset() != end {
					t.Fatalf("%d segments removed, %d of %d left, log end %d (want %d)", rep.SegmentsRemoved, len(l.Segments()), len(logs), l.LogEndOffset(), end)
				}
				if len(rep.Cuts) != 1 {
					t.Fatalf("cuts %+v", rep.Cuts)
				}
				cut := rep.Cuts[0]
				tornSize := pos + 30
				if cut.File != torn || cut.Position != pos || cut.Bytes != tornSize-pos || !cut.BelowRecoveryPoint || cut.Removed {
					t.Fatalf("cut %+v, want %s at %d, %d bytes", cut, torn, pos, tornSize-pos)
				}
				if len(saved) != 1 || saved[0].file != torn || saved[0].pos != pos || saved[0].kind != "tail" ||
					!bytes.Equal(saved[0].data, before[pos:tornSize]) || saved[0].sizeAfter != pos {
					t.Fatalf("saved %+v", saved)
				}
				// Everything but the torn segment's tail is served: the
				// later segments' batches with their offsets, after a gap.
				nextBase, _, _ := ParseFileName(logs[3][strings.LastIndexByte(logs[3], '/')+1:])
				got := readAll(t, l, l.LogStartOffset(), 1<<20)
				var want [][]byte
				for _, b := range batches {
					if o := record.Batch(b).BaseOffset(); o >= cut.FirstOffset && o < nextBase {
						continue
					}
					want = append(want, b)
				}
				if len(got) != len(want) || len(want) < len(batches)/2 {
					t.Fatalf("%d batches served, want %d (all but [%d, %d))", len(got), len(want), cut.FirstOffset, nextBase)
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("batch %d differs", i)
					}
				}
				line := logbuf.String()
				if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "below the recovery point") ||
					!strings.Contains(line, "first_offset_lost="+itoa(cut.FirstOffset)) || !strings.Contains(line, "bytes="+itoa(cut.Bytes)) ||
					!strings.Contains(line, "saved_to=/backup/") {
					t.Fatalf("log:\n%s", line)
				}
			})
		})
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func readFileT(t *testing.T, fsys vfs.FS, path string) []byte {
	t.Helper()
	f, err := fsys.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTornSegmentAtRecoveryPoint: from the segment holding the recovery point
// on, Kafka's rule stands: the torn segment is cut and every later one is
// removed, each file shown to SaveCut first.
func TestTornSegmentAtRecoveryPoint(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		logs, _ := tornLog(t, fsys, dir)
		torn := logs[2]
		base, _, _ := ParseFileName(torn[strings.LastIndexByte(torn, '/')+1:])
		pos := tear(t, fsys, torn)
		l, rep, saved := openSaving(t, fsys, dir, base, false, quiet)
		defer l.Close()
		if rep.SegmentsRemoved != len(logs)-3 || len(l.Segments()) != 3 || l.LogEndOffset() != rep.Cuts[0].FirstOffset {
			t.Fatalf("%d removed, %d left, log end %d, cuts %+v", rep.SegmentsRemoved, len(l.Segments()), l.LogEndOffset(), rep.Cuts)
		}
		if c := rep.Cuts[0]; c.File != torn || c.Position != pos || c.BelowRecoveryPoint || c.Removed {
			t.Fatalf("first cut %+v", c)
		}
		logsSaved, snapsSaved := 0, 0
		for _, s := range saved {
			switch {
			case s.kind == "tail" && s.file == torn && s.pos == pos && s.sizeAfter == pos:
			case (s.kind == "segment" || s.kind == "index") && s.pos == 0 && s.sizeAfter == -1:
				if s.kind == "segment" {
					logsSaved++
				}
			case s.kind == "snapshot" && s.pos == 0 && s.sizeAfter == -1:
				// The producer snapshot of a roll past the cut.
				if off, suf, _ := ParseFileName(s.file[strings.LastIndexByte(s.file, '/')+1:]); suf != SnapshotSuffix || off <= l.LogEndOffset() {
					t.Errorf("snapshot %s at or below the log end %d saved", s.file, l.LogEndOffset())
				}
				snapsSaved++
			default:
				t.Errorf("unexpected save %+v", s)
			}
		}
		if logsSaved != len(logs)-3 {
			t.Errorf("%d removed .log files saved, want %d", logsSaved, len(logs)-3)
		}
		if snapsSaved != len(logs)-3 {
			t.Errorf("%d producer snapshots above the log end saved, want %d (one per roll past the cut)", snapsSaved, len(logs)-3)
		}
		for _, c := range rep.Cuts[1:] {
			if !c.Removed || c.Position != 0 {
				t.Errorf("cut %+v after the first is not a removal", c)
			}
		}
	})
}

// TestSaveCutFailureCutsNothing: when SaveCut fails, Open fails with
// ErrSaveCut and the files are as they were.
func TestSaveCutFailureCutsNothing(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/data/t-0"
	logs, _ := tornLog(t, fsys, dir)
	tear(t, fsys, logs[2])
	before := map[string][]byte{}
	for _, p := range logs {
		before[p] = readFileT(t, fsys, p)
	}
	boom := errors.New("disk full")
	for _, clean := range []bool{true, false} {
		_, err := Open(dir, &Options{FS: fsys, SegmentBytes: 1500, SegmentIndexBytes: 4096, Logger: quiet, CleanShutdown: clean,
			SaveCut: func(string, int64, int64, string) (string, error) { return "", boom }})
		if !errors.Is(err, ErrSaveCut) || !errors.Is(err, boom) {
			t.Fatalf("clean %v: err %v", clean, err)
		}
		for p, b := range before {
			if got := readFileT(t, fsys, p); !bytes.Equal(got, b) {
				t.Fatalf("clean %v: %s changed though nothing could be saved", clean, p)
			}
		}
	}
}
