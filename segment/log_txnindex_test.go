package segment

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

// txnBatch is a transactional producer's batch of n records.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, epoch, seq, true
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("t")}
	}
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// markerBatch is a coordinator's commit or abort marker.
func markerBatch(t testing.TB, pid int64, epoch int16, commit bool, coordEpoch int32) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = pid, epoch
	b, err := record.AppendEndTxnBatch(nil, opts, commit, coordEpoch, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTxnIndex: transactional batches hold the last stable offset at the
// first open transaction; an abort marker (appended as the coordinator
// does, through Append) writes the transaction to the segment's .txnindex
// in Kafka's 34-byte entries and AbortedTxns returns it; a commit does
// not. The index survives reopen; a damaged or missing one is rebuilt
// from the log (reported, logged); a marker from an older coordinator
// epoch or producer epoch is refused.
func TestTxnIndex(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	app := func(b []byte) {
		t.Helper()
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	app(makeBatch(t, 0, 2, time.Now().UnixMilli(), record.CodecNone, 10)) // 0-1
	app(txnBatch(t, 10, 0, 0, 2))                                         // 2-3, producer 10
	app(txnBatch(t, 11, 0, 0, 2))                                         // 4-5, producer 11
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d, want 2 (producer 10's open transaction)", lso)
	}
	app(markerBatch(t, 10, 0, false, 3)) // 6: abort producer 10
	if lso := l.LastStableOffset(); lso != 4 {
		t.Fatalf("LSO %d after the abort, want 4", lso)
	}
	app(markerBatch(t, 11, 0, true, 3)) // 7: commit producer 11
	if lso := l.LastStableOffset(); lso != 8 {
		t.Fatalf("LSO %d after the commit, want 8 (high watermark)", lso)
	}
	want := []producer.AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: 6, LastStableOffset: 4}}
	check := func(l *Log, what string) {
		t.Helper()
		got := l.AbortedTxns(0, l.LogEndOffset(), nil)
		if len(got) != 1 || got[0] != want[0] {
			t.Fatalf("%s: aborted %+v, want %+v", what, got, want)
		}
		if got := l.AbortedTxns(7, 8, nil); len(got) != 0 {
			t.Fatalf("%s: aborted in [7, 8): %+v", what, got)
		}
	}
	check(l, "after the abort")
	if _, err := l.Append(markerBatch(t, 10, 0, false, 2)); !errors.Is(err, producer.ErrCoordinatorFenced) {
		t.Fatalf("marker from an old coordinator: %v", err)
	}
	app(txnBatch(t, 10, 1, 0, 1)) // 8: producer 10, new epoch
	if _, err := l.Append(markerBatch(t, 10, 0, false, 3)); !errors.Is(err, producer.ErrInvalidEpoch) {
		t.Fatalf("marker of an old producer epoch: %v", err)
	}
	app(markerBatch(t, 10, 1, true, 3)) // 9
	path := FilePath(dir, 0, TxnIndexSuffix)
	data, err := os.ReadFile(path)
	if err != nil || len(data) != producer.TxnEntrySize {
		t.Fatalf(".txnindex: %d bytes, %v", len(data), err)
	}
	if list, err := producer.DecodeTxnIndex(data, 0, 10); err != nil || list[0] != want[0] {
		t.Fatalf(".txnindex holds %+v, %v", list, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopen := func(what string, opts *Options) {
		t.Helper()
		l2, rep, err := OpenWithReport(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		check(l2, what)
		if what == "damaged" && rep.TxnIndexesRebuilt != 1 {
			t.Fatalf("damaged index: report %+v", rep)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	reopen("reopened", &Options{CleanShutdown: true})
	// Damaged: an entry whose offsets lie outside the segment.
	if err := os.WriteFile(path, producer.AppendAbortedTxn(nil, producer.AbortedTxn{ProducerID: 1, FirstOffset: 50, LastOffset: 90}), 0o644); err != nil {
		t.Fatal(err)
	}
	reopen("damaged", &Options{CleanShutdown: true})
	if data2, err := os.ReadFile(path); err != nil || string(data2) != string(data) {
		t.Fatalf("rebuilt index differs: %x, %v (want %x)", data2, err, data)
	}
	// Missing after a crash (no snapshot at the end): replayed from the log.
	for _, f := range []string{path, FilePath(dir, 10, SnapshotSuffix)} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	reopen("missing", &Options{})
}

// TestCleanedTxnIndex: a cleaned segment's aborted-transaction entries are
// written at Seal as .txnindex.cleaned and swapped in with the segment
// (on disk, in AbortedTxns, after a reopen); entries out of marker order,
// or whose marker lies outside the cleaned segment, are refused.
func TestCleanedTxnIndex(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, &Options{FileDeleteDelayMs: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	for _, b := range [][]byte{txnBatch(t, 10, 0, 0, 2), markerBatch(t, 10, 0, false, 1)} { // 0-1, 2
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	want := producer.AbortedTxn{ProducerID: 10, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}
	old := l.Segments()[:1]
	copyInto := func(c *Cleaned) {
		t.Helper()
		buf := make([]byte, old[0].Size())
		if _, err := old[0].LogFile().ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		if err := c.Append(buf); err != nil {
			t.Fatal(err)
		}
	}
	c, err := l.CreateCleaned(0)
	if err != nil {
		t.Fatal(err)
	}
	copyInto(c)
	if err := c.AddAbortedTxn(want); err != nil {
		t.Fatal(err)
	}
	if err := c.AddAbortedTxn(producer.AbortedTxn{ProducerID: 11, FirstOffset: 0, LastOffset: 1}); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("entry out of marker order: %v, want ErrOffsetMismatch", err)
	}
	if err := c.Abort(); err != nil {
		t.Fatal(err)
	}
	bad, err := l.CreateCleaned(0)
	if err != nil {
		t.Fatal(err)
	}
	copyInto(bad)
	if err := bad.AddAbortedTxn(producer.AbortedTxn{ProducerID: 10, FirstOffset: 0, LastOffset: 7}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Seal(); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("marker outside the segment: Seal %v, want ErrOffsetMismatch", err)
	}
	if err := bad.Abort(); err != nil {
		t.Fatal(err)
	}
	c, err = l.CreateCleaned(0)
	if err != nil {
		t.Fatal(err)
	}
	copyInto(c)
	if err := c.AddAbortedTxn(want); err != nil {
		t.Fatal(err)
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := l.ReplaceSegments([]*Cleaned{c}, old, false); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		data, err := os.ReadFile(l.Segments()[0].Path(TxnIndexSuffix))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		list, err := producer.DecodeTxnIndex(data, 0, 3)
		if err != nil || len(list) != 1 || list[0] != want {
			t.Fatalf("%s: .txnindex %+v %v, want %+v", what, list, err, want)
		}
		if got := l.AbortedTxns(0, 3, nil); len(got) != 1 || got[0] != want {
			t.Fatalf("%s: AbortedTxns %+v", what, got)
		}
	}
	check("swapped in")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(dir, &Options{FileDeleteDelayMs: -1}); err != nil {
		t.Fatal(err)
	}
	check("reopened")
}
