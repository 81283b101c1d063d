package recovery

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/segment"
)

func txnEntry(producer, first, last int64) []byte {
	e := make([]byte, TxnEntrySize)
	binary.BigEndian.PutUint64(e[2:], uint64(producer))
	binary.BigEndian.PutUint64(e[10:], uint64(first))
	binary.BigEndian.PutUint64(e[18:], uint64(last))
	binary.BigEndian.PutUint64(e[26:], uint64(first))
	return e
}

// After a cut, what describes offsets past the new log end goes: producer
// snapshots named above it, aborted transactions ending at or past it, leader
// epochs starting at or past it.
func TestSideFilesTrimmedAtCut(t *testing.T) {
	c := newCase(t)
	crashMarker(t, c.fsys, c.dir)
	last := c.logs[len(c.logs)-1]
	lastBase, _, _ := segment.ParseFileName(filepath.Base(last))
	// The process wrote 20 more offsets' worth of side files, but their batches
	// never reached the disk whole. The snapshots are good ones (of no
	// producers): a damaged one is removed whatever its offset.
	appendFile(t, c.fsys, last, make([]byte, 64))
	end := c.end
	for _, off := range []int64{lastBase, end, end + 7} {
		writeFile(t, c.fsys, segment.FilePath(c.pdir, off, segment.SnapshotSuffix), producer.EncodeSnapshot(nil))
	}
	keep := append(txnEntry(1, lastBase, end-2), txnEntry(2, lastBase+1, end-1)...)
	txn := segment.FilePath(c.pdir, lastBase, segment.TxnIndexSuffix)
	writeFile(t, c.fsys, txn, slices.Concat(keep, txnEntry(3, end-1, end), txnEntry(4, end+1, end+5)))
	epochs := []checkpoint.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: end - 2}, {Epoch: 2, StartOffset: end}, {Epoch: 3, StartOffset: end + 10}}
	ep := filepath.Join(c.pdir, checkpoint.LeaderEpochFile)
	if err := checkpoint.WriteEpochs(c.fsys, ep, epochs); err != nil {
		t.Fatal(err)
	}
	p, _ := c.open(t, nil)
	if p.LogEndOffset != end || len(p.Truncations) != 1 || len(p.SideFilesTrimmed) != 3 {
		t.Fatalf("report %+v", *p)
	}
	for _, off := range []int64{lastBase, end} {
		if _, err := os.Stat(segment.FilePath(c.pdir, off, segment.SnapshotSuffix)); err != nil {
			t.Fatalf("snapshot %d removed: %v", off, err)
		}
	}
	if _, err := os.Stat(segment.FilePath(c.pdir, end+7, segment.SnapshotSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshot above the log end kept: %v", err)
	}
	if got := readFile(t, c.fsys, txn); !slices.Equal(got, keep) {
		t.Fatalf("txnindex has %d bytes, want the %d of the first two entries", len(got), len(keep))
	}
	got, err := checkpoint.ReadEpochs(c.fsys, ep)
	if err != nil || !slices.Equal(got, epochs[:2]) {
		t.Fatalf("epochs %v, %v; want %v", got, err, epochs[:2])
	}
	c.finish(t)
}
