package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/stratalog/strata/record"
)

// segResult is what checking one segment found.
type segResult struct {
	problems   []problem
	size       int64 // .log size
	validEnd   int64 // where the valid entries end
	firstOff   int64 // -1 when the segment holds no entry
	lastOff    int64 // -1 when the segment holds no entry
	batches    int64
	gaps       int64 // offset gaps between batches (legal after compaction)
	ixEntries  int
	tixEntries int
	txn        []txnEvent // transactional batches, in order
}

// segmentCheck says what to check in checkSegment.
type segmentCheck struct {
	log      string
	base     int64
	ix, tix  string // index files to check; "" to skip
	prevLast int64  // last offset of the previous segment, -1 if none
	// missingIndexProblem reports a missing .index/.timeindex as a problem
	// (verify); otherwise it is an error.
	missingIndexProblem bool
	maxEntry            int64
	onBytes             func(n int64) // progress
	// active: the segment a running broker is appending to. Its indexes are
	// preallocated (zero-filled past the last entry), which is no problem.
	active bool
}

// checkSegment scans a .log once, checking framing, CRCs and offset order,
// and checks its offset and time index against it on the way (indexCheck).
// It only reads. Errors are I/O errors; data problems are in the result.
func checkSegment(sc *logScan, c segmentCheck) (*segResult, error) {
	res := &segResult{firstOff: -1, lastOff: -1}
	f, err := os.Open(c.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	res.size = fi.Size()
	var ix []ixEntry
	var tix []tixEntry
	if c.ix != "" {
		e, probs, err := readOffsetIndex(c.ix, c.base)
		switch {
		case errors.Is(err, fs.ErrNotExist) && c.missingIndexProblem:
			res.problems = append(res.problems, problem{file: c.ix, pos: 0, offset: -1, kind: kindIndexMissing,
				message: "offset index is missing (Kafka rebuilds it at start-up; strata recover does too)"})
		case err != nil:
			return nil, err
		}
		ix = e
		res.ixEntries = len(e)
		res.problems = append(res.problems, probs...)
	}
	if c.tix != "" {
		e, probs, err := readTimeIndex(c.tix, c.base)
		switch {
		case errors.Is(err, fs.ErrNotExist) && c.missingIndexProblem:
			res.problems = append(res.problems, problem{file: c.tix, pos: 0, offset: -1, kind: kindIndexMissing,
				message: "time index is missing (strata recover rebuilds it)"})
		case err != nil:
			return nil, err
		}
		tix = e
		res.tixEntries = len(e)
		res.problems = append(res.problems, probs...)
	}
	if c.active {
		kept := res.problems[:0]
		for _, p := range res.problems {
			if p.kind != kindIndexZeroPad {
				kept = append(kept, p)
			}
		}
		res.problems = kept
	}
	chk := newIndexCheck(c.base, c.ix, ix, c.tix, tix)
	sc.reset(f, c.log, res.size, 0, res.size, c.maxEntry)
	prev := c.prevLast
	var reported int64
	for sc.next() {
		e := &sc.e
		res.validEnd = e.pos + e.size
		res.batches++
		if e.valid && !e.legacy {
			if ev, ok := txnEventOf(record.Batch(e.entry)); ok {
				res.txn = append(res.txn, ev)
			}
		}
		if !e.valid {
			res.problems = append(res.problems, problem{file: c.log, pos: e.pos, offset: e.base, kind: kindOf(e.err), message: detail(e.err)})
		}
		first := e.base
		if e.legacy {
			// A wrapper's offset is its last inner offset; the first is not
			// known without decompressing, only that it follows prev.
			first = e.last
			if prev >= 0 && prev < e.last {
				first = prev + 1
			}
		}
		if e.base < c.base && e.valid {
			res.problems = append(res.problems, problem{file: c.log, pos: e.pos, offset: e.base, kind: kindOffsetBelowBase,
				message: fmt.Sprintf("batch offsets %d..%d start below the segment's base offset %d", e.base, e.last, c.base)})
		}
		if prev >= 0 {
			switch {
			case e.base <= prev && !(e.legacy && e.last > prev):
				res.problems = append(res.problems, problem{file: c.log, pos: e.pos, offset: e.base, kind: kindOffsetOrder,
					message: fmt.Sprintf("batch offsets %d..%d do not follow the previous last offset %d", e.base, e.last, prev)})
			case !e.legacy && e.base > prev+1:
				res.gaps++
			}
		}
		if e.last < e.base {
			res.problems = append(res.problems, problem{file: c.log, pos: e.pos, offset: e.base, kind: kindOffsetOrder,
				message: fmt.Sprintf("last offset %d is below the base offset %d", e.last, e.base)})
		}
		if res.firstOff < 0 {
			res.firstOff = first
		}
		if e.last > prev {
			prev = e.last
		}
		res.lastOff = prev
		chk.batch(e.pos, first, e.last, e.maxTs)
		if c.onBytes != nil && e.pos+e.size-reported >= 16<<20 {
			c.onBytes(e.pos + e.size - reported)
			reported = e.pos + e.size
		}
	}
	if c.onBytes != nil {
		c.onBytes(res.size - reported)
	}
	if sc.stop != nil {
		if sc.stop.kind == "io" {
			return nil, fmt.Errorf("%s: %s", c.log, sc.stop.message)
		}
		res.problems = append(res.problems, *sc.stop)
	}
	res.problems = append(res.problems, chk.finish(res.validEnd)...)
	return res, nil
}
