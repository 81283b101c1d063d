package segment

import (
	"errors"
	"fmt"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/record"
)

// AppendInfo describes what an append stored.
type AppendInfo struct {
	FirstOffset  int64 // base offset of the first batch
	LastOffset   int64 // last offset of the last batch
	MaxTimestamp int64 // largest batch max timestamp, -1 when none
	Batches      int
	Bytes        int
	// Duplicate: the batch was a producer's retry of a batch already in
	// the log; nothing was appended, and the offsets are the original's.
	Duplicate bool
}

// Append stores buf, one or more whole v2 record batches, assigning offsets: each
// batch's base offset is patched in place (it is not covered by the CRC) to
// continue the log. The caller (the broker) has validated CRCs and records;
// Append checks the framing. buf is written as it is, without copying.
func (l *Log) Append(buf []byte) (AppendInfo, error) { return l.append(buf, true) }

// AppendAssigned stores batches whose offsets are already assigned (a replica's
// fetch, or a copy of another log): the first batch must start at or after the log
// end offset and offsets must increase.
func (l *Log) AppendAssigned(buf []byte) (AppendInfo, error) { return l.append(buf, false) }

func (l *Log) append(buf []byte, assign bool) (AppendInfo, error) {
	info, flush, err := l.appendLocked(buf, assign)
	if err != nil || !flush {
		return info, err
	}
	l.hook("appended")
	// flush.messages: fsync outside the writer's lock, so appends from other
	// producers go on meanwhile and concurrent flushes share one fdatasync
	// (FlushTo's group commit). This append returns only once its own data
	// is durable; only then does the high watermark cover it.
	end := info.LastOffset + 1
	if err := l.FlushTo(end); err != nil {
		return info, err
	}
	l.hook("flushed")
	// Up to the recovery point only: a truncation since the append may have
	// removed its records, and appends made after it may be waiting for
	// their own fsync at the same offsets.
	l.hwMu.Lock()
	l.raiseHighWatermark(min(end, l.flushed.Load()))
	l.hwMu.Unlock()
	return info, nil
}

// appendLocked appends under the writer's lock; flush reports that the
// append must wait for an fsync up to its end before it returns: it reached
// flush.messages, or an earlier append waits for one (the high watermark
// cannot pass that append's records before their fsync).
func (l *Log) appendLocked(buf []byte, assign bool) (info AppendInfo, flush bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return AppendInfo{}, false, ErrClosed
	}
	if err := l.health.Err(); err != nil {
		return AppendInfo{}, false, err
	}
	info, err = l.checkAppend(buf, assign)
	if err != nil || info.Duplicate {
		l.pbatches = l.pbatches[:0]
		return info, false, err
	}
	act := l.active()
	if act.shouldRoll(int64(len(buf)), info.LastOffset, info.MaxTimestamp, l.o.Now) {
		base := info.FirstOffset
		if n := l.next.Load(); n > base {
			base = n
		}
		if act, err = l.roll(base); err != nil {
			return AppendInfo{}, false, err
		}
	}
	if err := act.append(buf); err != nil {
		if errors.Is(err, errNotUndone) || errors.Is(err, errMappedFault) || errors.Is(err, index.ErrMappedWrite) {
			err = l.fail(err)
		}
		l.pbatches = l.pbatches[:0]
		return AppendInfo{}, false, err
	}
	perr := l.applyProducers(act)
	next := info.LastOffset + 1
	l.next.Store(next)
	flushed := l.flushed.Load()
	flush = next-flushed >= l.o.FlushMessages || l.awaitFlush.Load() > flushed
	if flush {
		l.awaitFlush.Store(next)
	} else {
		l.raiseHighWatermark(next)
	}
	return info, flush, perr
}

// checkAppend walks the batches of buf, checking framing and offsets and, when
// assign is set, patching base offsets.
func (l *Log) checkAppend(buf []byte, assign bool) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, MaxTimestamp: -1, Bytes: len(buf)}
	if len(buf) == 0 {
		return info, fmt.Errorf("%w: no batches", ErrBadAppend)
	}
	if int64(len(buf)) > l.o.SegmentBytes {
		return info, fmt.Errorf("%w: %d bytes, segment.bytes is %d", ErrTooLarge, len(buf), l.o.SegmentBytes)
	}
	off := l.next.Load()
	for p := 0; p < len(buf); {
		h, err := record.ParseEntryHeader(buf[p:], int64(p))
		if err != nil {
			return info, fmt.Errorf("%w: %w", ErrBadAppend, err)
		}
		total := h.TotalSize()
		if total > int64(len(buf)-p) {
			return info, fmt.Errorf("%w: batch at byte %d declares %d bytes, %d remain", ErrBadAppend, p, total, len(buf)-p)
		}
		if h.Magic != 2 {
			return info, fmt.Errorf("%w: batch at byte %d has magic %d; only v2 batches are appended", ErrBadAppend, p, h.Magic)
		}
		delta := h.LastOffset - h.Offset
		if delta < 0 {
			return info, fmt.Errorf("%w: batch at byte %d has last offset delta %d", ErrBadAppend, p, delta)
		}
		if assign {
			record.Batch(buf[p:]).SetBaseOffset(off)
			h.Offset, h.LastOffset = off, off+delta
		} else if h.Offset < off {
			return info, fmt.Errorf("%w: batch at byte %d starts at offset %d, expected %d or more", ErrOffsetMismatch, p, h.Offset, off)
		}
		l.collectProducer(record.Batch(buf[p : p+int(total)]))
		if info.FirstOffset < 0 {
			info.FirstOffset = h.Offset
		}
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp = h.MaxTimestamp
		}
		info.LastOffset = h.LastOffset
		info.Batches++
		off = h.LastOffset + 1
		p += int(total)
	}
	if assign {
		return info, l.checkProducers(&info)
	}
	return info, nil
}

// roll starts a new active segment at base and seals the old one (writer lock
// held). The new segment is created first: if that fails, what it created is
// removed and the old segment stays active (the log is unchanged); if the
// removal or the seal fails, the log goes offline. The directory sync that
// makes the new names durable, and then the flush of the sealed segments
// (Kafka flushes them in the background too, which moves the recovery point
// to the new base), run after the writer lock is released.
func (l *Log) roll(base int64) (*Segment, error) {
	old := l.active()
	if old.size.Load() == 0 && old.base == base {
		return old, nil
	}
	seg, err := createSegment(l.fs, l.dir, base, l.o)
	if err != nil {
		if errors.Is(err, errNotUndone) {
			return nil, l.fail(err)
		}
		return nil, err
	}
	if err := old.seal(); err != nil {
		seg.closeFiles()
		return nil, l.fail(err)
	}
	l.dirChanged()
	l.publish(append(append([]*Segment(nil), l.segs.Load().segs...), seg))
	if err := l.writeSnapshot(base, false); err != nil {
		// The roll is made; the append that asked for it is refused.
		return nil, l.fail(err)
	}
	l.afterDirSync(func() {
		if err := l.FlushTo(base); err != nil && !errors.Is(err, ErrOffline) {
			l.o.Logger.Error("flush after roll failed", "dir", l.dir, "err", err)
		}
	})
	return seg, nil
}

// Roll forces a new active segment at the log end offset.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.health.Err(); err != nil {
		return err
	}
	_, err := l.roll(l.next.Load())
	return err
}

func (l *Log) publish(segs []*Segment) { l.segs.Store(&segList{segs: segs}) }
