package segment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// This file holds the pieces of the crash-consistency harness (crash_test.go):
// a scripted workload that records what the log promised, and the checker that
// holds a recovered log against those promises.

// errLog is a slog handler that keeps the errors the log reports at Error level:
// the failures of work the caller does not wait for (the flush after a roll runs
// in a background goroutine; removing .deleted files is Kafka's asynchronous
// delete-file task). The harness counts an injected error seen here as surfaced.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (h *errLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *errLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *errLog) WithGroup(string) slog.Handler                { return h }
func (h *errLog) Handle(_ context.Context, r slog.Record) error {
	var err error
	r.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok {
			err = e
			return false
		}
		return true
	})
	if err == nil {
		err = errors.New(r.Message)
	}
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
	return nil
}

// injected returns how many logged errors are injected ones.
func (h *errLog) injected() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.errs {
		if vfs.IsInjected(e) {
			n++
		}
	}
	return n
}

// stepKind is one workload action.
type stepKind uint8

const (
	stAppend stepKind = iota
	stFlush
	stFlushTo
	stRoll
	stDeletePrefix
	stRetention
	stSetStart
	stCleanReopen
	stUncleanReopen
	stTruncate
	stClean
)

var stepNames = [...]string{"append", "flush", "flushTo", "roll", "deletePrefix", "retention", "setLogStart", "cleanReopen", "uncleanReopen",
	"truncate", "clean"}

func (k stepKind) String() string { return stepNames[k] }

type wlStep struct {
	kind  stepKind
	batch []byte  // stAppend: a pristine batch (copied before each run)
	frac  float64 // stFlushTo, stSetStart: where, as a fraction of [start, end]
	n     int     // stDeletePrefix: segments
}

// crashWorkload is a deterministic script of log operations with the options it
// runs under.
type crashWorkload struct {
	name  string
	opts  Options
	steps []wlStep
}

// newFaultWorkload is newCrashWorkload with truncations (TruncateTo) and
// cleaner swaps (a copy of the oldest segments swapped in with
// ReplaceSegments) mixed in, about one step in twenty each.
func newFaultWorkload(name string, seed uint64, nsteps int, opts Options) crashWorkload {
	w := newCrashWorkload(name, seed, nsteps, opts)
	rng := rand.New(rand.NewPCG(seed^0xfa017, seed))
	for i := range w.steps {
		if w.steps[i].kind == stAppend {
			continue
		}
		switch p := rng.IntN(100); {
		case p < 25:
			w.steps[i] = wlStep{kind: stTruncate, frac: 0.5 + rng.Float64()/2}
		case p < 50:
			w.steps[i] = wlStep{kind: stClean, n: 1 + rng.IntN(2)}
		}
	}
	return w
}

// newCrashWorkload builds a script from seed: appends of 1-6 records with values of
// 5-80 bytes under codecs none, gzip and lz4, with flushes, rolls, deletes,
// retention, log start moves and reopens sprinkled in.
func newCrashWorkload(name string, seed uint64, nsteps int, opts Options) crashWorkload {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := crashWorkload{name: name, opts: opts}
	cs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecLZ4}
	ts := int64(1_700_000_000_000)
	for i := 0; i < nsteps; i++ {
		p := rng.IntN(100)
		var s wlStep
		switch {
		case p < 62:
			n := 1 + rng.IntN(6)
			s = wlStep{kind: stAppend, batch: scriptBatch(i, n, ts, cs[rng.IntN(len(cs))], 5+rng.IntN(76))}
			ts += int64(n) + int64(rng.IntN(3)) - 1 // occasionally a timestamp goes back
		case p < 69:
			s = wlStep{kind: stFlush}
		case p < 74:
			s = wlStep{kind: stFlushTo, frac: rng.Float64()}
		case p < 79:
			s = wlStep{kind: stRoll}
		case p < 83:
			s = wlStep{kind: stDeletePrefix, n: 1 + rng.IntN(2)}
		case p < 87:
			s = wlStep{kind: stRetention}
		case p < 91:
			s = wlStep{kind: stSetStart, frac: rng.Float64() / 2}
		case p < 95:
			s = wlStep{kind: stCleanReopen}
		default:
			s = wlStep{kind: stUncleanReopen}
		}
		w.steps = append(w.steps, s)
	}
	return w
}

