package main

import (
	"errors"

	twal "github.com/tidwall/wal"
)

// tidwallEngine is github.com/tidwall/wal: Write(index, data) per record.
// With NoSync false every Write (and WriteBatch) ends with File.Sync (fsync);
// with NoSync true nothing is synced until Log.Sync, a segment cycle or Close.
// It keeps no checksum: reads check only the length framing.
type tidwallEngine struct{}

func (tidwallEngine) Name() string { return "tidwall/wal" }

func (tidwallEngine) Mapping(p Policy) string {
	switch p {
	case PolicyNone:
		return "`Write` per record with `NoSync: true`"
	case PolicyEvery:
		return "`Write` per record with `NoSync: false` (fsync in every Write)"
	default:
		return "`Write` per record with `NoSync: true`, `Log.Sync` (fsync) after every B"
	}
}

func (tidwallEngine) Unsupported(Policy) string { return "" }

type tidwallWriter struct {
	l       *twal.Log
	next    uint64
	p       Policy
	batch   int
	pending int
}

func (tidwallEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	o := *twal.DefaultOptions
	o.NoSync = p != PolicyEvery
	l, err := twal.Open(dir, &o)
	if err != nil {
		return nil, err
	}
	return &tidwallWriter{l: l, next: 1, p: p, batch: batch}, nil
}

func (w *tidwallWriter) Append(rec []byte) error {
	if err := w.l.Write(w.next, rec); err != nil {
		return err
	}
	w.next++
	if w.p == PolicyBatch {
		if w.pending++; w.pending == w.batch {
			w.pending = 0
			return w.l.Sync()
		}
	}
	return nil
}

func (w *tidwallWriter) Close() error { return w.l.Close() } // Close fsyncs

func (tidwallEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	o := *twal.DefaultOptions
	o.NoCopy = true
	l, err := twal.Open(dir, &o)
	if err != nil {
		return err
	}
	first, err := l.FirstIndex()
	if err != nil {
		l.Close()
		return err
	}
	last, err := l.LastIndex()
	if err != nil {
		l.Close()
		return err
	}
	for i := first; i <= last && first > 0; i++ {
		b, err := l.Read(i)
		if err != nil {
			l.Close()
			return err
		}
		if err := fn(b); err != nil {
			l.Close()
			return err
		}
	}
	return errors.Join(l.Close())
}
