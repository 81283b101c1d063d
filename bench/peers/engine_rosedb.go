package main

import (
	"errors"
	"io"

	rwal "github.com/rosedblabs/wal"
)

// roseEngine is github.com/rosedblabs/wal (rosedb's WAL): Write per record
// writes a chunk (CRC-32 IEEE header) with one write(2) and, with Sync: true,
// calls File.Sync (fsync). WriteAll (its batch call) never syncs whatever the
// options say, so the batch policy is Write per record plus WAL.Sync every B.
type roseEngine struct{}

func (roseEngine) Name() string { return "rosedb wal" }

func (roseEngine) Mapping(p Policy) string {
	switch p {
	case PolicyNone:
		return "`Write` per record, `Sync: false`"
	case PolicyEvery:
		return "`Write` per record, `Sync: true` (fsync in every Write)"
	default:
		return "`Write` per record, `Sync: false`, `WAL.Sync` (fsync) after every B"
	}
}

func (roseEngine) Unsupported(Policy) string { return "" }

type roseWriter struct {
	w       *rwal.WAL
	p       Policy
	batch   int
	pending int
}

func roseOptions(dir string, sync bool) rwal.Options {
	o := rwal.DefaultOptions
	o.DirPath = dir
	o.Sync = sync
	return o
}

func (roseEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	w, err := rwal.Open(roseOptions(dir, p == PolicyEvery))
	if err != nil {
		return nil, err
	}
	return &roseWriter{w: w, p: p, batch: batch}, nil
}

func (w *roseWriter) Append(rec []byte) error {
	if _, err := w.w.Write(rec); err != nil {
		return err
	}
	if w.p == PolicyBatch {
		if w.pending++; w.pending == w.batch {
			w.pending = 0
			return w.w.Sync()
		}
	}
	return nil
}

func (w *roseWriter) Close() error {
	var err error
	if w.p != PolicyNone {
		err = w.w.Sync()
	}
	return errors.Join(err, w.w.Close())
}

func (roseEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	w, err := rwal.Open(roseOptions(dir, false))
	if err != nil {
		return err
	}
	r := w.NewReader()
	for {
		b, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			w.Close()
			return err
		}
		if err := fn(b); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