// scriptBatch is makeBatch for scripts built outside a test.
func scriptBatch(id, n int, ts int64, c record.Codec, valueSize int) []byte {
	opts := record.DefaultBatchOptions()
	opts.Codec = c
	recs := make([]record.Record, n)
	for i := range recs {
		v := fmt.Appendf(nil, "b%d-r%d-", id, i)
		for len(v) < valueSize {
			v = append(v, byte('a'+(id+i+len(v))%26))
		}
		recs[i] = record.Record{Timestamp: ts + int64(i), Key: fmt.Appendf(nil, "k%d", i%3), Value: v}
	}
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		panic(err)
	}
	return b
}

// wlBatch is a batch handed to Append, with the base offset Append gave it.
type wlBatch struct {
	base, last int64
	bytes      []byte
	acked      bool // Append returned nil
}

// wlResult is what a workload run promised before it stopped.
type wlResult struct {
	batches []wlBatch // every batch handed to Append, in order
	// flushed is the highest FlushedOffset read after a successful operation:
	// every acknowledged batch below it (and at or above firstKept) is durable.
	// A truncation sets it back to the recovery point it leaves.
	flushed int64
	// checkpoint is the recovery point a checkpoint file could hold when the run
	// stopped: the live log's FlushedOffset (which an unclean reopen sets back
	// to the stale value it was given), or what the last Open was given while
	// that Open ran.
	checkpoint int64
	// firstKept is the base of the first segment that was never deleted (the first
	// segment of the list as published by the last delete, successful or not).
	firstKept int64
	err       error // the first error a step returned
	errStep   int   // its step index
	log       *Log  // the log open when the run stopped (nil if none)
	logged    *errLog

	// Fault mode (runFaults) only.
	retried    int      // steps that failed and were retried
	offline    bool     // the run stopped because the log went offline
	hw, rp     int64    // high watermark and recovery point when it went offline
	violations []string // invariants broken while the workload ran
}

// run runs the script on fsys under dir, stopping at the first error. Between
// steps it waits for the log's background work (the flush after a roll), so the
// order of filesystem operations, and therefore every crash point, is the same in
// every run.
func (w *crashWorkload) run(fsys vfs.FS, dir string) *wlResult { return w.runMode(fsys, dir, false) }

// runFaults runs the script under injected I/O errors: after a failed step
// the log must be either offline (the run stops there) or as before the step,
// which is then retried once and must succeed. After every step the live log
// is checked: high watermark <= log end, recovery point <= log end, and with
// flush.messages=1 high watermark <= recovery point.
func (w *crashWorkload) runFaults(fsys vfs.FS, dir string) *wlResult {
	return w.runMode(fsys, dir, true)
}

