package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// loopEngine is not a peer but the fsync columns' machine limit, run
// interleaved with the engines so that it meets the same moments of the
// disk's drift: one write(2) of the bare S-byte record per append and an
// fdatasync after every append or every B, into a file whose first reserve
// bytes were written with zeros and synced at Create (untimed). The appends
// therefore overwrite blocks that are allocated and written: each fdatasync
// writes the data and nothing else the file system could avoid (no block
// allocation, no size change, no unwritten-extent conversion; only the inode's
// mtime when the clock ticked). No framing, checksum or index. It is the bound
// for an engine that makes one write call per record; engines that take B
// records in one call (etcd's Save, raft-wal's StoreLogs, strata's B-record
// batches) can pass it. It has no table row: its median is the limit row of
// the two fsync columns.
type loopEngine struct{ reserve int64 }

const loopName = "write(2) + fdatasync loop"

func (loopEngine) Name() string { return loopName }

func (loopEngine) Mapping(p Policy) string {
	switch p {
	case PolicyEvery:
		return "`write(2)` of the record, then `fdatasync`"
	case PolicyBatch:
		return "`write(2)` of the record, `fdatasync` after every B"
	}
	return ""
}

func (loopEngine) Unsupported(Policy) string { return "the limit of the fsync columns only" }

type loopWriter struct {
	f       *os.File
	dir     string
	batch   int
	pending int
	size    int
	count   int
}

func (e loopEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	if p == PolicyNone {
		return nil, errors.New("write(2) loop: fsync policies only")
	}
	if p == PolicyEvery {
		batch = 1
	}
	f, err := os.Create(filepath.Join(dir, "records"))
	if err != nil {
		return nil, err
	}
	if err := writeZeros(f, e.reserve); err != nil {
		f.Close()
		return nil, fmt.Errorf("write(2) loop: zero the reserve: %w", err)
	}
	return &loopWriter{f: f, dir: dir, batch: batch}, nil
}

// writeZeros writes n zero bytes at the start of f, fdatasyncs them and
// rewinds.
func writeZeros(f *os.File, n int64) error {
	zero := make([]byte, 1<<20)
	for off := int64(0); off < n; off += int64(len(zero)) {
		if _, err := f.WriteAt(zero[:min(int64(len(zero)), n-off)], off); err != nil {
			return err
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

func (w *loopWriter) Append(rec []byte) error {
	if _, err := w.f.Write(rec); err != nil {
		return err
	}
	w.size = len(rec)
	w.count++
	if w.pending++; w.pending == w.batch {
		w.pending = 0
		return unix.Fdatasync(int(w.f.Fd()))
	}
	return nil
}

// Close syncs the tail of a batch and notes the record size and count beside
// the file, which keeps no framing of its own and may be longer than its
// records (the zeroed reserve).
func (w *loopWriter) Close() error {
	var err error
	if w.pending > 0 {
		err = unix.Fdatasync(int(w.f.Fd()))
	}
	err = errors.Join(err, w.f.Close())
	return errors.Join(err, os.WriteFile(filepath.Join(w.dir, "size"), []byte(fmt.Sprintf("%d %d", w.size, w.count)), 0o644))
}

func (loopEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	b, err := os.ReadFile(filepath.Join(dir, "size"))
	if err != nil {
		return err
	}
	var size, count int
	if _, err := fmt.Sscanf(string(b), "%d %d", &size, &count); err != nil || size < 0 || count < 0 {
		return fmt.Errorf("write(2) loop: bad size file %q", b)
	}
	f, err := os.Open(filepath.Join(dir, "records"))
	if err != nil {
		return err
	}
	defer f.Close()
	rec := make([]byte, size)
	for i := 0; i < count; i++ {
		if _, err := io.ReadFull(f, rec); err != nil {
			return fmt.Errorf("write(2) loop: record %d: %w", i, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}
