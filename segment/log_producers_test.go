package segment

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

// idemBatch is an idempotent producer's batch of n records from sequence
// seq.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}
	}
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProducerDedup: a leader append checks each producer's sequence: a
// retry of one of its last five batches is answered with the original
// offsets and not appended; a gap, an old epoch, a sequence from a
// producer the partition does not know are refused (ErrProducer wrapping
// the producer error) with nothing appended; a new epoch restarts at 0.
func TestProducerDedup(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend := func(b []byte) AppendInfo {
		t.Helper()
		info, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	first := mustAppend(idemBatch(t, 7, 0, 0, 3))
	for i := int32(1); i <= 5; i++ {
		mustAppend(idemBatch(t, 7, 0, i*3, 3))
	}
	end := l.LogEndOffset()
	// The batch at sequence 3 is among the last five: a retry.
	info := mustAppend(idemBatch(t, 7, 0, 3, 3))
	if !info.Duplicate || info.FirstOffset != 3 || info.LastOffset != 5 || l.LogEndOffset() != end {
		t.Fatalf("retry: %+v, log end %d (was %d)", info, l.LogEndOffset(), end)
	}
	if first.FirstOffset != 0 {
		t.Fatalf("first %+v", first)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"gap", idemBatch(t, 7, 0, 19, 1), producer.ErrOutOfOrderSequence},
		{"too old to remember", idemBatch(t, 7, 0, 0, 3), producer.ErrOutOfOrderSequence},
		{"new epoch not at 0", idemBatch(t, 7, 1, 18, 1), producer.ErrOutOfOrderSequence},
		{"unknown producer", idemBatch(t, 8, 0, 5, 1), producer.ErrUnknownProducer},
	} {
		_, err := l.Append(c.b)
		if !errors.Is(err, ErrProducer) || !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if l.LogEndOffset() != end || l.Err() != nil {
			t.Fatalf("%s: log end %d, want %d; err %v", c.name, l.LogEndOffset(), end, l.Err())
		}
	}
	mustAppend(idemBatch(t, 7, 0, 18, 1))
	mustAppend(idemBatch(t, 7, 1, 0, 1)) // epoch bump
	if _, err := l.Append(idemBatch(t, 7, 0, 19, 1)); !errors.Is(err, producer.ErrInvalidEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	// Non-idempotent batches are never checked.
	mustAppend(makeBatch(t, 0, 2, time.Now().UnixMilli(), record.CodecNone, 10))
}

// TestProducerExpiration: a producer whose last batch is older than
// producer.id.expiration.ms is forgotten: its next sequence is
// UNKNOWN_PRODUCER_ID, and a restart at sequence 0 is taken.
func TestProducerExpiration(t *testing.T) {
	now := time.Now().UnixMilli()
	l, err := Open(t.TempDir(), &Options{ProducerIDExpirationMs: 1000, Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(idemBatch(t, 3, 0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	now += 60_000
	if _, err := l.Append(idemBatch(t, 3, 0, 2, 1)); !errors.Is(err, producer.ErrUnknownProducer) {
		t.Fatalf("after expiration: %v", err)
	}
	if _, err := l.Append(idemBatch(t, 3, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
}

// TestProducerStateFollows: producer state survives roll, clean close and
// reopen (from the snapshot), a crash (no snapshot at the end: rebuilt
// from the roll's snapshot and the log), and a truncation (rebuilt to the
// cut); a follower's AppendAssigned builds the same state unchecked.
func TestProducerStateFollows(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	var copies [][]byte
	app := func(l *Log, b []byte) {
		t.Helper()
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, b)
	}
	app(l, idemBatch(t, 1, 0, 0, 2))
	app(l, idemBatch(t, 2, 0, 0, 2))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(FilePath(dir, 4, SnapshotSuffix)); err != nil {
		t.Fatalf("no snapshot at roll: %v", err)
	}
	app(l, idemBatch(t, 1, 0, 2, 2))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(FilePath(dir, 6, SnapshotSuffix))
	if err != nil {
		t.Fatalf("no snapshot at close: %v", err)
	}
	if len(data) != 10+2*46 {
		t.Fatalf("snapshot of %d bytes", len(data))
	}
	retry := func(l *Log, pid int64, seq int32, n int, first int64) {
		t.Helper()
		info, err := l.Append(idemBatch(t, pid, 0, seq, n))
		if err != nil || !info.Duplicate || info.FirstOffset != first {
			t.Fatalf("retry of producer %d seq %d: %+v, %v", pid, seq, info, err)
		}
	}
	l, err = Open(dir, &Options{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	retry(l, 1, 2, 2, 4)
	retry(l, 2, 0, 2, 2)
	l.Close()
	// A crash: the close snapshot is gone, the roll's remains.
	if err := os.Remove(FilePath(dir, 6, SnapshotSuffix)); err != nil {
		t.Fatal(err)
	}
	l, rep, err := OpenWithReport(dir, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ProducerBatchesReplayed != 1 {
		t.Fatalf("replayed %d batches, want 1 (after the roll's snapshot)", rep.ProducerBatchesReplayed)
	}
	retry(l, 1, 2, 2, 4)
	// Truncation to 4 forgets producer 1's second batch.
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(idemBatch(t, 1, 0, 2, 2)); err != nil {
		t.Fatalf("after truncation: %v", err)
	}
	l.Close()

	// A follower applies the same batches unchecked and ends with the same
	// state: the leader's retries are caught after it takes over.
	f, err := Open(t.TempDir(), &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, b := range copies {
		if _, err := f.AppendAssigned(b); err != nil {
			t.Fatal(err)
		}
	}
	retry(f, 1, 2, 2, 4)
	retry(f, 2, 0, 2, 2)
}

// TestProducerSnapshotDamaged: a corrupt or truncated snapshot is ignored,
// logged, reported and removed, and the state rebuilt from the log.
func TestProducerSnapshotDamaged(t *testing.T) {
	for _, damage := range []struct {
		name string
		f    func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-7] }},
		{"flipped", func(b []byte) []byte { b[20] ^= 0x40; return b }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, &Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(idemBatch(t, 5, 0, 0, 3)); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := FilePath(dir, 3, SnapshotSuffix)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage.f(data), 0o644); err != nil {
				t.Fatal(err)
			}
			var logBuf bytes.Buffer
			l, rep, err := OpenWithReport(dir, &Options{CleanShutdown: true, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if len(rep.SnapshotsIgnored) != 1 || rep.ProducerBatchesReplayed != 1 {
				t.Fatalf("report %+v", rep)
			}
			if !strings.Contains(logBuf.String(), "ignoring damaged producer snapshot") {
				t.Fatalf("not logged: %s", logBuf.String())
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("damaged snapshot kept: %v", err)
			}
			info, err := l.Append(idemBatch(t, 5, 0, 0, 3))
			if err != nil || !info.Duplicate {
				t.Fatalf("retry after rebuild: %+v, %v", info, err)
			}
		})
	}
}