func (w *crashWorkload) runMode(fsys vfs.FS, dir string, faults bool) *wlResult {
	res := &wlResult{logged: &errLog{}, errStep: -1}
	o := w.opts
	o.FS = fsys
	o.Logger = slog.New(res.logged)
	wait := func() {
		if res.log != nil {
			res.log.bg.Wait()
		}
	}
	fail := func(i int, err error) *wlResult {
		wait()
		if res.err == nil {
			res.err, res.errStep = err, i
		}
		return res
	}
	l, err := Open(dir, &o)
	if err != nil && faults {
		res.err, res.errStep = err, -1
		res.retried++
		l, err = Open(dir, &o)
	}
	if err != nil {
		return fail(-1, err)
	}
	res.log = l
	observe := func() {
		res.flushed = max(res.flushed, res.log.FlushedOffset())
		res.checkpoint = res.log.FlushedOffset()
	}
	var opened *Log
	var openHW int64
	check := func(i int) {
		l := res.log
		if l == nil {
			return
		}
		hw, end, rp := l.HighWatermark(), l.LogEndOffset(), l.FlushedOffset()
		// What a (re)open found is not newly acknowledged: a process crash
		// keeps unsynced pages, and the log serves them.
		if l != opened {
			opened, openHW = l, hw
		}
		if hw > end || rp > end || (w.opts.FlushMessages == 1 && hw > max(rp, openHW)) {
			res.violations = append(res.violations, fmt.Sprintf("after step %d (%s): high watermark %d, log end %d, recovery point %d",
				i, w.steps[i].kind, hw, end, rp))
		}
	}
	retriedStep := -1
	for i := 0; i < len(w.steps); i++ {
		s := w.steps[i]
		var err error
		switch s.kind {
		case stAppend:
			b := append([]byte(nil), s.batch...)
			_, err = l.Append(b) // patches b's base offset before anything is written
			rb := record.Batch(b)
			res.batches = append(res.batches, wlBatch{base: rb.BaseOffset(), last: rb.LastOffset(), bytes: b, acked: err == nil})
		case stFlush:
			err = l.Flush()
		case stFlushTo:
			start, end := l.LogStartOffset(), l.LogEndOffset()
			err = l.FlushTo(start + int64(s.frac*float64(end-start)))
		case stRoll:
			err = l.Roll()
		case stDeletePrefix:
			_, err = l.DeletePrefix(s.n)
		case stRetention:
			_, err = l.ApplyRetention()
		case stSetStart:
			start, end := l.LogStartOffset(), l.LogEndOffset()
			err = l.SetLogStartOffset(start + int64(s.frac*float64(end-start)))
		case stTruncate:
			start, end := l.LogStartOffset(), l.LogEndOffset()
			off := start + int64(s.frac*float64(end-start))
			full := off <= l.Segments()[0].Base() || off < start
			err = l.TruncateTo(off)
			// Whether it worked or failed half way, what it was asked to
			// remove is no longer promised: every batch holding an offset
			// at or above off, or every batch when it empties the log.
			cut := off
			for j := range res.batches {
				b := &res.batches[j]
				if b.last >= off || full {
					if b.acked && b.base < cut {
						cut = b.base
					}
					b.acked = false
				}
			}
			if full {
				res.firstKept = max(res.firstKept, off)
			}
			if off < end || full {
				res.flushed = min(res.flushed, cut)
			}
			if err == nil {
				res.flushed = l.FlushedOffset()
				res.firstKept = max(res.firstKept, l.Segments()[0].Base())
			}
		case stClean:
			err = cleanCopy(l, s.n)
		case stCleanReopen:
			start := l.LogStartOffset()
			err = l.Close()
			if err != nil && faults && !errors.Is(err, ErrOffline) {
				// Only closing a file failed: the log was flushed and sealed.
				if res.err == nil {
					res.err, res.errStep = err, i
				}
				err = nil
			}
			if err != nil {
				res.log = nil // closed, whatever Close returned
			} else {
				observe() // Close flushed everything
				res.checkpoint = l.LogEndOffset()
				ro := o
				ro.CleanShutdown, ro.LogStartOffset = true, start
				res.log = nil
				l, err = Open(dir, &ro)
				if err != nil && faults {
					res.err, res.errStep = err, i
					res.retried++
					l, err = Open(dir, &ro)
				}
				res.log = l
			}
		case stUncleanReopen:
			// The process restarts without closing (the page cache survives): the
			// old log is abandoned, the new one rescans from a stale recovery point.
			start, rp := l.LogStartOffset(), l.FlushedOffset()/2
			wait()
			ro := o
			ro.RecoveryPoint, ro.LogStartOffset = rp, start
			res.log, res.checkpoint = nil, rp
			l, err = Open(dir, &ro)
			if err != nil && faults {
				res.err, res.errStep = err, i
				res.retried++
				l, err = Open(dir, &ro)
			}
			res.log = l
		}
		if res.log != nil {
			switch s.kind {
			case stDeletePrefix, stRetention, stSetStart:
				res.firstKept = max(res.firstKept, res.log.Segments()[0].Base())
			}
		}
		if err != nil && faults {
			wait()
			if res.err == nil {
				res.err, res.errStep = err, i
			}
			if errors.Is(err, ErrOffline) || (res.log != nil && res.log.Err() != nil) {
				res.offline = true
				if res.log != nil {
					res.hw, res.rp = res.log.HighWatermark(), res.log.FlushedOffset()
					check(i)
				}
				return res
			}
			// Rolled back: the same step again must work (FailAt fails one
			// operation only).
			if res.log != nil && retriedStep != i {
				retriedStep = i
				res.retried++
				check(i)
				i--
				continue
			}
		}
		if err != nil {
			return fail(i, err)
		}
		wait()
		observe()
		if faults {
			check(i)
		}
	}
	return res
}

// cleanCopy swaps a copy of the n oldest segments (never the active one) in
// for them, as the cleaner does: CreateCleaned, Append, Seal,
// ReplaceSegments; Abort on any error.
func cleanCopy(l *Log, n int) error {
	segs := l.Segments()
	n = min(n, len(segs)-1)
	if n <= 0 {
		return nil
	}
	old := segs[:n]
	c, err := l.CreateCleaned(old[0].Base())
	if err != nil {
		return err
	}
	err = func() error {
		for _, s := range old {
			if !s.Acquire() {
				return ErrSegmentGone
			}
			buf := make([]byte, s.Size())
			_, err := s.LogFile().ReadAt(buf, 0)
			s.Release()
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if err := c.Append(buf); err != nil {
				return err
			}
		}
		if err := c.Seal(); err != nil {
			return err
		}
		return l.ReplaceSegments([]*Cleaned{c}, old, false)
	}()
	if err != nil {
		if aerr := c.Abort(); aerr != nil {
			return errors.Join(err, aerr)
		}
	}
	return err
}

