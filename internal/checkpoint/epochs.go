package checkpoint

import (
	"strconv"

	"github.com/stratalog/strata/internal/vfs"
)

// EpochEntry is one line of a leader-epoch-checkpoint: the first offset written
// in a leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// ParseEpochs parses a leader-epoch-checkpoint (see the package doc). Entries
// come back in file order.
func ParseEpochs(data []byte) ([]EpochEntry, error) {
	out := []EpochEntry{}
	err := parse(data, EpochsVersion, 2, "epoch startOffset", func(line int, f []string) error {
		e, err := parseInt(line, "epoch", f[0], 32)
		if err != nil {
			return err
		}
		o, err := parseInt(line, "start offset", f[1], 64)
		if err != nil {
			return err
		}
		out = append(out, EpochEntry{int32(e), o})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendEpochs appends entries in checkpoint format to dst, in the order given.
func AppendEpochs(dst []byte, entries []EpochEntry) []byte {
	dst = strconv.AppendInt(dst, EpochsVersion, 10)
	dst = append(dst, '\n')
	dst = strconv.AppendInt(dst, int64(len(entries)), 10)
	dst = append(dst, '\n')
	for _, e := range entries {
		dst = strconv.AppendInt(dst, int64(e.Epoch), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, e.StartOffset, 10)
		dst = append(dst, '\n')
	}
	return dst
}

// FormatEpochs returns entries in checkpoint format.
func FormatEpochs(entries []EpochEntry) []byte {
	return AppendEpochs(make([]byte, 0, 4+len(entries)*24), entries)
}

// ReadEpochs reads a leader-epoch-checkpoint file. A missing file is an error
// matching fs.ErrNotExist.
func ReadEpochs(fsys vfs.FS, path string) ([]EpochEntry, error) {
	return read(fsys, path, ParseEpochs)
}

// WriteEpochs durably replaces a leader-epoch-checkpoint file with entries.
func WriteEpochs(fsys vfs.FS, path string, entries []EpochEntry) error {
	return write(fsys, path, FormatEpochs(entries), nil)
}
