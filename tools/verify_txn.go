package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// txnEvent is a transactional batch met in a segment: data (a batch with
// records) or a marker.
type txnEvent struct {
	offset int64
	pid    int64
	kind   byte // 'd' data, 'a' abort marker, 'c' commit marker, '?' other control
}

// txnEventOf classifies a valid v2 batch; ok is false for a batch outside
// any transaction (or an emptied one).
func txnEventOf(b record.Batch) (txnEvent, bool) {
	if !b.IsTransactional() {
		return txnEvent{}, false
	}
	ev := txnEvent{offset: b.BaseOffset(), pid: b.ProducerID(), kind: 'd'}
	if !b.IsControl() {
		return ev, b.NumRecords() > 0
	}
	recs, err := b.Records(nil)
	if err != nil || len(recs) == 0 {
		return txnEvent{}, false
	}
	ev.kind = '?'
	if _, t, err := record.ParseControlKey(recs[0].Key); err == nil {
		switch t {
		case record.ControlAbort:
			ev.kind = 'a'
		case record.ControlCommit:
			ev.kind = 'c'
		}
	}
	return ev, true
}

// checkTxnIndex checks a segment's .txnindex against the log, as the log
// says it must be (see segment's doc): every entry names an abort marker
// of its producer in the segment, with its first offset at or below it; and
// every abort marker that ends a transaction whose records are still in
// the log has its entry (without it a read_committed consumer would be
// handed the aborted records). open carries, across the partition's
// segments in order, the producers with transactional records since their
// last marker.
func (v *verifier) checkTxnIndex(dir string, base int64, events []txnEvent, open map[int64]bool) {
	path := segment.FilePath(dir, base, segment.TxnIndexSuffix)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		v.report(problem{file: path, pos: 0, offset: -1, kind: "io", message: err.Error()})
		return
	}
	entries, _ := parseTxnIndex(path, b, base) // framing problems are reported by sideFile
	markers := map[int64]txnEvent{}
	for _, ev := range events {
		if ev.kind != 'd' {
			markers[ev.offset] = ev
		}
	}
	indexed := map[int64]bool{}
	for i, e := range entries {
		pos := int64(i * txnEntrySize)
		m, ok := markers[e.last]
		switch {
		case !ok || m.kind != 'a':
			v.report(problem{file: path, pos: pos, offset: e.last, kind: kindTxnIndex,
				message: fmt.Sprintf("entry %d (producer %d, offsets %d..%d) disagrees with the log: no abort marker at offset %d (recovery rebuilds the index)", i, e.pid, e.first, e.last, e.last)})
		case m.pid != e.pid:
			v.report(problem{file: path, pos: pos, offset: e.last, kind: kindTxnIndex,
				message: fmt.Sprintf("entry %d names producer %d, the abort marker at offset %d is producer %d's (recovery rebuilds the index)", i, e.pid, e.last, m.pid)})
		case e.first > e.last:
			v.report(problem{file: path, pos: pos, offset: e.first, kind: kindTxnIndex,
				message: fmt.Sprintf("entry %d: first offset %d is after its marker at %d", i, e.first, e.last)})
		default:
			indexed[e.last] = true
		}
	}
	for _, ev := range events {
		switch ev.kind {
		case 'd':
			open[ev.pid] = true
		case 'a':
			if open[ev.pid] && !indexed[ev.offset] {
				v.report(problem{file: path, pos: 0, offset: ev.offset, kind: kindTxnIndex,
					message: fmt.Sprintf("the abort marker at offset %d (producer %d) ends a transaction with records in the log but has no entry: read_committed consumers would read them (recovery rebuilds the index)", ev.offset, ev.pid)})
			}
			delete(open, ev.pid)
		default:
			delete(open, ev.pid)
		}
	}
}
