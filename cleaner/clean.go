package cleaner

import (
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// passOptions configure one cleaning pass of one log.
type passOptions struct {
	now                int64
	deleteRetentionMs  int64
	minCompactionLagMs int64
	segmentBytes       int64
	indexBytes         int64
	offline            bool  // the last (active) segment is cleanable too
	dryRun             bool  // decide everything, write nothing
	producerExpiryMs   int64 // producer.id.expiration.ms
	throttle           *Throttler
	logger             *slog.Logger
	readSize           int
}

// PassStats says what one cleaning pass did (or, dry, would do).
type PassStats struct {
	FirstDirtyOffset    int64 // where mapping started
	FirstUncleanable    int64 // where mapping had to stop at the latest
	EndOffset           int64 // one past the last mapped offset: the next pass's first dirty offset
	Partial             bool  // the map filled up (or the offset span) before FirstUncleanable
	MapKeys             int   // distinct keys mapped
	SegmentsIn          int   // segments recopied
	SegmentsOut         int   // cleaned segments written (groups)
	BytesMapped         int64 // bytes read while mapping
	BytesIn             int64 // bytes of the recopied segments
	BytesOut            int64 // bytes written
	RecordsIn           int64 // records in the recopied v2 batches
	RecordsOut          int64 // records kept
	TombstonesRemoved   int64
	UnkeyedRemoved      int64
	BatchesCopied       int   // copied byte for byte
	BatchesRebuilt      int   // re-encoded with fewer records or a delete horizon
	BatchesDropped      int   // every record removed
	BatchesKeptEmpty    int   // every record removed but kept empty (see appendEmptyBatch)
	AbortedRemoved      int64 // records of aborted transactions removed
	MarkersStamped      int   // transaction markers given their delete horizon
	MarkersRemoved      int   // transaction markers removed (or emptied) past their horizon
	LegacyEntriesCopied int   // v0/v1 entries, copied unchanged
}

// Dirty describes a log's dirty section for cleaner selection.
type Dirty struct {
	FirstDirty       int64
	FirstUncleanable int64
	CleanBytes       int64 // segments wholly below FirstDirty
	CleanableBytes   int64 // segments from the one holding FirstDirty up to FirstUncleanable
	// FirstDirtyTimestamp is the first batch's timestamp of the earliest
	// dirty segment (for max.compaction.lag.ms), -1 when unknown.
	FirstDirtyTimestamp int64
}

// Ratio is cleanable / (clean + cleanable), 0 when there is nothing.
func (d Dirty) Ratio() float64 {
	if d.CleanableBytes == 0 {
		return 0
	}
	return float64(d.CleanableBytes) / float64(d.CleanBytes+d.CleanableBytes)
}

// dirtySection computes a log's dirty section from its checkpointed first dirty
// offset (reset to the log start when missing or out of range, as Kafka does).
func dirtySection(l *segment.Log, checkpointed int64, now, minLagMs int64, offline bool) Dirty {
	segs := l.Segments()
	start, end := l.LogStartOffset(), l.LogEndOffset()
	d := Dirty{FirstDirty: checkpointed, FirstDirtyTimestamp: -1}
	if d.FirstDirty < start || d.FirstDirty > end {
		d.FirstDirty = start
	}
	// Never past the last stable offset: an open transaction's records
	// may yet be aborted (Kafka's cleanableOffsets).
	d.FirstUncleanable = min(end, l.LastStableOffset())
	last := len(segs)
	if !offline {
		last = len(segs) - 1
		d.FirstUncleanable = min(d.FirstUncleanable, segs[last].Base())
	}
	for i := 0; i < last; i++ {
		s := segs[i]
		if s.NextOffset() <= d.FirstDirty {
			d.CleanBytes += s.Size()
			continue
		}
		if s.Base() >= d.FirstUncleanable {
			break
		}
		if minLagMs > 0 && s.MaxTimestamp() > now-minLagMs {
			d.FirstUncleanable = max(s.Base(), d.FirstDirty)
			break
		}
		if d.FirstDirtyTimestamp < 0 {
			d.FirstDirtyTimestamp = s.FirstBatchTimestamp()
		}
		d.CleanableBytes += s.Size()
	}
	return d
}

// pass is one cleaning pass over one log.
type pass struct {
	l    *segment.Log
	m    *OffsetMap
	o    passOptions
	st   PassStats
	recs []record.Record
	keep []bool
	out  []byte
	rr   record.RecordReader
	sc   record.FileScanner
	// segKept counts the batches written from the segment being recopied.
	segKept int
	// producers is producerLasts' result, built on first use.
	producers map[int64]producerLast
	// tx is the pass's view of the log's transactions.
	tx *txnState
}

// clean runs a pass: map the dirty section, recopy from the log start up to
// the mapped end, group by group, swapping each group in. The caller persists
// EndOffset as the new first dirty offset.
func clean(l *segment.Log, m *OffsetMap, firstDirty int64, o passOptions) (PassStats, error) {
	p := &pass{l: l, m: m, o: o}
	d := dirtySection(l, firstDirty, o.now, o.minCompactionLagMs, o.offline)
	p.st.FirstDirtyOffset, p.st.FirstUncleanable = d.FirstDirty, d.FirstUncleanable
	p.st.EndOffset = d.FirstDirty
	if d.FirstDirty >= d.FirstUncleanable {
		return p.st, ErrNothingToClean
	}
	segs := l.Segments()
	p.tx = newTxnState(l, segs[0].Base())
	if err := p.buildMap(segs, d.FirstDirty, d.FirstUncleanable); err != nil {
		return p.st, err
	}
	if m.Latest() < d.FirstDirty {
		return p.st, ErrNothingToClean
	}
	end := m.Latest() + 1
	p.st.EndOffset = end
	p.st.MapKeys = m.Len()
	// Everything from the log start with base below the mapped end.
	var todo []*segment.Segment
	for _, s := range segs {
		if s.Base() >= end {
			break
		}
		if s.NextOffset() <= l.LogStartOffset() && s != segs[len(segs)-1] {
			continue // wholly below the log start: retention's to delete
		}
		todo = append(todo, s)
	}
	if !o.offline && len(todo) > 0 && todo[len(todo)-1] == segs[len(segs)-1] {
		todo = todo[:len(todo)-1] // never the active segment
	}
	for _, g := range p.groups(todo) {
		if err := p.cleanGroup(g, end, g[len(g)-1] == segs[len(segs)-1]); err != nil {
			return p.st, err
		}
	}
	return p.st, nil
}

// buildMap maps every keyed record of [from, to), stopping early (a partial
// pass) when the map is full or the offset span would pass 2^31.
func (p *pass) buildMap(segs []*segment.Segment, from, to int64) error {
	p.m.Reset(from)
	for _, s := range segs {
		if s.NextOffset() <= from {
			continue
		}
		if s.Base() >= to {
			break
		}
		full, err := p.mapSegment(s, from, to)
		if err != nil || full {
			return err
		}
	}
	return nil
}

func (p *pass) mapSegment(s *segment.Segment, from, to int64) (full bool, err error) {
	if !s.Acquire() {
		return false, fmt.Errorf("%w: %s", ErrAborted, s.Path(segment.LogSuffix))
	}
	defer s.Release()
	var pos int64
	if from > s.Base() {
		_, ip := s.OffsetIndex().Lookup(from)
		pos = int64(ip)
	}
	size := s.Size()
	p.sc.Reset(s.LogFile(), pos, size, record.ScanOptions{ReadSize: p.o.readSize, MaxEntrySize: math.MaxInt32})
	defer func() { p.o.throttle.Observe(size - pos) }()
	for p.sc.Next() {
		h := p.sc.Header()
		p.st.BytesMapped += h.TotalSize()
		if h.LastOffset < from {
			continue
		}
		if h.Offset >= to {
			return true, nil
		}
		if h.LastOffset-p.m.Base() >= MaxOffsetSpan {
			p.st.Partial = true
			return true, nil
		}
		if h.Magic != 2 {
			p.m.SetLatest(h.LastOffset) // legacy entries are copied unchanged
			continue
		}
		b := p.sc.Batch()
		if _, aborted := p.tx.isAbortedData(b); aborted || b.IsControl() {
			// Markers are never compacted by key, and aborted records
			// must not hide the committed values before them.
			p.m.SetLatest(h.LastOffset)
			continue
		}
		if !p.m.Room(int(b.NumRecords())) {
			if p.m.Len() == 0 {
				return false, fmt.Errorf("%w: %d records, room for %d", ErrMapTooSmall, b.NumRecords(), p.m.MaxEntries())
			}
			p.st.Partial = true
			return true, nil
		}
		p.rr.Reset(b, p.sc.Pos())
		for rec, ok := p.rr.Next(); ok; rec, ok = p.rr.Next() {
			if rec.Key == nil || rec.Offset < from {
				continue
			}
			if err := p.m.Put(rec.Key, rec.Offset); err != nil {
				return false, err
			}
		}
		if err := p.rr.Err(); err != nil {
			return false, fmt.Errorf("cleaner: %s: %w", s.Path(segment.LogSuffix), err)
		}
		p.m.SetLatest(h.LastOffset)
	}
	if err := p.sc.Err(); err != nil {
		return false, fmt.Errorf("cleaner: %s: %w", s.Path(segment.LogSuffix), err)
	}
	return false, nil
}

// groups splits consecutive segments into runs whose summed log size fits
// segment.bytes, whose summed index sizes fit segment.index.bytes and whose
// offset span fits an int32 (Kafka's groupSegmentsBySize).
func (p *pass) groups(segs []*segment.Segment) [][]*segment.Segment {
	var out [][]*segment.Segment
	for len(segs) > 0 {
		n := 1
		size := segs[0].Size()
		oi, ti := segs[0].IndexBytes()
		for n < len(segs) {
			s := segs[n]
			o2, t2 := s.IndexBytes()
			if size+s.Size() > p.o.segmentBytes || oi+o2 > p.o.indexBytes || ti+t2 > p.o.indexBytes ||
				s.NextOffset()-1-segs[0].Base() > math.MaxInt32 {
				break
			}
			size += s.Size()
			oi, ti = oi+o2, ti+t2
			n++
		}
		out = append(out, segs[:n])
		segs = segs[n:]
	}
	return out
}

// flushOut hands the buffered output to the cleaned segment.
func (p *pass) flushOut(c *segment.Cleaned) error {
	if len(p.out) == 0 {
		return nil
	}
	p.st.BytesOut += int64(len(p.out))
	p.o.throttle.Observe(int64(len(p.out)))
	var err error
	if c != nil {
		err = c.Append(p.out)
	}
	p.out = p.out[:0]
	return err
}

const outBufferSize = 1 << 20

// cleanGroup recopies one group of segments into one cleaned segment and swaps
// it in. end is the pass's mapped end; active says the group holds the log's
// last segment (offline passes only).
func (p *pass) cleanGroup(g []*segment.Segment, end int64, active bool) (err error) {
	var c *segment.Cleaned
	p.tx.group = p.tx.group[:0]
	if !p.o.dryRun {
		if c, err = p.l.CreateCleaned(g[0].Base()); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				c.Abort()
			}
		}()
	}
	for _, s := range g {
		if !s.Acquire() {
			return fmt.Errorf("%w: %s", ErrAborted, s.Path(segment.LogSuffix))
		}
		err := p.recopy(s, c, end, g[len(g)-1].NextOffset())
		s.Release()
		if err != nil {
			return err
		}
		p.st.SegmentsIn++
	}
	if err := p.flushOut(c); err != nil {
		return err
	}
	p.st.SegmentsOut++
	if p.o.dryRun {
		return nil
	}
	for _, a := range p.tx.group {
		if err := c.AddAbortedTxn(a); err != nil {
			return err
		}
	}
	if err := c.Seal(); err != nil {
		return err
	}
	if err := p.l.ReplaceSegments([]*segment.Cleaned{c}, g, active && p.o.offline); err != nil {
		if errors.Is(err, segment.ErrSegmentsChanged) {
			return fmt.Errorf("%w: %w", ErrAborted, err)
		}
		return err
	}
	return nil
}

