package main

import (
	"errors"
	"time"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// strataBatchEngine is strata's log used as etcd's Save and raft-wal's
// StoreLogs are used under the batch policy: the B records of a group go in
// one call, here one B-record v2 batch (built inside the timed append) and one
// Log.Append, then Log.Flush. It runs only the batch policy; the peers that
// take a group in one call are compared with it there.
type strataBatchEngine struct{}

func (strataBatchEngine) Name() string { return "strata (B-record batches)" }

func (strataBatchEngine) Mapping(p Policy) string {
	if p == PolicyBatch {
		return "B records in one v2 batch, one `Log.Append`, then `Log.Flush` (one fdatasync); `preallocate=true`"
	}
	return ""
}

func (strataBatchEngine) Unsupported(p Policy) string {
	return "a row for the batch policy only; see strata above"
}

type strataBatchWriter struct {
	l     *segment.Log
	b     *record.Builder
	opts  record.BatchOptions
	batch int
}

func (strataBatchEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	if p != PolicyBatch {
		return nil, errors.New("strata (B-record batches): batch policy only")
	}
	l, err := segment.Open(dir, strataOptions(false))
	if err != nil {
		return nil, err
	}
	opts := record.DefaultBatchOptions()
	return &strataBatchWriter{l: l, b: record.NewBuilder(opts), opts: opts, batch: batch}, nil
}

func (w *strataBatchWriter) Append(rec []byte) error {
	if err := w.b.AddKV(time.Now().UnixMilli(), nil, rec); err != nil {
		return err
	}
	if w.b.Len() < w.batch {
		return nil
	}
	return w.flush()
}

func (w *strataBatchWriter) flush() error {
	batch, err := w.b.Build()
	if err != nil {
		return err
	}
	_, err = w.l.Append(batch)
	w.b.Reset(w.opts) // after the append: the batch aliases the builder
	if err != nil {
		return err
	}
	return w.l.Flush()
}

func (w *strataBatchWriter) Close() error {
	var err error
	if w.b.Len() > 0 {
		err = w.flush()
	}
	return errors.Join(err, w.l.Close())
}

func (strataBatchEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	return strataEngine{}.ReadAll(dir, fn)
}

// groupsBatch marks the peers whose batch policy hands the whole group of B
// records to one call (etcd's Save, raft-wal's StoreLogs): they are compared
// with strata (B-record batches) in that column, the others with strata.
type groupsBatch interface{ GroupsBatch() bool }

func (etcdEngine) GroupsBatch() bool    { return true }
func (raftWALEngine) GroupsBatch() bool { return true }

const strataName, strataBatchName = "strata", "strata (B-record batches)"

// reference names the strata row engine e is compared with under policy p.
func reference(e string, p Policy) string {
	if p != PolicyBatch {
		return strataName
	}
	for _, x := range engines() {
		if g, ok := x.(groupsBatch); ok && x.Name() == e && g.GroupsBatch() {
			return strataBatchName
		}
	}
	return strataName
}
