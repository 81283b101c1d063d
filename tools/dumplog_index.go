package tools

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"

	"github.com/stratalog/strata/index"
)

// ixEntry is one offset index entry with its slot.
type ixEntry struct {
	slot int
	off  int64
	pos  int64
}

// tixEntry is one time index entry with its slot.
type tixEntry struct {
	slot int
	ts   int64
	off  int64
}

// readOffsetIndex reads an .index file (no mmap, no lock). Entries stop at
// zero padding (a slot after the first with relative offset 0 and position 0,
// as Kafka's dump does); padding and a bad length are reported as problems.
func readOffsetIndex(path string, base int64) ([]ixEntry, []problem, error) {
	b, n, probs, err := readIndexFile(path, index.OffsetEntrySize)
	if err != nil {
		return nil, nil, err
	}
	out := make([]ixEntry, 0, n)
	for i := 0; i < n; i++ {
		rel := int32(binary.BigEndian.Uint32(b[i*8:]))
		pos := int32(binary.BigEndian.Uint32(b[i*8+4:]))
		if i > 0 && rel == 0 && pos == 0 {
			probs = append(probs, zeroPadProblem(path, base, i, n, index.OffsetEntrySize))
			break
		}
		out = append(out, ixEntry{slot: i, off: base + int64(rel), pos: int64(pos)})
	}
	return out, probs, nil
}

// readTimeIndex reads a .timeindex file like readOffsetIndex.
func readTimeIndex(path string, base int64) ([]tixEntry, []problem, error) {
	b, n, probs, err := readIndexFile(path, index.TimeEntrySize)
	if err != nil {
		return nil, nil, err
	}
	out := make([]tixEntry, 0, n)
	for i := 0; i < n; i++ {
		ts := int64(binary.BigEndian.Uint64(b[i*12:]))
		rel := int32(binary.BigEndian.Uint32(b[i*12+8:]))
		if i > 0 && ts == 0 && rel == 0 {
			probs = append(probs, zeroPadProblem(path, base, i, n, index.TimeEntrySize))
			break
		}
		out = append(out, tixEntry{slot: i, ts: ts, off: base + int64(rel)})
	}
	return out, probs, nil
}

// indexCheck verifies a segment's offset and time index against its log as
// the log is scanned (batch by batch, in order), without keeping the batches.
//
// Offset index entry (O, P): P must be the start of a batch B, and O must lie
// inside B or be the last offset of a later batch before the next entry's
// position (older Kafka followers indexed a multi-batch append by the last
// offset of the chunk and the position of its first batch).
//
// Time index entry (T, O): O must not be below the segment base nor past the
// last offset of the log, and T must not exceed the largest batch timestamp
// up to the batch holding O (the entry says "no record after O has a
// timestamp <= T", so T was seen at or before O).
type indexCheck struct {
	base     int64
	ixPath   string
	tixPath  string
	ix       []ixEntry // ordered by position
	tix      []tixEntry
	next     int      // next ix entry by position
	open     *ixEntry // matched to a batch start, offset beyond that batch
	tnext    int
	maxTs    int64
	lastOff  int64
	problems []problem
}

func newIndexCheck(base int64, ixPath string, ix []ixEntry, tixPath string, tix []tixEntry) *indexCheck {
	c := &indexCheck{base: base, ixPath: ixPath, tixPath: tixPath, tix: tix, maxTs: -1, lastOff: -1}
	// Slot order must be position and offset order.
	for i := 1; i < len(ix); i++ {
		if ix[i].off <= ix[i-1].off || ix[i].pos <= ix[i-1].pos {
			c.add(ixPath, int64(ix[i].slot*8), ix[i].off, kindIndexOrder, fmt.Sprintf(
				"entry %d (offset %d, position %d) does not follow entry %d (offset %d, position %d)",
				ix[i].slot, ix[i].off, ix[i].pos, ix[i-1].slot, ix[i-1].off, ix[i-1].pos))
		}
	}
	c.ix = append([]ixEntry(nil), ix...)
	sort.SliceStable(c.ix, func(i, j int) bool { return c.ix[i].pos < c.ix[j].pos })
	for i := 1; i < len(tix); i++ {
		if tix[i].ts < tix[i-1].ts || tix[i].off < tix[i-1].off {
			c.add(tixPath, int64(tix[i].slot*12), tix[i].off, kindIndexOrder, fmt.Sprintf(
				"entry %d (timestamp %d, offset %d) goes back from entry %d (timestamp %d, offset %d)",
				tix[i].slot, tix[i].ts, tix[i].off, tix[i-1].slot, tix[i-1].ts, tix[i-1].off))
		}
	}
	for _, e := range tix {
		if e.off < base {
			c.add(tixPath, int64(e.slot*12), e.off, kindIndexOffset, fmt.Sprintf("entry %d: offset %d is below the segment base %d", e.slot, e.off, base))
		}
	}
	return c
}

