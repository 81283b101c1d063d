package main

import (
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
)

// raftWALEngine is github.com/hashicorp/raft-wal: every StoreLogs call ends
// with a commit frame and File.Sync (fsync); there is no switch to skip it, so
// the "none" policy is n/a. Reads (GetLog) read the frame with ReadAt; the
// CRC covers each commit and is checked only when the tail is recovered.
type raftWALEngine struct{}

func (raftWALEngine) Name() string { return "hashicorp/raft-wal" }

func (raftWALEngine) Mapping(p Policy) string {
	switch p {
	case PolicyEvery:
		return "`StoreLog` per record (fsync in every call)"
	case PolicyBatch:
		return "`StoreLogs` of B records (one fsync per call)"
	}
	return ""
}

func (raftWALEngine) Unsupported(p Policy) string {
	if p == PolicyNone {
		return "always fsyncs every StoreLogs call"
	}
	return ""
}

type raftWALWriter struct {
	w     *raftwal.WAL
	next  uint64
	p     Policy
	batch int
	logs  []*raft.Log
}

func openRaftWAL(dir string) (*raftwal.WAL, error) {
	return raftwal.Open(dir, raftwal.WithLogger(hclog.NewNullLogger()))
}

func (raftWALEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	if p == PolicyNone {
		return nil, errors.New("raft-wal: no unsynced append")
	}
	w, err := openRaftWAL(dir)
	if err != nil {
		return nil, err
	}
	return &raftWALWriter{w: w, next: 1, p: p, batch: batch}, nil
}

func (w *raftWALWriter) Append(rec []byte) error {
	l := &raft.Log{Index: w.next, Term: 1, Type: raft.LogCommand, Data: rec}
	w.next++
	if w.p == PolicyEvery {
		return w.w.StoreLog(l)
	}
	w.logs = append(w.logs, l)
	if len(w.logs) < w.batch {
		return nil
	}
	err := w.w.StoreLogs(w.logs)
	w.logs = w.logs[:0]
	return err
}

func (w *raftWALWriter) Close() error {
	var err error
	if len(w.logs) > 0 {
		err = w.w.StoreLogs(w.logs)
	}
	return errors.Join(err, w.w.Close())
}

func (raftWALEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	w, err := openRaftWAL(dir)
	if err != nil {
		return err
	}
	first, err := w.FirstIndex()
	if err != nil {
		w.Close()
		return err
	}
	last, err := w.LastIndex()
	if err != nil {
		w.Close()
		return err
	}
	var l raft.Log
	for i := first; i <= last && first > 0; i++ {
		if err := w.GetLog(i, &l); err != nil {
			w.Close()
			return err
		}
		if err := fn(l.Data); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