// recopy filters one segment into the output.
func (p *pass) recopy(s *segment.Segment, c *segment.Cleaned, end, groupEnd int64) error {
	size := s.Size()
	p.st.BytesIn += size
	p.o.throttle.Observe(size)
	p.segKept = 0
	p.sc.Reset(s.LogFile(), 0, size, record.ScanOptions{VerifyCRC: true, ReadSize: p.o.readSize, MaxEntrySize: math.MaxInt32})
	for p.sc.Next() {
		h := p.sc.Header()
		entry := p.sc.Entry()
		if h.Magic != 2 {
			p.st.LegacyEntriesCopied++
			p.segKept++
			p.out = append(p.out, entry...)
		} else if err := p.filterBatch(record.Batch(entry), end, groupEnd); err != nil {
			return fmt.Errorf("cleaner: %s at byte %d: %w", s.Path(segment.LogSuffix), p.sc.Pos(), err)
		}
		if len(p.out) >= outBufferSize {
			if err := p.flushOut(c); err != nil {
				return err
			}
		}
	}
	if err := p.sc.Err(); err != nil {
		return fmt.Errorf("cleaner: %s: %w", s.Path(segment.LogSuffix), err)
	}
	return nil
}

// filterBatch applies Kafka's retention rule to one v2 batch and appends what
// stays to the output: the batch itself when untouched, a rebuilt batch (same
// base and last offset, producer fields, leader epoch, codec) when records go
// or a delete horizon is set, the bare header of an empty batch when nothing
// stays but the batch must be kept (retainEmpty), nothing otherwise.
func (p *pass) filterBatch(b record.Batch, end, groupEnd int64) error {
	if b.IsControl() {
		return p.filterMarker(b, groupEnd)
	}
	if p.tx.onData(b) {
		return p.dropAborted(b, groupEnd)
	}
	var err error
	p.recs, err = b.Records(p.recs[:0])
	if err != nil {
		return err
	}
	p.st.RecordsIn += int64(len(p.recs))
	horizon, hasHorizon := b.DeleteHorizon()
	p.keep = p.keep[:0]
	kept, needHorizon := 0, false
	for i := range p.recs {
		r := &p.recs[i]
		k := true
		if r.Offset < end {
			switch {
			case r.Key == nil:
				k = false
				p.st.UnkeyedRemoved++
			default:
				if off, ok := p.m.Get(r.Key); ok && r.Offset < off {
					k = false
				} else if r.Value == nil && hasHorizon && p.o.now >= horizon {
					k = false
					p.st.TombstonesRemoved++
				}
			}
		}
		if k {
			kept++
			if r.Value == nil && !hasHorizon {
				needHorizon = true
			}
		}
		p.keep = append(p.keep, k)
	}
	p.st.RecordsOut += int64(kept)
	if kept == len(p.recs) && !needHorizon {
		p.st.BatchesCopied++
		p.segKept++
		p.out = append(p.out, b...)
		return nil
	}
	if kept == 0 {
		retain, err := p.retainEmpty(b, groupEnd)
		if err != nil {
			return err
		}
		if !retain {
			p.st.BatchesDropped++
			return nil
		}
		p.st.BatchesKeptEmpty++
		p.segKept++
		p.out, err = appendEmptyBatch(p.out, b)
		return err
	}
	j := 0
	for i := range p.recs {
		if p.keep[i] {
			p.recs[j] = p.recs[i]
			j++
		}
	}
	opts := b.Options()
	if needHorizon {
		opts.DeleteHorizon = p.o.now + p.o.deleteRetentionMs
	}
	p.st.BatchesRebuilt++
	p.segKept++
	p.out, err = record.AppendBatch(p.out, opts, p.recs[:j])
	return err
}

// dropAborted removes every record of a batch of an aborted transaction,
// keeping the batch empty where retainEmpty says so.
func (p *pass) dropAborted(b record.Batch, groupEnd int64) error {
	n := int64(b.NumRecords())
	p.st.RecordsIn += n
	p.st.AbortedRemoved += n
	retain, err := p.retainEmpty(b, groupEnd)
	if err != nil {
		return err
	}
	if !retain {
		p.st.BatchesDropped++
		return nil
	}
	p.st.BatchesKeptEmpty++
	p.segKept++
	p.out, err = appendEmptyBatch(p.out, b)
	return err
}
