package cleaner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// txnLog is a log the transaction tests append to as producers and a
// coordinator would.
type txnLog struct {
	t    *testing.T
	l    *segment.Log
	dir  string
	opts *segment.Options
	seq  map[int64]int32
	clk  atomic.Int64 // the log's background flushes read the clock
}

func (tl *txnLog) now() int64      { return tl.clk.Load() }
func (tl *txnLog) advance(d int64) { tl.clk.Add(d) }

func newTxnLog(t *testing.T) *txnLog {
	dir := filepath.Join(t.TempDir(), "t-0")
	tl := &txnLog{t: t, dir: dir, seq: map[int64]int32{}}
	tl.clk.Store(1_000_000)
	tl.opts = &segment.Options{FileDeleteDelayMs: -1, RetentionMs: -1, Logger: quiet, Now: tl.clk.Load}
	l, err := segment.Open(dir, tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	tl.l = l
	t.Cleanup(func() { tl.l.Close() })
	return tl
}

// kv is "key=value" records; a value "-" is a tombstone.
func kvRecords(now int64, kvs []string) []record.Record {
	recs := make([]record.Record, len(kvs))
	for i, s := range kvs {
		k, v, _ := bytes.Cut([]byte(s), []byte("="))
		if string(v) == "-" {
			v = nil
		}
		recs[i] = record.Record{Timestamp: now, Key: k, Value: v}
	}
	return recs
}

func (tl *txnLog) append(b []byte) int64 {
	tl.t.Helper()
	info, err := tl.l.Append(b)
	if err != nil {
		tl.t.Fatal(err)
	}
	return info.FirstOffset
}

// plain appends a non-transactional batch.
func (tl *txnLog) plain(kvs ...string) int64 {
	tl.t.Helper()
	b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), kvRecords(tl.now(), kvs))
	if err != nil {
		tl.t.Fatal(err)
	}
	return tl.append(b)
}

// txn appends a transactional batch of producer pid.
func (tl *txnLog) txn(pid int64, kvs ...string) int64 {
	tl.t.Helper()
	o := record.DefaultBatchOptions()
	o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, 0, tl.seq[pid], true
	tl.seq[pid] += int32(len(kvs))
	b, err := record.AppendBatch(nil, o, kvRecords(tl.now(), kvs))
	if err != nil {
		tl.t.Fatal(err)
	}
	return tl.append(b)
}

// end appends producer pid's commit or abort marker.
func (tl *txnLog) end(pid int64, commit bool) int64 {
	tl.t.Helper()
	o := record.DefaultBatchOptions()
	o.ProducerID, o.ProducerEpoch = pid, 0
	b, err := record.AppendEndTxnBatch(nil, o, commit, 1, tl.now())
	if err != nil {
		tl.t.Fatal(err)
	}
	return tl.append(b)
}

func (tl *txnLog) roll() {
	tl.t.Helper()
	if err := tl.l.Roll(); err != nil {
		tl.t.Fatal(err)
	}
}

// clean runs one background pass (the active segment untouched) from the
// log start.
func (tl *txnLog) clean(retentionMs int64) PassStats {
	tl.t.Helper()
	m, err := NewOffsetMap(1<<20, 0.9)
	if err != nil {
		tl.t.Fatal(err)
	}
	st, err := clean(tl.l, m, -1, passOptions{now: tl.now(), deleteRetentionMs: retentionMs,
		segmentBytes: 1 << 30, indexBytes: 1 << 20, producerExpiryMs: DefaultProducerIDExpirationMs, logger: quiet})
	if err != nil && err != ErrNothingToClean {
		tl.t.Fatalf("clean: %v", err)
	}
	return st
}

func (tl *txnLog) reopen() {
	tl.t.Helper()
	if err := tl.l.Close(); err != nil {
		tl.t.Fatal(err)
	}
	l, err := segment.Open(tl.dir, tl.opts)
	if err != nil {
		tl.t.Fatal(err)
	}
	tl.l = l
}

// seen is a record as a consumer sees it.
type seen struct {
	Offset     int64
	Key, Value string
}

