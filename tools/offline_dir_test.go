package tools

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// A data directory taken offline by an I/O error is left as the failure left
// it: here a write that reached the file only in part, whose undo failed
// too, so torn bytes lie past the acknowledged data, and no clean-shutdown
// marker. strata verify finds the torn batch, strata recover cuts it, and
// the directory then verifies clean with every acknowledged batch in it.
func TestVerifyRecoverAfterOfflineDir(t *testing.T) {
	root := t.TempDir()
	// Once armed: the next write of a .log file puts half its length (as
	// zeros: a torn write) into the file and fails, and the truncate that
	// would undo it fails too.
	var armed, tearing atomic.Bool
	undo := vfs.InjectorFunc(func(op vfs.Op) error {
		switch {
		case tearing.Load() && op.Kind == vfs.OpTruncate:
			return vfs.ErrInjected
		case armed.Load() && op.Kind == vfs.OpWriteAt && strings.HasSuffix(op.Path, segment.LogSuffix):
			armed.Store(false)
			tearing.Store(true)
			f, err := os.OpenFile(op.Path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, op.Len/2), op.Off); err != nil {
				return err
			}
			return vfs.ErrInjected
		}
		return nil
	})
	var reported atomic.Int32
	d, _, err := recovery.OpenDataDir(root, &recovery.Options{
		FS:        vfs.Inject(vfs.OS, undo),
		OnOffline: func(string, error) { reported.Add(1) },
		Logger:    quietLog,
	})
	if err != nil {
		t.Fatal(err)
	}
	tp := recovery.TopicPartition{Topic: "orders", Partition: 0}
	l, err := segment.Open(d.PartitionDir(tp), &segment.Options{FS: vfs.Inject(vfs.OS, undo), Health: d.Health(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.AddLog(tp, l); err != nil {
		t.Fatal(err)
	}
	var acked [][]byte
	for i := range 5 {
		b := testBatch(t, i)
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, b)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if _, err := l.Append(testBatch(t, 9)); !errors.Is(err, segment.ErrOffline) {
		t.Fatalf("append whose write tears and whose undo fails: %v", err)
	}
	if !d.Offline() || reported.Load() != 1 {
		t.Fatalf("offline %v, reported %d times", d.Offline(), reported.Load())
	}
	if err := d.Close(); err == nil {
		t.Fatal("close of an offline directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, recovery.CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean-shutdown marker written for an offline directory: %v", err)
	}
	if _, _, code := run(t, "verify", root); code != ExitProblems {
		t.Fatalf("verify of the directory the failure left: exit %d, want %d", code, ExitProblems)
	}
	res, stderr, code := recoverJSON(t, root)
	if code != ExitOK || res["changed"] != true {
		t.Fatalf("recover: exit %d %s\n%v", code, stderr, res)
	}
	if stdout, _, code := run(t, "verify", root); code != ExitOK {
		t.Fatalf("verify after recover: exit %d\n%s", code, stdout)
	}
	l, err = segment.Open(filepath.Join(root, "orders-0"), &segment.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got int
	for off := int64(0); off < l.LogEndOffset(); got++ {
		r, err := l.Read(off, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.ReadInto(nil)
		r.Release()
		if err != nil || got >= len(acked) || string(b) != string(acked[got]) {
			t.Fatalf("batch %d after recover differs from the acknowledged one (%v)", got, err)
		}
		off = record.Batch(b).LastOffset() + 1
	}
	if got != len(acked) {
		t.Fatalf("%d batches after recover, %d acknowledged", got, len(acked))
	}
}

var quietLog = slog.New(slog.DiscardHandler)

func testBatch(t *testing.T, id int) []byte {
	t.Helper()
	recs := []record.Record{{Timestamp: 1_700_000_000_000 + int64(id), Key: []byte("k"), Value: []byte(strings.Repeat("v", 200))}}
	b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
