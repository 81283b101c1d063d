package cleaner

import (
	"math"
	"sort"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// txnState is what one pass knows of the log's transactions, the role of
// Kafka's CleanedTransactionMetadata, carried over the whole pass (every
// group) since the pass reads the log from its start in offset order:
//
//   - aborted: every aborted transaction of the log's aborted-transaction
//     indexes from the first recopied segment on, by producer, in offset
//     order. A transactional batch inside one (same producer, base offset in
//     [first offset, marker offset]) is aborted data.
//   - seen: the aborted transactions whose batches the recopy met (and
//     removed or emptied). Their abort marker is kept, with its index entry
//     carried over to the cleaned segment: a consumer that read those
//     records before this pass still meets the marker that ends them; a
//     later pass, which meets none of their batches, may drop both.
//   - open: producers whose committed (or still open) transactional batches
//     the recopy met since their last marker; their next commit marker is
//     kept.
//
// A marker whose transaction has no data left is removed in two passes, as
// Kafka's cleaner does (delete.retention.ms, KIP-534's delete horizon): the
// first pass stamps its batch with the horizon now + delete.retention.ms, a
// pass at or after the horizon drops it. A reader that was inside the
// transaction when the data went still sees the marker for that long.
type txnState struct {
	aborted map[int64][]producer.AbortedTxn
	seen    map[producer.AbortedTxn]bool
	open    map[int64]bool
	// group is the aborted-transaction index of the cleaned segment being
	// written: the seen transactions whose marker the group keeps.
	group []producer.AbortedTxn
}

// newTxnState reads the aborted transactions of l whose marker is at or
// after from.
func newTxnState(l *segment.Log, from int64) *txnState {
	t := &txnState{seen: map[producer.AbortedTxn]bool{}, open: map[int64]bool{}}
	list := l.AbortedTxns(from, math.MaxInt64, nil)
	if len(list) == 0 {
		return t
	}
	t.aborted = map[int64][]producer.AbortedTxn{}
	for _, a := range list {
		t.aborted[a.ProducerID] = append(t.aborted[a.ProducerID], a)
	}
	for _, l := range t.aborted {
		sort.Slice(l, func(i, j int) bool { return l[i].FirstOffset < l[j].FirstOffset })
	}
	return t
}

// abortedAt returns the aborted transaction holding producer pid's batch at
// offset off.
func (t *txnState) abortedAt(pid, off int64) (producer.AbortedTxn, bool) {
	l := t.aborted[pid]
	i := sort.Search(len(l), func(i int) bool { return l[i].LastOffset >= off })
	if i < len(l) && l[i].FirstOffset <= off {
		return l[i], true
	}
	return producer.AbortedTxn{}, false
}

// isAbortedData says whether b (a v2 batch) is data of an aborted
// transaction.
func (t *txnState) isAbortedData(b record.Batch) (producer.AbortedTxn, bool) {
	if !b.IsTransactional() || b.IsControl() || t.aborted == nil {
		return producer.AbortedTxn{}, false
	}
	return t.abortedAt(b.ProducerID(), b.BaseOffset())
}

// onData notes a transactional data batch met by the recopy; it returns
// true when the batch is aborted data, to be removed.
func (t *txnState) onData(b record.Batch) bool {
	if !b.IsTransactional() {
		return false
	}
	// Any batch counts, an emptied one too (kept empty by retainEmpty), as
	// in Kafka: a replay of the log (recovery) opens the producer's
	// transaction at it, and only its marker closes it again.
	a, aborted := t.isAbortedData(b)
	if aborted {
		t.seen[a] = true
		return true
	}
	t.open[b.ProducerID()] = true
	return false
}

// onMarker decides a control batch met by the recopy, whose first record
// is recs[0] (none: an emptied marker): discardable is true when its
// transaction has no data left, so it may go once past its delete horizon.
func (t *txnState) onMarker(b record.Batch, recs []record.Record) (discardable bool) {
	pid := b.ProducerID()
	if len(recs) == 0 {
		delete(t.open, pid)
		return true
	}
	_, typ, err := record.ParseControlKey(recs[0].Key)
	if err != nil {
		return false // not ours to judge: kept
	}
	switch typ {
	case record.ControlCommit:
		had := t.open[pid]
		delete(t.open, pid)
		return !had
	case record.ControlAbort:
		delete(t.open, pid)
		a, ok := t.abortedAt(pid, b.BaseOffset())
		if !ok || a.LastOffset != b.BaseOffset() {
			return true // no index entry: nothing of it to filter
		}
		if t.seen[a] {
			t.group = append(t.group, a)
			return false
		}
		return true
	}
	return false
}

// filterMarker applies the marker rule to one control batch.
func (p *pass) filterMarker(b record.Batch, groupEnd int64) error {
	var err error
	p.recs, err = b.Records(p.recs[:0])
	if err != nil {
		return err
	}
	p.st.RecordsIn += int64(len(p.recs))
	discardable := p.tx.onMarker(b, p.recs)
	horizon, hasHorizon := b.DeleteHorizon()
	switch {
	case !discardable || (hasHorizon && p.o.now < horizon):
		p.st.RecordsOut += int64(len(p.recs))
		p.st.BatchesCopied++
		p.segKept++
		p.out = append(p.out, b...)
		return nil
	case !hasHorizon && len(p.recs) > 0:
		// First pass to find the transaction empty: stamp the horizon.
		opts := b.Options()
		opts.DeleteHorizon = p.o.now + p.o.deleteRetentionMs
		p.st.RecordsOut += int64(len(p.recs))
		p.st.BatchesRebuilt++
		p.st.MarkersStamped++
		p.segKept++
		p.out, err = record.AppendBatch(p.out, opts, p.recs)
		return err
	}
	retain, err := p.retainEmpty(b, groupEnd)
	if err != nil {
		return err
	}
	if !retain {
		p.st.MarkersRemoved++
		p.st.BatchesDropped++
		return nil
	}
	if len(p.recs) == 0 {
		p.st.BatchesCopied++
		p.segKept++
		p.out = append(p.out, b...)
		return nil
	}
	p.st.MarkersRemoved++
	p.st.BatchesKeptEmpty++
	p.segKept++
	p.out, err = appendEmptyBatch(p.out, b)
	return err
}
