package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// strataEngine is strata's partition log: every record is its own v2 batch
// (built with record.Builder inside the timed append) appended with
// segment.Log.Append; syncs are Log.Flush (fdatasync of the active segment).
// It runs with preallocate=true, Kafka's log.preallocate (segment.Options.
// Preallocate: the segment file is fallocated ahead of the writer, as etcd's
// and raft-wal's are), which also lets appends under 4 KiB (1 KiB while the log
// is being flushed) be copied into a shared mapping of the reserve instead of
// pwritten (segment.Options.MapAppendsBelow; off while fsyncs come every few
// appends); grow is the same
// engine without preallocation, for A/B runs (BenchmarkAppendSync), not in the
// report.
type strataEngine struct{ grow bool }

// strataOptions are the log options of the strata engines.
func strataOptions(grow bool) *segment.Options {
	return &segment.Options{Preallocate: !grow}
}

func (e strataEngine) Name() string {
	if e.grow {
		return "strata-grow"
	}
	return "strata"
}

func (strataEngine) Mapping(p Policy) string {
	switch p {
	case PolicyNone:
		return "`Log.Append` of a 1-record v2 batch, `preallocate=true` (Kafka's `log.preallocate`; appends under 4 KiB are copied into a mapping of the reserve), flush.messages never"
	case PolicyEvery:
		return "`Log.Append` of a 1-record v2 batch, then `Log.Flush` (fdatasync); `preallocate=true` (Kafka's `log.preallocate`)"
	default:
		return "`Log.Append` of 1-record v2 batches, `Log.Flush` (one fdatasync) after every B; `preallocate=true` (Kafka's `log.preallocate`)"
	}
}

func (strataEngine) Unsupported(Policy) string { return "" }

type strataWriter struct {
	l       *segment.Log
	b       *record.Builder
	opts    record.BatchOptions
	p       Policy
	batch   int
	pending int
}

func (e strataEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	l, err := segment.Open(dir, strataOptions(e.grow))
	if err != nil {
		return nil, err
	}
	opts := record.DefaultBatchOptions()
	return &strataWriter{l: l, b: record.NewBuilder(opts), opts: opts, p: p, batch: batch}, nil
}

func (w *strataWriter) Append(rec []byte) error {
	w.b.Reset(w.opts)
	if err := w.b.AddKV(time.Now().UnixMilli(), nil, rec); err != nil {
		return err
	}
	batch, err := w.b.Build()
	if err != nil {
		return err
	}
	if _, err := w.l.Append(batch); err != nil {
		return err
	}
	switch w.p {
	case PolicyEvery:
		return w.l.Flush()
	case PolicyBatch:
		if w.pending++; w.pending == w.batch {
			w.pending = 0
			return w.l.Flush()
		}
	}
	return nil
}

func (w *strataWriter) Close() error {
	var err error
	if w.p != PolicyNone {
		err = w.l.Flush()
	}
	return errors.Join(err, w.l.Close())
}

// ReadAll reopens the log after its clean close (as the broker does when the
// clean-shutdown marker is present) and reads it through Log.Read regions of
// 1 MiB, checking every batch's CRC-32C and decoding every record.
func (strataEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	l, err := segment.Open(dir, &segment.Options{CleanShutdown: true})
	if err != nil {
		return err
	}
	defer l.Close()
	buf := make([]byte, 0, 1<<20)
	var rr record.RecordReader
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			return err
		}
		buf, err = r.ReadInto(buf)
		pos := r.Pos
		r.Release()
		if err != nil {
			return err
		}
		next := off
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true, BasePos: pos})
		for it.Next() {
			b := it.Batch()
			rr.Reset(b, it.Pos())
			for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
				if err := fn(rec.Value); err != nil {
					return err
				}
			}
			if err := rr.Err(); err != nil {
				return err
			}
			next = b.LastOffset() + 1
		}
		// A region ends with a partial batch when the 1 MiB cut it: that is
		// ErrTruncated, read again from the next offset. Anything else is bad.
		if err := it.Err(); err != nil && !errors.Is(err, record.ErrTruncated) {
			return err
		}
		if next == off {
			return fmt.Errorf("strata: read made no progress at offset %d", off)
		}
		off = next
	}
	return nil
}
