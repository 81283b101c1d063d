package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// txnPartition writes a partition with producer 9's aborted transaction
// (offsets 0-1, marker 2), producer 8's committed one (3, marker 4) and a
// plain batch (5), closed cleanly.
func txnPartition(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, err := segment.Open(dir, &segment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	data := func(pid int64, n int) []byte {
		o := record.DefaultBatchOptions()
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, 0, 0, pid > 0
		recs := make([]record.Record, n)
		for i := range recs {
			recs[i] = record.Record{Timestamp: now, Key: []byte{byte('a' + i)}, Value: []byte("v")}
		}
		b, err := record.AppendBatch(nil, o, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	marker := func(pid int64, commit bool) []byte {
		o := record.DefaultBatchOptions()
		o.ProducerID, o.ProducerEpoch = pid, 0
		b, err := record.AppendEndTxnBatch(nil, o, commit, 1, now)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, b := range [][]byte{data(9, 2), marker(9, false), data(8, 1), marker(8, true), data(-1, 1)} {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVerifyTxnIndexAgainstLog: verify checks a .txnindex against the log.
// A sound partition passes; an entry that points at no abort marker, one
// that names another producer, and a missing index while the aborted
// records are still in the log each exit 1 with a txn_index problem saying
// what disagrees. A partition the cleaner has emptied of the aborted
// records (and, a pass later, of their index entry) passes. Before the
// check, every one of these indexes passed.
func TestVerifyTxnIndexAgainstLog(t *testing.T) {
	idx := filepath.Join(seg0 + ".txnindex")
	write := func(t *testing.T, dir string, entries ...producer.AbortedTxn) {
		var b []byte
		for _, a := range entries {
			b = producer.AppendAbortedTxn(b, a)
		}
		if err := os.WriteFile(filepath.Join(dir, idx), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		bad   func(t *testing.T, dir string)
		wants string
	}{
		{"sound", func(*testing.T, string) {}, ""},
		{"entry at a commit marker", func(t *testing.T, dir string) {
			write(t, dir, producer.AbortedTxn{ProducerID: 9, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3},
				producer.AbortedTxn{ProducerID: 8, FirstOffset: 3, LastOffset: 4, LastStableOffset: 5})
		}, "no abort marker at offset 4"},
		{"entry of another producer", func(t *testing.T, dir string) {
			write(t, dir, producer.AbortedTxn{ProducerID: 8, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3})
		}, "names producer 8, the abort marker at offset 2 is producer 9's"},
		{"index missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, idx)); err != nil {
				t.Fatal(err)
			}
		}, "abort marker at offset 2 (producer 9) ends a transaction with records in the log but has no entry"},
		{"cleaned", func(t *testing.T, dir string) {
			now := time.Now().UnixMilli()
			for i := 0; i < 2; i++ {
				o := cleaner.DefaultCompactOptions()
				o.Logger = quietLog
				o.FromStart = true
				o.Now = func() int64 { return now }
				if _, err := cleaner.CompactDir(dir, &o); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, idx)); (err == nil) != (i == 0) {
					t.Fatalf("pass %d: index present: %v", i, err)
				}
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := txnPartition(t)
			tc.bad(t, dir)
			stdout, stderr, code := run(t, "verify", dir)
			if tc.wants == "" {
				if code != 0 {
					t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
				}
				return
			}
			if code != 1 || !strings.Contains(stdout, "txn_index") || !strings.Contains(stdout, tc.wants) {
				t.Fatalf("exit %d, want 1 with %q\n%s%s", code, tc.wants, stdout, stderr)
			}
		})
	}
}