// servedBatch is a batch read back from a log.
type servedBatch struct {
	base, last int64
	bytes      []byte
	seg        int // index of the segment it came from
}

// readLog reads the whole log through Log.Read, segment region by region,
// checking every batch's CRC and that offsets increase.
func readLog(l *Log) ([]servedBatch, error) {
	var out []servedBatch
	start, end := l.LogStartOffset(), l.LogEndOffset()
	segs := l.Segments()
	var buf []byte
	for off := start; off < end; {
		r, err := l.Read(off, 1<<30)
		if err != nil {
			return out, fmt.Errorf("Read(%d): %w", off, err)
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			return out, fmt.Errorf("Read(%d): %w", off, err)
		}
		if r.Len == 0 {
			// Nothing at or after off although off < end: the last segments are
			// empty (their data was never flushed and is lost). checkPromises
			// decides whether that gap is allowed.
			return out, nil
		}
		si := -1
		for i, s := range segs {
			if s.LogFile() == r.File {
				si = i
			}
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true, BasePos: r.Pos})
		next := off
		for it.Next() {
			h := it.Header()
			if h.Magic != 2 {
				return out, fmt.Errorf("batch at %d has magic %d", h.Offset, h.Magic)
			}
			if len(out) > 0 && h.Offset <= out[len(out)-1].last {
				return out, fmt.Errorf("offsets go backwards: batch [%d, %d] after %d", h.Offset, h.LastOffset, out[len(out)-1].last)
			}
			if h.LastOffset >= off { // the region's first batch holds off
				out = append(out, servedBatch{h.Offset, h.LastOffset, append([]byte(nil), it.Entry()...), si})
			}
			next = h.LastOffset + 1
		}
		if err := it.Err(); err != nil {
			return out, fmt.Errorf("region at %d (%d bytes at %d): %w", off, r.Len, r.Pos, err)
		}
		if next <= off {
			return out, fmt.Errorf("no progress at offset %d", off)
		}
		off = next
	}
	return out, nil
}

// checkIndexes holds every segment's indexes against its log: each offset index
// entry names an offset of the batch starting at its position, entries increase,
// the time index is monotonic and within the segment; and every served offset is
// found by a one-byte Read that returns exactly its batch.
func checkIndexes(l *Log, served []servedBatch) error {
	for _, s := range l.Segments() {
		oi, ti := s.OffsetIndex(), s.TimeIndex()
		size, next := s.Size(), s.NextOffset()
		prevOff, prevPos := int64(-1), int32(-1)
		for i := 0; i < oi.Entries(); i++ {
			off, pos, err := oi.Entry(i)
			if err != nil {
				return err
			}
			if off <= prevOff || pos <= prevPos {
				return fmt.Errorf("%s: entry %d (%d at %d) does not follow (%d at %d)", s.Path(IndexSuffix), i, off, pos, prevOff, prevPos)
			}
			prevOff, prevPos = off, pos
			if int64(pos) >= size {
				return fmt.Errorf("%s: entry %d points at %d, the log has %d bytes", s.Path(IndexSuffix), i, pos, size)
			}
			var hb [record.EntryHeaderSize]byte
			n, err := s.LogFile().ReadAt(hb[:], int64(pos))
			if n < len(hb) && !(err == nil || errors.Is(err, io.EOF)) {
				return err
			}
			h, err := record.ParseEntryHeader(hb[:n], int64(pos))
			if err != nil {
				return fmt.Errorf("%s: entry %d (%d at %d): %w", s.Path(IndexSuffix), i, off, pos, err)
			}
			if off < h.Offset || off > h.LastOffset {
				return fmt.Errorf("%s: entry %d names offset %d, the batch at %d holds [%d, %d]", s.Path(IndexSuffix), i, off, pos, h.Offset, h.LastOffset)
			}
		}
		prevTs, prevTo := int64(-1<<63), int64(-1)
		for i := 0; i < ti.Entries(); i++ {
			ts, to, err := ti.Entry(i)
			if err != nil {
				return err
			}
			if ts < prevTs || to < prevTo {
				return fmt.Errorf("%s: entry %d (%d, %d) after (%d, %d)", s.Path(TimeIndexSuffix), i, ts, to, prevTs, prevTo)
			}
			if to < s.Base() || to >= max(next, s.Base()+1) {
				return fmt.Errorf("%s: entry %d names offset %d outside [%d, %d)", s.Path(TimeIndexSuffix), i, to, s.Base(), next)
			}
			prevTs, prevTo = ts, to
		}
	}
	for _, b := range served {
		for o := b.base; o <= b.last; o++ {
			r, err := l.Read(o, 1)
			if err != nil {
				return fmt.Errorf("lookup %d: %w", o, err)
			}
			got, err := r.ReadInto(nil)
			r.Release()
			if err != nil {
				return fmt.Errorf("lookup %d: %w", o, err)
			}
			if !bytes.Equal(got, b.bytes) {
				return fmt.Errorf("lookup %d: got %d bytes at %d (first offset %d), want the batch [%d, %d]", o, len(got), r.Pos, r.FirstOffset, b.base, b.last)
			}
		}
	}
	return nil
}