func (c *indexCheck) add(file string, pos, off int64, kind, msg string) {
	c.problems = append(c.problems, problem{file: file, pos: pos, offset: off, kind: kind, message: msg})
}

func (c *indexCheck) ixProblem(e *ixEntry, kind, msg string) {
	c.add(c.ixPath, int64(e.slot*index.OffsetEntrySize), e.off, kind,
		fmt.Sprintf("entry %d (offset %d, position %d): %s", e.slot, e.off, e.pos, msg))
}

// closeOpen settles the entry waiting for a later batch's last offset.
func (c *indexCheck) closeOpen(reason string) {
	if c.open != nil {
		c.ixProblem(c.open, kindIndexOffset, reason)
		c.open = nil
	}
}

// batch feeds the next batch of the log: its position, first and last
// offsets (base may be a lower bound for legacy wrappers) and max timestamp.
func (c *indexCheck) batch(pos, base, last, maxTs int64) {
	if c.open != nil && c.next < len(c.ix) && c.ix[c.next].pos <= pos {
		// This batch starts the next entry's chunk, not the open one's.
		c.closeOpen(fmt.Sprintf("no batch before the next entry's position %d ends at this offset", c.ix[c.next].pos))
	}
	if c.open != nil {
		switch {
		case last == c.open.off:
			c.open = nil
		case last > c.open.off:
			c.closeOpen(fmt.Sprintf("offset lies inside the batch at position %d (offsets %d..%d), not at the end of a batch of the chunk indexed at its position", pos, base, last))
		}
	}
	for c.next < len(c.ix) && c.ix[c.next].pos <= pos {
		e := &c.ix[c.next]
		c.next++
		if c.open != nil {
			c.closeOpen(fmt.Sprintf("no batch up to the next entry's position %d ends at this offset", e.pos))
		}
		if e.pos < pos {
			c.ixProblem(e, kindIndexPosition, "position is not the start of a batch")
			continue
		}
		switch {
		case e.off < base:
			c.ixProblem(e, kindIndexOffset, fmt.Sprintf("offset is below the batch at this position (offsets %d..%d)", base, last))
		case e.off > last:
			cp := *e
			c.open = &cp
		}
	}
	if maxTs > c.maxTs {
		c.maxTs = maxTs
	}
	for c.tnext < len(c.tix) && c.tix[c.tnext].off <= last {
		e := c.tix[c.tnext]
		c.tnext++
		if e.off >= c.base && e.ts > c.maxTs {
			c.add(c.tixPath, int64(e.slot*index.TimeEntrySize), e.off, kindIndexTimestamp, fmt.Sprintf(
				"entry %d (timestamp %d, offset %d): no batch up to offset %d has a timestamp that large (max %d)",
				e.slot, e.ts, e.off, last, c.maxTs))
		}
	}
	c.lastOff = last
}

// finish ends the check where the log's valid entries end (validEnd bytes,
// after the last batch fed) and returns the problems found.
func (c *indexCheck) finish(validEnd int64) []problem {
	c.closeOpen(fmt.Sprintf("no batch ends at this offset (the log's last offset is %d)", c.lastOff))
	for ; c.next < len(c.ix); c.next++ {
		e := &c.ix[c.next]
		if e.pos >= validEnd {
			c.ixProblem(e, kindIndexPastEnd, fmt.Sprintf("position is at or past the end of the valid log (%d bytes)", validEnd))
		} else {
			c.ixProblem(e, kindIndexPosition, "position is not the start of a batch")
		}
	}
	for ; c.tnext < len(c.tix); c.tnext++ {
		e := c.tix[c.tnext]
		c.add(c.tixPath, int64(e.slot*index.TimeEntrySize), e.off, kindIndexPastEnd, fmt.Sprintf(
			"entry %d (timestamp %d, offset %d): offset is past the last offset of the log (%d)", e.slot, e.ts, e.off, c.lastOff))
	}
	return c.problems
}

// readIndexFile reads an index file and cuts it to whole entries of size es,
// reporting a length that is not a multiple as a problem. n is the entry count.
func readIndexFile(path string, es int) (b []byte, n int, probs []problem, err error) {
	if b, err = os.ReadFile(path); err != nil {
		return nil, 0, nil, err
	}
	if r := len(b) % es; r != 0 {
		probs = append(probs, problem{file: path, pos: int64(len(b) - r), offset: -1, kind: kindIndexFile,
			message: fmt.Sprintf("file length %d is not a multiple of %d", len(b), es)})
		b = b[:len(b)-r]
	}
	return b, len(b) / es, probs, nil
}

// zeroPadProblem reports the zero-filled slots from entry i of n on.
func zeroPadProblem(path string, base int64, i, n, es int) problem {
	return problem{file: path, pos: int64(i * es), offset: base, kind: kindIndexZeroPad,
		message: fmt.Sprintf("%d zero-filled slots from entry %d on (index not trimmed after a crash?)", n-i, i)}
}
