package recovery

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/producer"
)

// TxnEntrySize is the size of one aborted-transaction entry in a .txnindex:
// int16 version | int64 producerId | int64 firstOffset | int64 lastOffset |
// int64 lastStableOffset.
const TxnEntrySize = producer.TxnEntrySize

// trimSideFiles makes the leader-epoch-checkpoint agree with a log that
// ends at end (exclusive), as Kafka's loader does after recovery: leader
// epochs starting at or past end are dropped. The files of the producer
// state (snapshots named above end, aborted transactions past it in the
// .txnindex files) are segment.Open's: it needs them to agree with the log
// to load the state, so it trims them itself and reports each in
// LoadReport.SideFilesTrimmed (saving a removed snapshot through SaveCut
// first). With write false nothing changes; the result lists what would.
// Each item names the file and what was dropped.
func trimSideFiles(fsys vfs.FS, dir string, end int64, write bool) ([]string, error) {
	var out []string
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