// checkPromises holds the batches a recovered log serves against what the
// workload did before it stopped. The invariant:
//
//  1. Every served batch is byte-identical to a batch the workload handed to
//     Append, with the offsets Append gave it (acknowledged or not: a failed
//     append may have reached the disk). Offsets strictly increase.
//  2. Served batches are contiguous (each starts at the previous last offset + 1)
//     except across a gap that lies wholly at or above the flushed offset, or
//     wholly below firstKept, and only between two segments. Power loss keeps
//     the unsynced pages of each file independently, so a newer segment's
//     unsynced data may survive while an older segment's is lost; recovery
//     checks each segment alone, as Kafka's does. And a deleted segment
//     whose rename was not durable comes back (the log start goes back, as
//     in Kafka), possibly with its own unflushed tail lost.
//  3. Every acknowledged batch in [firstKept, flushed) is served, byte-identical.
//  4. LogStartOffset is the first segment's base; LogEndOffset is one past the
//     last served batch, or the last segment's base when that is higher (the
//     last segments are empty: their unflushed data was lost while their
//     files survived; the gap below that base obeys rule 2).
func checkPromises(l *Log, served []servedBatch, w *wlResult) error {
	byBase := map[int64][]*wlBatch{}
	for i := range w.batches {
		b := &w.batches[i]
		byBase[b.base] = append(byBase[b.base], b)
	}
	for i, sb := range served {
		ok := false
		for _, b := range byBase[sb.base] {
			ok = ok || bytes.Equal(b.bytes, sb.bytes)
		}
		if !ok {
			return fmt.Errorf("served batch [%d, %d] (segment %d) was never appended with these bytes", sb.base, sb.last, sb.seg)
		}
		if i == 0 {
			continue
		}
		prev := served[i-1]
		if sb.base == prev.last+1 {
			continue
		}
		lo, hi := prev.last+1, sb.base
		if sb.seg == prev.seg {
			return fmt.Errorf("gap [%d, %d) inside segment %d", lo, hi, sb.seg)
		}
		if lo < w.flushed && hi > w.firstKept {
			return fmt.Errorf("gap [%d, %d) between segments overlaps the flushed range [%d, %d)", lo, hi, w.firstKept, w.flushed)
		}
	}
	idx := map[int64]int{}
	for i, sb := range served {
		idx[sb.base] = i
	}
	for _, b := range w.batches {
		if !b.acked || b.base < w.firstKept || b.last >= w.flushed {
			continue
		}
		i, ok := idx[b.base]
		if !ok {
			return fmt.Errorf("flushed batch [%d, %d] lost (flushed offset %d, first kept %d)", b.base, b.last, w.flushed, w.firstKept)
		}
		if !bytes.Equal(served[i].bytes, b.bytes) {
			return fmt.Errorf("flushed batch [%d, %d] differs", b.base, b.last)
		}
	}
	segs := l.Segments()
	if got, want := l.LogStartOffset(), segs[0].Base(); got != want {
		return fmt.Errorf("log start offset %d, first segment base %d", got, want)
	}
	if len(served) > 0 && served[0].base < l.LogStartOffset() {
		return fmt.Errorf("served batch %d below the log start %d", served[0].base, l.LogStartOffset())
	}
	wantEnd := segs[len(segs)-1].Base()
	if len(served) > 0 {
		wantEnd = max(wantEnd, served[len(served)-1].last+1)
	}
	if got := l.LogEndOffset(); got != wantEnd {
		return fmt.Errorf("log end offset %d, want %d", got, wantEnd)
	}
	if len(served) > 0 && wantEnd > served[len(served)-1].last+1 {
		// Empty segments at the end: their base is above the data.
		lo, hi := served[len(served)-1].last+1, wantEnd
		if lo < w.flushed && hi > w.firstKept {
			return fmt.Errorf("gap [%d, %d) before the empty last segment overlaps the flushed range [%d, %d)", lo, hi, w.firstKept, w.flushed)
		}
	}
	return nil
}

