package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Errors of the admin operations on the topic store.
var (
	errUnknownTopic    = errors.New("server: unknown topic")
	errPartitionCount  = errors.New("server: invalid partition count")
	errDeletionPending = errors.New("server: topic deletion failed")
)

// deleteSuffix ends a partition directory awaiting removal (Kafka's
// <topic>-<partition>.<uuid>-delete).
const deleteSuffix = "-delete"

// delete removes topic name: it is dropped from the topic table (durably,
// first, so the deletion survives a crash), its logs are closed, and each
// partition directory is renamed <topic>-<p>.<32 hex>-delete and removed in
// the background after file.delete.delay.ms.
func (ts *topicStore) delete(name string) (*topic, error) {
	ts.cancelMovesOf(name) // before ts.mu: a swap in progress reads the topic
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, ErrClosed
	}
	t := ts.topics[name]
	if t == nil {
		return nil, errUnknownTopic
	}
	if err := ts.persistWith(map[string]int32{name: 0}, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", errDeletionPending, err)
	}
	delete(ts.topics, name)
	var errs []error
	for _, p := range t.parts {
		ts.dropLog(p)
		if err := ts.retireDir(p.logDir()); err != nil {
			errs = append(errs, err)
		}
	}
	// As Kafka's asyncDelete: rewrite the checkpoints now, so that after a
	// crash a topic re-created under the same name does not inherit the
	// deleted partitions' log start offsets.
	ts.writeCheckpoints()
	ts.log.Info("topic deleted", "topic", name, "partitions", len(t.parts), "topic_id", uuidString(t.id))
	return t, errors.Join(errs...)
}

// retireDir renames a partition directory for deletion and schedules its
// removal.
func (ts *topicStore) retireDir(dir string) error {
	dst := dir + "." + randomHex() + deleteSuffix
	if err := ts.fs.Rename(dir, dst); err != nil {
		ts.log.Error("renaming a deleted partition directory", "dir", dir, "error", err)
		return err
	}
	if err := ts.fs.SyncDir(filepath.Dir(dir)); err != nil {
		ts.log.Warn("fsync after renaming a deleted partition directory", "dir", filepath.Dir(dir), "error", err)
	}
	ts.scheduleRemoval(dst)
	return nil
}

// scheduleRemoval removes a -delete directory after file.delete.delay.ms.
func (ts *topicStore) scheduleRemoval(dir string) {
	time.AfterFunc(time.Duration(ts.cfg.FileDeleteDelayMs)*time.Millisecond, func() {
		if err := ts.fs.RemoveAll(dir); err != nil {
			ts.log.Error("removing a deleted partition directory", "dir", dir, "error", err)
			return
		}
		ts.log.Info("deleted partition directory removed", "dir", dir)
	})
}

// finishDeletions runs at start: directories already renamed for deletion
// are scheduled for removal. Logs recovery loaded for topics the topic table
// does not hold (a crash between the table update of a deletion and the
// renames) are closed and renamed <topic>-<p>.<32 hex>-stray, as Kafka does
// with stray logs: not served, not removed. Without a topic table (a data
// directory strata did not create) nothing is renamed.
func (ts *topicStore) finishDeletions(haveTable bool) {
	for _, dd := range ts.dataDirs {
		for tp, l := range dd.Logs() {
			if t := ts.topics[tp.Topic]; !haveTable || (t != nil && int(tp.Partition) < len(t.parts)) {
				continue
			}
			dd.RemoveLog(tp)
			_ = l.Close()
			dst := l.Dir() + "." + randomHex() + strySuffix
			if err := ts.fs.Rename(l.Dir(), dst); err != nil {
				ts.log.Error("renaming a stray partition directory", "dir", l.Dir(), "error", err)
				continue
			}
			_ = ts.fs.SyncDir(dd.Dir())
			ts.log.Warn("partition not in the topic table: renamed stray", "topic", tp.Topic, "partition", tp.Partition, "dir", dst)
		}
		for _, name := range subdirs(ts.fs, dd.Dir()) {
			if strings.HasSuffix(name, deleteSuffix) {
				ts.scheduleRemoval(filepath.Join(dd.Dir(), name))
			}
		}
	}
}

const strySuffix = "-stray"

func randomHex() string {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(u[:])
}

// addPartitions grows topic name to n partitions (Kafka never shrinks).
func (ts *topicStore) addPartitions(name string, n int32, validateOnly bool) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return ErrClosed
	}
	t := ts.topics[name]
	if t == nil {
		return errUnknownTopic
	}
	if cur := int32(len(t.parts)); n <= cur {
		return fmt.Errorf("%w: topic currently has %d partitions, which is higher than or equal to the requested %d", errPartitionCount, cur, n)
	}
	if validateOnly {
		return nil
	}
	if err := ts.persistWith(map[string]int32{name: n}, nil); err != nil {
		return err
	}
	old := len(t.parts)
	if err := ts.openPartitions(t, n); err != nil {
		_ = ts.persist() // back to the partitions actually open
		return err
	}
	ts.log.Info("partitions added", "topic", name, "from", old, "to", n)
	return nil
}

// topicByID returns the topic with id, or nil.
func (ts *topicStore) topicByID(id [16]byte) *topic {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	for _, t := range ts.topics {
		if t.id == id {
			return t
		}
	}
	return nil
}
