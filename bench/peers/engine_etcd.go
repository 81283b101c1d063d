package main

import (
	"errors"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// etcdEngine is etcd's raft WAL (go.etcd.io/etcd/server/v3/storage/wal). Save
// encodes each entry (protobuf, CRC-32C chained over the file) and, because
// raft.MustSync is true whenever entries are given, flushes and fdatasyncs
// before returning, unless SetUnsafeNoFsync was called (then it only writes).
// There is no call that appends without syncing in safe mode, so the batch
// policy hands Save B entries at once: one write, one fdatasync per B.
type etcdEngine struct{}

func (etcdEngine) Name() string { return "etcd wal" }

func (etcdEngine) Mapping(p Policy) string {
	switch p {
	case PolicyNone:
		return "`Save` of 1 entry after `SetUnsafeNoFsync` (write, no fdatasync)"
	case PolicyEvery:
		return "`Save` of 1 entry (MustSync: flush + fdatasync)"
	default:
		return "`Save` of B entries (one write + one fdatasync per B; entries encoded one by one inside)"
	}
}

func (etcdEngine) Unsupported(Policy) string { return "" }

// etcd's Create replaces its directory by renaming a temporary one onto it,
// so the log lives in a subdirectory of the benchmark's.
func etcdDir(dir string) string { return filepath.Join(dir, "wal") }

type etcdWriter struct {
	w     *wal.WAL
	next  uint64
	p     Policy
	batch int
	ents  []*raftpb.Entry
	empty *raftpb.HardState
}

func (etcdEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	w, err := wal.Create(zap.NewNop(), etcdDir(dir), []byte("strata-bench"))
	if err != nil {
		return nil, err
	}
	if p == PolicyNone {
		w.SetUnsafeNoFsync()
	}
	return &etcdWriter{w: w, next: 1, p: p, batch: batch, empty: &raftpb.HardState{}}, nil
}

func (w *etcdWriter) Append(rec []byte) error {
	e := &raftpb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(w.next), Type: raftpb.EntryType_EntryNormal.Enum(), Data: rec}
	w.next++
	if w.p != PolicyBatch {
		return w.w.Save(w.empty, []*raftpb.Entry{e})
	}
	w.ents = append(w.ents, e)
	if len(w.ents) < w.batch {
		return nil
	}
	err := w.w.Save(w.empty, w.ents)
	w.ents = w.ents[:0]
	return err
}

func (w *etcdWriter) Close() error {
	var err error
	if len(w.ents) > 0 {
		err = w.w.Save(w.empty, w.ents)
	}
	return errors.Join(err, w.w.Close())
}

// ReadAll opens the WAL read-only and decodes every record (CRC checked).
func (etcdEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	w, err := wal.OpenForRead(zap.NewNop(), etcdDir(dir), &walpb.Snapshot{})
	if err != nil {
		return err
	}
	_, _, ents, err := w.ReadAll()
	if err != nil {
		w.Close()
		return err
	}
	for _, e := range ents {
		if err := fn(e.Data); err != nil {
			w.Close()
			return err
		}
	}
	return closeReadWAL(w)
}

// closeReadWAL closes a WAL opened with OpenForRead: it has no directory file
// open, so Close ends by closing a nil *os.File, os.ErrInvalid, after it has
// released everything else.
func closeReadWAL(w *wal.WAL) error {
	if err := w.Close(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
