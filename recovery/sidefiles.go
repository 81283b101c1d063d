package recovery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// TxnEntrySize is the size of one aborted-transaction entry in a .txnindex:
// int16 version | int64 producerId | int64 firstOffset | int64 lastOffset |
// int64 lastStableOffset.
const TxnEntrySize = 34

// trimSideFiles makes the files that describe offsets agree with a log that ends
// at end (exclusive), as Kafka's loader does after recovery: producer snapshots
// named above end are removed, aborted transactions whose lastOffset is at or
// past end are dropped from every .txnindex (Kafka's TransactionIndex.truncateTo),
// and leader epochs starting at or past end are dropped from the
// leader-epoch-checkpoint. With write false nothing changes; the result lists
// what would. Each item names the file and what was dropped.
func trimSideFiles(fsys vfs.FS, dir string, end int64, write bool) ([]string, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("recovery: list %s: %w", dir, err)
	}
	var out []string
	removed := false
	for _, n := range names {
		base, suf, ok := segment.ParseFileName(n)
		if !ok {
			continue
		}
		path := filepath.Join(dir, n)
		switch suf {
		case segment.SnapshotSuffix:
			if base <= end {
				continue
			}
			if write {
				if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return out, fmt.Errorf("recovery: remove %s: %w", path, err)
				}
				removed = true
			}
			out = append(out, fmt.Sprintf("%s: producer snapshot above the log end %d removed", n, end))
		case segment.TxnIndexSuffix:
			data, err := readAll(fsys, path)
			if err != nil {
				return out, err
			}
			keep := make([]byte, 0, len(data))
			dropped := 0
			for p := 0; p+TxnEntrySize <= len(data); p += TxnEntrySize {
				e := data[p : p+TxnEntrySize]
				if int64(binary.BigEndian.Uint64(e[18:])) >= end {
					dropped++
					continue
				}
				keep = append(keep, e...)
			}
			partial := len(data) % TxnEntrySize
			if dropped == 0 && partial == 0 {
				continue
			}
			if write {
				if err := fsutil.WriteFileAtomic(fsys, path, keep); err != nil {
					return out, fmt.Errorf("recovery: rewrite %s: %w", path, err)
				}
			}
			out = append(out, fmt.Sprintf("%s: %d aborted transactions ending at or past %d dropped, %d partial bytes dropped", n, dropped, end, partial))
		}
	}
	epath := filepath.Join(dir, checkpoint.LeaderEpochFile)
	epochs, err := checkpoint.ReadEpochs(fsys, epath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		// Kafka would fail the partition; the broker rebuilds the cache from the
		// batches, so keep the log and say so.
		out = append(out, fmt.Sprintf("%s: unreadable, left as is: %v", checkpoint.LeaderEpochFile, err))
	default:
		keep := make([]checkpoint.EpochEntry, 0, len(epochs))
		for _, e := range epochs {
			if e.StartOffset < end {
				keep = append(keep, e)
			}
		}
		if len(keep) < len(epochs) {
			if write {
				if err := checkpoint.WriteEpochs(fsys, epath, keep); err != nil {
					return out, fmt.Errorf("recovery: rewrite %s: %w", epath, err)
				}
			}
			out = append(out, fmt.Sprintf("%s: %d epochs starting at or past %d dropped", checkpoint.LeaderEpochFile, len(epochs)-len(keep), end))
		}
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return out, fmt.Errorf("recovery: sync dir %s: %w", dir, err)
		}
	}
	return out, nil
}

func readAll(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recovery: open %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("recovery: read %s: %w", path, err)
	}
	return data, nil
}