// sameServed compares two reads of a log.
func sameServed(a, b []servedBatch) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d batches, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].base != b[i].base || !bytes.Equal(a[i].bytes, b[i].bytes) {
			return fmt.Errorf("batch %d: [%d, %d] then [%d, %d] (or bytes differ)", i, a[i].base, a[i].last, b[i].base, b[i].last)
		}
	}
	return nil
}

// checkRecovered opens dir on fsys as after a crash (recovery point rp, no
// clean-shutdown marker, no log-start checkpoint) and checks everything: the
// promises, CRCs and offsets of everything served, indexes and lookups, that a
// second full recovery changes nothing, that an open trusting the recovered
// segments (recovery point at the end) finds their indexes good, and that the
// log takes new appends.
func checkRecovered(fsys vfs.FS, dir string, opts Options, rp int64, w *wlResult) error {
	o := opts
	o.FS, o.Logger = fsys, quiet
	o.RecoveryPoint, o.CleanShutdown, o.LogStartOffset = rp, false, 0
	l, err := Open(dir, &o)
	if err != nil {
		return fmt.Errorf("open (recovery point %d): %w", rp, err)
	}
	served, err := readLog(l)
	if err == nil {
		err = checkPromises(l, served, w)
	}
	if err == nil {
		err = checkIndexes(l, served)
	}
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("recovery point %d: %w", rp, err)
	}

	o.RecoveryPoint = 0
	l, rep, err := OpenWithReport(dir, &o)
	if err != nil {
		return fmt.Errorf("second recovery: %w", err)
	}
	if rep.BytesTruncated != 0 || rep.SegmentsRemoved != 0 || rep.IndexesRebuilt != 0 || len(rep.TempFilesRemoved) != 0 || len(rep.SwapsCompleted) != 0 {
		return fmt.Errorf("second recovery changed the log: %+v", *rep)
	}
	again, err := readLog(l)
	if err != nil {
		return fmt.Errorf("second recovery: %w", err)
	}
	if err := sameServed(served, again); err != nil {
		return fmt.Errorf("second recovery reads differently: %w", err)
	}
	if l.LogStartOffset() != start || l.LogEndOffset() != end {
		return fmt.Errorf("second recovery: [%d, %d), first [%d, %d)", l.LogStartOffset(), l.LogEndOffset(), start, end)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("close after the second recovery: %w", err)
	}

	// A third open trusts everything below the active segment, as after a flush
	// checkpointed the recovery point at the end: the indexes recovery wrote must
	// pass the load-time checks.
	o.RecoveryPoint = end
	l, rep, err = OpenWithReport(dir, &o)
	if err != nil {
		return fmt.Errorf("open trusting the recovered segments: %w", err)
	}
	defer l.Close()
	if rep.IndexesRebuilt != 0 || rep.BytesTruncated != 0 {
		return fmt.Errorf("open trusting the recovered segments rebuilt %d indexes, cut %d bytes: %v",
			rep.IndexesRebuilt, rep.BytesTruncated, rep.Truncations)
	}
	nb := append([]byte(nil), tailBatch...)
	info, err := l.Append(nb)
	if err != nil {
		return fmt.Errorf("append after recovery: %w", err)
	}
	if info.FirstOffset != end {
		return fmt.Errorf("append after recovery got offset %d, log end was %d", info.FirstOffset, end)
	}
	r, err := l.Read(end, 1<<20)
	if err != nil {
		return fmt.Errorf("read back after recovery: %w", err)
	}
	got, err := r.ReadInto(nil)
	r.Release()
	if err != nil || !bytes.Equal(got, nb) {
		return fmt.Errorf("read back after recovery: %d bytes, err %v", len(got), err)
	}
	return nil
}

var tailBatch = scriptBatch(9999, 2, 1_800_000_000_000, record.CodecNone, 20)