func (s seen) String() string { return fmt.Sprintf("%d:%s=%s", s.Offset, s.Key, s.Value) }

// consume reads the whole log as a Kafka consumer does at the given
// isolation level: read_committed reads up to the last stable offset and
// drops the batches of the aborted transactions the log returns (a
// producer is aborted from its transaction's first offset until its abort
// marker); both skip control records. markers counts the control batches
// holding records.
func consume(t *testing.T, l *segment.Log, committed bool) (out []seen, markers int) {
	t.Helper()
	upTo := l.HighWatermark()
	if committed {
		upTo = l.LastStableOffset()
	}
	aborted := l.AbortedTxns(l.LogStartOffset(), upTo, nil)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	abortedPids := map[int64]bool{}
	off := l.LogStartOffset()
	for off < upTo {
		var r segment.Region
		var err error
		if committed {
			r, err = l.ReadStable(off, 1<<20)
		} else {
			r, err = l.Read(off, 1<<20)
		}
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if r.Len == 0 {
			r.Release()
			break
		}
		buf, err := r.ReadInto(nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		n := 0
		for it.Next() {
			n++
			b := it.Batch()
			off = b.LastOffset() + 1
			for committed && len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
				abortedPids[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			recs, err := b.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			if b.IsControl() {
				if len(recs) > 0 {
					markers++
					if _, typ, _ := record.ParseControlKey(recs[0].Key); typ == record.ControlAbort {
						delete(abortedPids, b.ProducerID())
					}
				}
				continue
			}
			if committed && b.IsTransactional() && abortedPids[b.ProducerID()] {
				continue
			}
			for _, rc := range recs {
				v := string(rc.Value)
				if rc.Value == nil {
					v = "-"
				}
				out = append(out, seen{rc.Offset, string(rc.Key), v})
			}
		}
		if n == 0 {
			t.Fatalf("read at %d returned no whole batch: %v", off, it.Err())
		}
	}
	return out, markers
}

// latest reduces what a consumer saw to each key's last value (tombstones
// dropped), as a compacted topic's reader ends up with.
func latest(recs []seen) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		if r.Value == "-" {
			delete(m, r.Key)
		} else {
			m[r.Key] = r.Value
		}
	}
	return m
}

func txnIndexEntries(t *testing.T, l *segment.Log) []producer.AbortedTxn {
	t.Helper()
	var all []producer.AbortedTxn
	for _, s := range l.Segments() {
		data, err := os.ReadFile(s.Path(segment.TxnIndexSuffix))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		list, err := producer.DecodeTxnIndex(data, s.Base(), s.NextOffset())
		if err != nil {
			t.Fatalf("%s: %v", s.Path(segment.TxnIndexSuffix), err)
		}
		all = append(all, list...)
	}
	return all
}

