package recovery

import (
	"fmt"
	"log/slog"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// DefaultRecoveryThreads is num.recovery.threads.per.data.dir's default (Kafka 4.0).
const DefaultRecoveryThreads = 2

// Options configure OpenDataDir and Inspect. The zero value is usable.
type Options struct {
	// FS is the filesystem (default vfs.OS).
	FS vfs.FS
	// RecoveryThreads is num.recovery.threads.per.data.dir: partitions loaded in
	// parallel (default 2).
	RecoveryThreads int
	// OptionsFor returns the segment options template of a topic (its configs);
	// FS, RecoveryPoint, LogStartOffset and CleanShutdown are set by recovery.
	// Nil or a nil result means defaults.
	OptionsFor func(topic string) *segment.Options
	// Lock locks the data directory and returns the unlock function. Default:
	// vfs.LockDir on the OS filesystem, no lock on any other filesystem.
	Lock func(dir string) (unlock func() error, err error)
	// BrokerEpoch goes into the clean-shutdown marker (KIP-966); -1 writes an
	// empty marker as Kafka before 3.7 did. Only the marker's presence matters.
	BrokerEpoch int64
	// OnOffline, if set, is called once when the data directory goes offline
	// (see DataDir.Health): by the goroutine whose I/O error failed it,
	// possibly holding a log's locks, so it must only record or signal.
	OnOffline func(dir string, err error)
	// BackupDir is where OpenDataDir saves every byte loading cuts, before
	// cutting it, in the layout of Backup. Default "": each partition's own
	// recovery-backup/<UTC time of the start> directory (BackupDirName),
	// created on the first cut.
	BackupDir string
	// NoBackup cuts without saving anything (strata recover, which saves
	// what it plans to cut itself when asked to).
	NoBackup bool
	// Logger receives what recovery does (default slog.Default()).
	Logger *slog.Logger
}

// EnsureDefaults returns a copy of o (nil allowed) with defaults filled.
func (o *Options) EnsureDefaults() *Options {
	var n Options
	if o != nil {
		n = *o
	}
	if n.FS == nil {
		n.FS = vfs.OS
	}
	if n.RecoveryThreads == 0 {
		n.RecoveryThreads = DefaultRecoveryThreads
	}
	if n.Lock == nil && n.FS == vfs.OS {
		n.Lock = vfs.LockDir
	}
	if n.Logger == nil {
		n.Logger = slog.Default()
	}
	return &n
}

// Validate reports the first invalid setting.
func (o *Options) Validate() error {
	if o.RecoveryThreads < 1 {
		return fmt.Errorf("%w: num.recovery.threads.per.data.dir %d must be positive", ErrInvalidOptions, o.RecoveryThreads)
	}
	return nil
}

// segmentOptions builds the options one partition is opened with (the
// DataDir sets Health).
func (o *Options) segmentOptions(topic string) segment.Options {
	var so segment.Options
	if o.OptionsFor != nil {
		if t := o.OptionsFor(topic); t != nil {
			so = *t
		}
	}
	so.FS = o.FS
	if so.Logger == nil {
		so.Logger = o.Logger
	}
	return so
}
