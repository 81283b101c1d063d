package index

import (
	"errors"
	"os"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestAppendMappedFault: an entry whose page of the mapping the kernel
// cannot back is an error of that Append (ErrMappedWrite), not a crash of
// the process. Appends write into the sparse preallocated file through a
// shared mapping; on a full disk (tmpfs, ext4) the first write to a hole
// page gets SIGBUS, which killed the broker (the segment package's
// TestAppendDiskFull shows it on a real full tmpfs). Here the file is cut
// behind the index's back, which faults the same way and needs no root.
func TestAppendMappedFault(t *testing.T) {
	page := int64(os.Getpagesize())
	dir := t.TempDir()
	oi, err := OpenOffsetIndex(vfs.OS, join(dir, "0.index"), 0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer oi.Close()
	ti, err := OpenTimeIndex(vfs.OS, join(dir, "0.timeindex"), 0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ti.Close()
	// Fill the first page of each file, then cut the files there: the
	// entries stay readable, the next slot lies past the end.
	nOff := page / OffsetEntrySize
	for i := int64(1); i <= nOff; i++ {
		if err := oi.Append(i, int32(100*i)); err != nil {
			t.Fatal(err)
		}
	}
	nTime := page / TimeEntrySize
	for i := int64(1); i <= nTime; i++ {
		if err := ti.Append(1000*i, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"0.index", "0.timeindex"} {
		if err := os.Truncate(join(dir, p), page); err != nil {
			t.Fatal(err)
		}
	}
	if err := oi.Append(nOff+1, int32(100*(nOff+1))); !errors.Is(err, ErrMappedWrite) {
		t.Fatalf("offset index append past the cut: %v, want ErrMappedWrite", err)
	}
	if n := oi.Entries(); int64(n) != nOff {
		t.Fatalf("offset index holds %d entries after the failed append, want %d", n, nOff)
	}
	if err := ti.Append(1000*(nTime+2), nTime+2); !errors.Is(err, ErrMappedWrite) {
		t.Fatalf("time index append past the cut: %v, want ErrMappedWrite", err)
	}
	if n := ti.Entries(); int64(n) != nTime {
		t.Fatalf("time index holds %d entries after the failed append, want %d", n, nTime)
	}
}
