package recovery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// tearMiddle cuts a .log in the middle of its second batch; it returns the
// file's bytes before, and where its second batch began.
func tearMiddle(t *testing.T, fsys vfs.FS, path string) ([]byte, int64) {
	t.Helper()
	before := readFile(t, fsys, path)
	h, err := record.ParseEntryHeader(before, 0)
	if err != nil {
		t.Fatal(err)
	}
	second := h.TotalSize()
	if int64(len(before)) < second+40 {
		t.Fatalf("%s too short to tear", path)
	}
	writeFile(t, fsys, path, before[:second+30])
	return before, second
}

func readManifest(t *testing.T, fsys vfs.FS, dir string) BackupManifest {
	t.Helper()
	var m BackupManifest
	if err := json.Unmarshal(readFile(t, fsys, filepath.Join(dir, ManifestFile)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTornMiddleSegmentKept: after a clean shutdown, a middle segment torn
// mid-batch loses only its tail: the later segments stay (before, all of them
// were deleted at WARN), the cut is logged at ERROR with offsets and bytes,
// and the cut bytes are in <partition>/recovery-backup/<time>/ with a
// MANIFEST.json, as strata recover --backup lays them out.
func TestTornMiddleSegmentKept(t *testing.T) {
	c := newCase(t)
	torn := c.logs[1]
	before, pos := tearMiddle(t, c.fsys, torn)
	var logs logCapture
	opts := testOpts(c.fsys)
	opts.Logger = logs.logger()
	opts.OptionsFor = func(string) *segment.Options {
		so := testSegOpts()
		so.Logger = nil // the data directory's logger, as in the broker
		return so
	}
	p, rep := c.open(t, opts)
	if !rep.CleanShutdown || p.SegmentsRemoved != 0 || p.LogEndOffset != c.end || len(p.Truncations) != 1 {
		t.Fatalf("report %+v", *p)
	}
	cut := p.Truncations[0]
	if cut.File != torn || cut.Position != pos || cut.Bytes != 30 || !cut.BelowRecoveryPoint || cut.Removed {
		t.Fatalf("cut %+v", cut)
	}
	if got := logFiles(t, c.fsys, c.pdir); !slices.Equal(got, c.logs) {
		t.Fatalf("segments %v, want %v", got, c.logs)
	}
	// The backup: one tail, the very bytes cut.
	if !strings.HasPrefix(p.BackupDir, filepath.Join(c.pdir, BackupDirName)+"/") {
		t.Fatalf("backup dir %q", p.BackupDir)
	}
	m := readManifest(t, c.fsys, p.BackupDir)
	if len(m.Files) != 1 {
		t.Fatalf("manifest %+v", m)
	}
	e := m.Files[0]
	saved := readFile(t, c.fsys, e.Backup)
	sum := sha256.Sum256(saved)
	if e.Original != torn || e.Kind != "tail" || e.Position != pos || e.Length != 30 || e.OldSize != pos+30 ||
		!slices.Equal(saved, before[pos:pos+30]) || e.SHA256 != hex.EncodeToString(sum[:]) ||
		e.Backup != filepath.Join(p.BackupDir, "t-0", filepath.Base(torn)+"@"+strconv.FormatInt(pos, 10)) {
		t.Fatalf("manifest entry %+v", e)
	}
	for _, want := range []string{"level=ERROR", "below the recovery point", "position=" + strconv.FormatInt(pos, 10),
		"bytes=30", "first_offset_lost=" + strconv.FormatInt(cut.FirstOffset, 10), "saved_to=" + e.Backup} {
		if !logs.has(want) {
			t.Fatalf("log lacks %q:\n%s", want, logs.String())
		}
	}
	// Every batch but the torn segment's from its second on is still there.
	base2, _, _ := segment.ParseFileName(filepath.Base(c.logs[2]))
	var want []batchRange
	for _, b := range c.before {
		if b.base < cut.FirstOffset || b.base >= base2 {
			want = append(want, b)
		}
	}
	if got := c.finish(t); !slices.Equal(got, want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
}

// TestTornMiddleSegmentSharedBackup: with Options.BackupDir the cut bytes go
// there, in the same layout.
func TestTornMiddleSegmentSharedBackup(t *testing.T) {
	c := newCase(t)
	_, pos := tearMiddle(t, c.fsys, c.logs[2])
	opts := testOpts(c.fsys)
	opts.BackupDir = filepath.Join(t.TempDir(), "cut")
	p, _ := c.open(t, opts)
	if p.BackupDir != opts.BackupDir || p.SegmentsRemoved != 0 {
		t.Fatalf("report %+v", *p)
	}
	m := readManifest(t, c.fsys, opts.BackupDir)
	if len(m.Files) != 1 || m.Files[0].Backup != filepath.Join(opts.BackupDir, "t-0", filepath.Base(c.logs[2])+"@"+strconv.FormatInt(pos, 10)) {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := os.Stat(filepath.Join(c.pdir, BackupDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a partition backup was made too: %v", err)
	}
}

// TestBackupFailureCutsNothing: when the backup cannot be written, opening
// fails naming the partition and the way out, and no .log was cut (indexes,
// derived from the logs, may have been reset for their rebuild).
func TestBackupFailureCutsNothing(t *testing.T) {
	c := newCase(t)
	tearMiddle(t, c.fsys, c.logs[1])
	writeFile(t, c.fsys, filepath.Join(c.pdir, BackupDirName), []byte("not a directory"))
	st0 := dirState(t, c.fsys, c.dir)
	delete(st0, filepath.Join(c.dir, CleanShutdownFile))
	_, _, err := OpenDataDir(c.dir, testOpts(c.fsys))
	if !errors.Is(err, ErrPartitionLoad) || !errors.Is(err, segment.ErrSaveCut) || !errors.Is(err, ErrBackup) ||
		!strings.Contains(err.Error(), "nothing was cut") {
		t.Fatalf("err %v", err)
	}
	st1 := dirState(t, c.fsys, c.dir)
	for path, sum := range st0 {
		if strings.HasSuffix(path, segment.IndexSuffix) || strings.HasSuffix(path, segment.TimeIndexSuffix) {
			continue
		}
		if st1[path] != sum {
			t.Fatalf("%s changed though its backup failed", path)
		}
	}
}

// TestUncleanRemovalsBackedUp: above the recovery point after a crash
// Kafka's rule stands (the rest of the log goes), and the removed segments'
// files are in the backup too.
func TestUncleanRemovalsBackedUp(t *testing.T) {
	c := newCase(t)
	crashMarker(t, c.fsys, c.dir)
	if err := c.fsys.Remove(filepath.Join(c.dir, "recovery-point-offset-checkpoint")); err != nil {
		t.Fatal(err)
	}
	tearMiddle(t, c.fsys, c.logs[1])
	p, _ := c.open(t, nil)
	if p.SegmentsRemoved != len(c.logs)-2 {
		t.Fatalf("report %+v", *p)
	}
	m := readManifest(t, c.fsys, p.BackupDir)
	kinds := map[string]int{}
	for _, e := range m.Files {
		kinds[e.Kind]++
		if _, err := c.fsys.Stat(e.Backup); err != nil {
			t.Fatal(err)
		}
	}
	if kinds["tail"] != 1 || kinds["segment"] != len(c.logs)-2 || kinds["index"] < len(c.logs)-2 {
		t.Fatalf("backup kinds %v", kinds)
	}
	// The producer snapshots the log wrote at its rolls past the cut went
	// too: reported, and in the backup.
	snaps := 0
	for _, f := range p.SideFilesTrimmed {
		if strings.Contains(f, segment.SnapshotSuffix+": producer snapshot above the log end") {
			snaps++
		}
	}
	if snaps == 0 || kinds["snapshot"] != snaps {
		t.Fatalf("%d snapshots reported removed (%v), %d in the backup", snaps, p.SideFilesTrimmed, kinds["snapshot"])
	}
}
