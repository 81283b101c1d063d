package record

import (
	"encoding/binary"
	"math"
)

// DefaultMaxEntrySize bounds an entry's size when ScanOptions.MaxEntrySize is
// 0: the largest size field there is.
const DefaultMaxEntrySize = math.MaxInt32

// ScanOptions configure an Iterator or a FileScanner.
type ScanOptions struct {
	// VerifyCRC checks every entry's CRC (CRC-32C for v2, CRC-32 IEEE for
	// v0/v1) and, for v2, that its length, count and last offset delta are
	// sane (Batch.Validate). Without it only framing and magic are checked.
	VerifyCRC bool
	// MaxEntrySize rejects as corruption an entry whose size field plus the
	// 12-byte overhead exceeds it; 0 means DefaultMaxEntrySize.
	MaxEntrySize int64
	// ReadSize is how much a FileScanner reads at a time; 0 means
	// DefaultScanChunk.
	ReadSize int
	// BasePos is the file position of the Iterator's first byte, added to
	// Pos and error positions. FileScanner ignores it (it knows positions).
	BasePos int64
}

func (o *ScanOptions) maxEntry() int64 {
	if o.MaxEntrySize <= 0 {
		return DefaultMaxEntrySize
	}
	return o.MaxEntrySize
}

// frameSize checks an entry's first HeaderSizeUpToMagic bytes and returns
// its total size: the size field must be at least the v0 minimum, the magic
// known and the total within max.
func frameSize(h []byte, pos int64, max int64) (int64, error) {
	off := int64(binary.BigEndian.Uint64(h))
	size := int32(binary.BigEndian.Uint32(h[posLength:]))
	if size < MinLegacySize {
		return 0, Corrupt(ErrBadSize, pos, off, "size field %d is below the minimum %d", size, MinLegacySize)
	}
	if m := int8(h[posMagic]); m < 0 || m > 2 {
		return 0, Corrupt(ErrBadMagic, pos, off, "magic %d", m)
	}
	total := int64(size) + LogOverhead
	if total > max {
		return 0, Corrupt(ErrBadSize, pos, off, "entry of %d bytes exceeds the maximum %d", total, max)
	}
	return total, nil
}

// checkEntry parses a whole entry and, when verify is set, validates it.
func checkEntry(e []byte, pos int64, verify bool) (EntryHeader, error) {
	h, err := ParseEntryHeader(e, pos)
	if err != nil || !verify {
		return h, err
	}
	if h.Magic == 2 {
		return h, Batch(e).Validate(pos)
	}
	return h, ValidateLegacy(e, pos)
}

// Iterator walks consecutive log entries held in memory without copying.
// Use it as a value:
//
//	it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
//	for it.Next() { use(it.Entry(), it.Header()) }
//	if err := it.Err(); err != nil { ... }
//
// A partial trailing entry ends iteration with an error wrapping ErrTruncated
// (a torn tail); framing violations end it with a corruption error naming the
// position and offset. Neither ever panics.
type Iterator struct {
	b     []byte
	p     int
	opts  ScanOptions
	entry []byte
	hdr   EntryHeader
	err   error
}

// NewIterator returns an Iterator over b.
func NewIterator(b []byte, opts ScanOptions) Iterator {
	return Iterator{b: b, opts: opts}
}

// Reset restarts the Iterator over b.
func (it *Iterator) Reset(b []byte, opts ScanOptions) {
	*it = Iterator{b: b, opts: opts}
}

// Next advances to the next entry, returning false at the end or on error.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	rem := it.b[it.p:]
	if len(rem) == 0 {
		it.entry = nil
		return false
	}
	pos := it.opts.BasePos + int64(it.p)
	if len(rem) < HeaderSizeUpToMagic {
		it.err = Corrupt(ErrTruncated, pos, -1, "%d bytes left, entry header needs %d", len(rem), HeaderSizeUpToMagic)
		return false
	}
	total, err := frameSize(rem, pos, it.opts.maxEntry())
	if err != nil {
		it.err = err
		return false
	}
	if total > int64(len(rem)) {
		it.err = Corrupt(ErrTruncated, pos, int64(binary.BigEndian.Uint64(rem)), "entry of %d bytes, %d left", total, len(rem))
		return false
	}
	e := rem[:total:total]
	if it.hdr, it.err = checkEntry(e, pos, it.opts.VerifyCRC); it.err != nil {
		return false
	}
	it.entry = e
	it.p += int(total)
	return true
}

// Entry is the current entry, log overhead included; it aliases the input.
func (it *Iterator) Entry() []byte { return it.entry }

// Batch is Entry as a v2 batch (check Header().Magic first).
func (it *Iterator) Batch() Batch { return Batch(it.entry) }

// Header is the current entry's header.
func (it *Iterator) Header() EntryHeader { return it.hdr }

// Pos is the position of the current entry (BasePos + index in the input).
func (it *Iterator) Pos() int64 { return it.opts.BasePos + int64(it.p) - int64(len(it.entry)) }

// NextPos is the position after the current entry, or where an error stopped.
func (it *Iterator) NextPos() int64 { return it.opts.BasePos + int64(it.p) }

// Err is the error that stopped iteration, nil at a clean end.
func (it *Iterator) Err() error { return it.err }