// TestCleanAbortedAndCommitted: a pass over a log holding an aborted and a
// committed transaction removes the aborted records (the cleaner used to
// refuse the partition with ErrTransactional), keeps the committed ones,
// compacted by key like any other, keeps both markers while their
// transaction had data in the pass, and carries the aborted transaction's
// index entry over to the cleaned segment's .txnindex (on disk and for
// read_committed fetches). An aborted record does not hide the older
// committed value of its key. The result survives a reopen.
func TestCleanAbortedAndCommitted(t *testing.T) {
	tl := newTxnLog(t)
	tl.plain("k1=v0", "k5=v5")   // 0-1
	tl.txn(10, "k1=a1", "k5=a5") // 2-3 aborted
	tl.txn(11, "k1=c1", "k3=c3") // 4-5 committed
	tl.txn(10, "k6=a6")          // 6 aborted
	abortAt := tl.end(10, false) // 7
	commitAt := tl.end(11, true) // 8
	tl.txn(11, "k3=c3b")         // 9
	tl.end(11, true)             // 10
	tl.plain("k4=v4")            // 11
	tl.roll()
	tl.plain("k9=active") // 12, active segment
	want := producer.AbortedTxn{ProducerID: 10, FirstOffset: 2, LastOffset: abortAt, LastStableOffset: 4}
	if got := txnIndexEntries(t, tl.l); !slices.Equal(got, []producer.AbortedTxn{want}) {
		t.Fatalf("index before cleaning: %+v", got)
	}
	rcBefore, _ := consume(t, tl.l, true)

	st := tl.clean(1000)
	if st.AbortedRemoved != 3 {
		t.Fatalf("removed %d aborted records, want 3: %+v", st.AbortedRemoved, st)
	}
	check := func(what string) {
		t.Helper()
		ru, markers := consume(t, tl.l, false)
		wantRU := []seen{{1, "k5", "v5"}, {4, "k1", "c1"}, {9, "k3", "c3b"}, {11, "k4", "v4"}, {12, "k9", "active"}}
		if !slices.Equal(ru, wantRU) {
			t.Fatalf("%s: read_uncommitted sees %v, want %v", what, ru, wantRU)
		}
		if markers != 3 {
			t.Fatalf("%s: %d markers left, want 3 (each transaction had data in the pass)", what, markers)
		}
		rc, _ := consume(t, tl.l, true)
		if !maps(latest(rc), latest(rcBefore)) {
			t.Fatalf("%s: read_committed ends with %v, before cleaning %v", what, latest(rc), latest(rcBefore))
		}
		if got := txnIndexEntries(t, tl.l); !slices.Equal(got, []producer.AbortedTxn{want}) {
			t.Fatalf("%s: .txnindex holds %+v, want %+v", what, got, want)
		}
		if got := tl.l.AbortedTxns(0, tl.l.LogEndOffset(), nil); !slices.Equal(got, []producer.AbortedTxn{want}) {
			t.Fatalf("%s: AbortedTxns %+v, want %+v", what, got, want)
		}
	}
	check("after the pass")
	_ = commitAt
	tl.reopen()
	check("after a reopen")
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// controls counts the control batches left in the log, emptied ones too.
func controls(t *testing.T, l *segment.Log) int {
	t.Helper()
	n := 0
	for _, s := range l.Segments() {
		data, err := os.ReadFile(s.Path(segment.LogSuffix))
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewIterator(data, record.ScanOptions{VerifyCRC: true})
		for it.Next() {
			if it.Batch().IsControl() {
				n++
			}
		}
	}
	return n
}

// TestCleanMarkersAfterDeleteRetention: Kafka's two-pass marker removal.
// The pass that removes an aborted transaction's data keeps its marker;
// the next pass finds both transactions (one aborted, one committed whose
// records were all compacted away) with nothing left and stamps their
// markers with the delete horizon now + delete.retention.ms, dropping the
// aborted one's index entry; passes before the horizon keep them, the
// first pass at the horizon removes them (each its producer's last batch,
// so kept as an empty header while the producer is active, as Kafka's
// RETAIN_EMPTY; dropped once it is not). read_committed ends with the
// same values throughout.
func TestCleanMarkersAfterDeleteRetention(t *testing.T) {
	const retention = 5000
	tl := newTxnLog(t)
	tl.plain("k0=v0")  // 0
	tl.txn(10, "k1=a") // 1 aborted
	tl.end(10, false)  // 2
	tl.txn(11, "k2=c") // 3 committed, superseded at 5
	tl.end(11, true)   // 4
	tl.plain("k2=v")   // 5
	tl.plain("k7=v7")  // 6
	tl.roll()
	tl.plain("k9=active") // 7
	rcBefore, _ := consume(t, tl.l, true)
	step := func(what string, wantMarkers, wantControls int, wantIndex bool) PassStats {
		t.Helper()
		st := tl.clean(retention)
		ru, markers := consume(t, tl.l, false)
		wantRU := []seen{{0, "k0", "v0"}, {5, "k2", "v"}, {6, "k7", "v7"}, {7, "k9", "active"}}
		if !slices.Equal(ru, wantRU) {
			t.Fatalf("%s: read_uncommitted sees %v, want %v", what, ru, wantRU)
		}
		if rc, _ := consume(t, tl.l, true); !maps(latest(rc), latest(rcBefore)) {
			t.Fatalf("%s: read_committed ends with %v, before cleaning %v", what, latest(rc), latest(rcBefore))
		}
		if markers != wantMarkers || controls(t, tl.l) != wantControls {
			t.Fatalf("%s: %d markers (%d control batches), want %d (%d): %+v", what, markers, controls(t, tl.l), wantMarkers, wantControls, st)
		}
		if idx := txnIndexEntries(t, tl.l); (len(idx) == 1) != wantIndex {
			t.Fatalf("%s: .txnindex holds %+v", what, idx)
		}
		return st
	}
	if st := step("pass 1 removes the aborted data", 2, 2, true); st.AbortedRemoved != 1 || st.MarkersStamped != 0 {
		t.Fatalf("pass 1: %+v", st)
	}
	if st := step("pass 2 stamps both markers", 2, 2, false); st.MarkersStamped != 2 {
		t.Fatalf("pass 2: %+v", st)
	}
	tl.advance(retention - 1)
	if st := step("a pass before the horizon", 2, 2, false); st.MarkersRemoved != 0 {
		t.Fatalf("before the horizon: %+v", st)
	}
	tl.advance(1)
	if st := step("the pass at the horizon", 0, 2, false); st.MarkersRemoved != 2 || st.BatchesKeptEmpty != 2 {
		t.Fatalf("at the horizon: %+v", st)
	}
	tl.advance(DefaultProducerIDExpirationMs)
	step("once the producers expired", 0, 0, false)
	tl.reopen()
	if ru, _ := consume(t, tl.l, false); len(ru) != 4 {
		t.Fatalf("after a reopen: %v", ru)
	}
}

// TestCleanStopsAtLastStableOffset: the pass never maps past the last
// stable offset. An open transaction's record for k1 stays out of the
// offset map, so k1's committed value before it survives; once the
// transaction aborts, the next pass removes the aborted record and k1
// still reads v0. (Mapping the open record would have removed v0, and the
// abort would then have lost k1 altogether.)
func TestCleanStopsAtLastStableOffset(t *testing.T) {
	tl := newTxnLog(t)
	tl.plain("k1=v0")   // 0
	tl.txn(12, "k1=o1") // 1, open
	tl.plain("k2=x")    // 2
	tl.roll()
	tl.plain("k9=active") // 3
	if lso := tl.l.LastStableOffset(); lso != 1 {
		t.Fatalf("LSO %d, want 1", lso)
	}
	st := tl.clean(0)
	if st.FirstUncleanable != 1 || st.EndOffset != 1 {
		t.Fatalf("pass over an open transaction: first uncleanable %d, end %d, want 1 and 1", st.FirstUncleanable, st.EndOffset)
	}
	ru, _ := consume(t, tl.l, false)
	if want := []seen{{0, "k1", "v0"}, {1, "k1", "o1"}, {2, "k2", "x"}, {3, "k9", "active"}}; !slices.Equal(ru, want) {
		t.Fatalf("read_uncommitted sees %v, want %v", ru, want)
	}
	if rc, _ := consume(t, tl.l, true); !slices.Equal(rc, []seen{{0, "k1", "v0"}}) {
		t.Fatalf("read_committed sees %v, want only k1=v0 (below the open transaction)", rc)
	}
	tl.end(12, false) // 4
	tl.roll()
	tl.plain("k8=active") // 5
	if st := tl.clean(0); st.AbortedRemoved != 1 {
		t.Fatalf("after the abort: %+v", st)
	}
	rc, _ := consume(t, tl.l, true)
	if got := latest(rc); got["k1"] != "v0" || got["k2"] != "x" {
		t.Fatalf("read_committed after the abort and a pass ends with %v, want k1=v0 and k2=x", got)
	}
	ru, _ = consume(t, tl.l, false)
	for _, r := range ru {
		if r.Value == "o1" {
			t.Fatalf("aborted record still read: %v", ru)
		}
	}
}
