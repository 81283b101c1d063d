package segment

import (
	"fmt"

	"github.com/stratalog/strata/record"
)

// AppendInfo describes what an append stored.
type AppendInfo struct {
	FirstOffset  int64 // base offset of the first batch
	LastOffset   int64 // last offset of the last batch
	MaxTimestamp int64 // largest batch max timestamp, -1 when none
	Batches      int
	Bytes        int
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
	// flush.messages: fsync outside the writer's lock, so appends from other
	// producers go on meanwhile and concurrent flushes share one fdatasync
	// (FlushTo's group commit). This append returns only once its own data
	// is durable; only then does the high watermark cover it.
	if err := l.FlushTo(info.LastOffset + 1); err != nil {
		return info, err
	}
	l.raiseHighWatermark(info.LastOffset + 1)
	return info, nil
}

// appendLocked appends under the writer's lock; flush reports that
// flush.messages asks for an fsync up to the append's end.
func (l *Log) appendLocked(buf []byte, assign bool) (info AppendInfo, flush bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return AppendInfo{}, false, ErrClosed
	}
	info, err = l.checkAppend(buf, assign)
	if err != nil {
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
		return AppendInfo{}, false, err
	}
	next := info.LastOffset + 1
	l.next.Store(next)
	flush = next-l.flushed.Load() >= l.o.FlushMessages
	if !flush {
		// While a flushing append waits, every later append asks for a
		// flush too (the unflushed count only grows), so this exposes no
		// record whose flush is pending.
		l.raiseHighWatermark(next)
	}
	return info, flush, nil
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
	return info, nil
}

// roll seals the active segment and starts a new one at base (writer lock held).
// Older segments are flushed in the background, as Kafka does, which moves the
// recovery point to the new base.
func (l *Log) roll(base int64) (*Segment, error) {
	old := l.active()
	if old.size.Load() == 0 && old.base == base {
		return old, nil
	}
	if err := old.seal(); err != nil {
		return nil, err
	}
	seg, err := createSegment(l.fs, l.dir, base, l.o)
	if err != nil {
		return nil, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.closeFiles()
		return nil, fmt.Errorf("segment: sync dir %s: %w", l.dir, err)
	}
	l.publish(append(append([]*Segment(nil), l.segs.Load().segs...), seg))
	l.background(func() {
		if err := l.FlushTo(base); err != nil {
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
	_, err := l.roll(l.next.Load())
	return err
}

func (l *Log) publish(segs []*Segment) { l.segs.Store(&segList{segs: segs}) }
