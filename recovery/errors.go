package recovery

import "errors"

var (
	// ErrLocked: another process (or another DataDir in this one) has the data
	// directory open. It wraps vfs.ErrLocked and names the directory.
	ErrLocked = errors.New("recovery: data directory in use")
	// ErrClosed: the DataDir was already closed.
	ErrClosed = errors.New("recovery: data directory closed")
	// ErrPartitionLoad: a partition could not be loaded (I/O failure, not
	// corruption: corruption is cut off). The error names the partition.
	ErrPartitionLoad = errors.New("recovery: partition failed to load")
	// ErrNotDataDir: the path is not a directory.
	ErrNotDataDir = errors.New("recovery: not a data directory")
	// ErrBackup: the bytes recovery was about to cut could not be saved (so
	// nothing was cut), or a backup does not match what was cut.
	ErrBackup = errors.New("recovery: backup of the bytes to cut failed")
	// ErrInvalidOptions: an option is out of range.
	ErrInvalidOptions = errors.New("recovery: invalid options")
)
