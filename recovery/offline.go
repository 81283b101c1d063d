package recovery

import (
	"fmt"

	"github.com/stratalog/strata/segment"
)

// Offline data directories (Kafka's LogDirFailureChannel, KIP-112). Every log
// of a DataDir shares one segment.Health: the first I/O error a log cannot
// undo (see the segment package doc), or a failed checkpoint write, takes the
// whole directory offline. From then on its logs refuse appends, flushes and
// reads (segment.ErrOffline), no checkpoint is written from their state, and
// Close writes no clean-shutdown marker, so the next start recovers the
// directory from its last checkpoint and cuts what the failure left. The
// failure is logged once, with its cause, and reported to Options.OnOffline,
// from where a broker marks the directory's partitions offline
// (KAFKA_STORAGE_ERROR) and, later, tells the controller.

// Health is the failure state shared by the directory's logs.
func (d *DataDir) Health() *segment.Health { return d.health }

// Err is nil while the directory is online, else the error (wrapping
// segment.ErrOffline and the first cause) that took it offline.
func (d *DataDir) Err() error { return d.health.Err() }

// Offline reports whether the directory has failed.
func (d *DataDir) Offline() bool { return d.health.Err() != nil }

// newHealth returns the Health of data directory dir, which logs the
// failure once and reports it to o.OnOffline.
func newHealth(dir string, o *Options) *segment.Health {
	return segment.NewHealth(func(err error) {
		o.Logger.Error("log dir offline after an I/O error: its partitions are offline, no checkpoint or clean-shutdown marker will be written for it",
			"dir", dir, "err", err)
		if o.OnOffline != nil {
			o.OnOffline(dir, err)
		}
	})
}

// failCheckpoint takes the directory offline after a failed checkpoint write
// (Kafka does the same: the file's state on disk is unknown).
func (d *DataDir) failCheckpoint(err error) error {
	return d.health.Fail(fmt.Errorf("recovery: checkpoint of %s: %w", d.dir, err))
}
