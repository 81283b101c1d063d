package main

import (
	"context"
	"time"

	"github.com/liftbridge-io/liftbridge/server/commitlog"
)

// liftbridgeEngine is Liftbridge's commit log (server/commitlog): Kafka-like
// segments with a memory-mapped offset index. Append writes the message set
// with one write(2) to the segment file; the log file is never fsynced by the
// commit log (only the index mmap is msync'ed on close, and Liftbridge relies
// on replication for durability), so only the "none" policy can run. Reads
// (Reader.ReadMessage) check each message's CRC-32C.
type liftbridgeEngine struct{}

func (liftbridgeEngine) Name() string { return "liftbridge commitlog" }

func (liftbridgeEngine) Mapping(p Policy) string {
	if p == PolicyNone {
		return "`Append` of one `*Message` per call"
	}
	return ""
}

func (liftbridgeEngine) Unsupported(p Policy) string {
	if p != PolicyNone {
		return "never fsyncs its log file"
	}
	return ""
}

type liftbridgeWriter struct {
	l   commitlog.CommitLog
	msg []*commitlog.Message
}

func openLiftbridge(dir string) (commitlog.CommitLog, error) {
	return commitlog.New(commitlog.Options{Name: "bench", Path: dir})
}

func (liftbridgeEngine) Create(dir string, p Policy, batch int) (Writer, error) {
	l, err := openLiftbridge(dir)
	if err != nil {
		return nil, err
	}
	return &liftbridgeWriter{l: l, msg: make([]*commitlog.Message, 1)}, nil
}

func (w *liftbridgeWriter) Append(rec []byte) error {
	w.msg[0] = &commitlog.Message{Value: rec, Timestamp: time.Now().UnixNano()}
	_, err := w.l.Append(w.msg)
	return err
}

func (w *liftbridgeWriter) Close() error { return w.l.Close() }

func (liftbridgeEngine) ReadAll(dir string, fn func(rec []byte) error) error {
	l, err := openLiftbridge(dir)
	if err != nil {
		return err
	}
	defer l.Close()
	first, newest := l.OldestOffset(), l.NewestOffset()
	if newest < 0 {
		return nil
	}
	r, err := l.NewReader(first, true)
	if err != nil {
		return err
	}
	hdr := make([]byte, 28)
	ctx := context.Background()
	for off := first; off <= newest; off++ {
		m, _, _, _, err := r.ReadMessage(ctx, hdr)
		if err != nil {
			return err
		}
		if err := fn(m.Value()); err != nil {
			return err
		}
	}
	return nil
}
