package record

import (
	"encoding/binary"
	"fmt"
	"io"
)

// DefaultScanChunk is how much a FileScanner reads at a time.
const DefaultScanChunk = 1 << 20

// FileScanner reads consecutive log entries from an io.ReaderAt between
// [start, end) with large sequential reads into one reusable buffer, grown to
// fit the largest entry. It has the same Next/Entry/Header/Pos/Err API as
// Iterator; Entry aliases the buffer and is valid until the next Next.
//
// A file that ends inside an entry (or before end) stops the scan with an
// error wrapping ErrTruncated; I/O errors are returned wrapped but not marked
// as corruption.
type FileScanner struct {
	r      io.ReaderAt
	end    int64
	opts   ScanOptions
	buf    []byte
	bufPos int64 // file position of buf[0]
	lo, hi int   // unread data is buf[lo:hi]
	entry  []byte
	hdr    EntryHeader
	pos    int64
	err    error
}

// NewFileScanner returns a scanner of r from start up to end (pass the file
// size, or math.MaxInt64 to read until EOF).
func NewFileScanner(r io.ReaderAt, start, end int64, opts ScanOptions) *FileScanner {
	s := new(FileScanner)
	s.Reset(r, start, end, opts)
	return s
}

// Reset restarts the scanner, keeping its buffer.
func (s *FileScanner) Reset(r io.ReaderAt, start, end int64, opts ScanOptions) {
	chunk := opts.ReadSize
	if chunk <= 0 {
		chunk = DefaultScanChunk
	}
	if rem := end - start; rem >= 0 && rem < int64(chunk) {
		// A short range (a small segment) needs no big buffer; it grows if an
		// entry claims more.
		chunk = max(int(rem), HeaderSizeUpToMagic)
	}
	buf := s.buf
	if len(buf) < chunk {
		buf = make([]byte, chunk)
	}
	*s = FileScanner{r: r, end: end, opts: opts, buf: buf, bufPos: start, pos: start}
}

// fill makes at least n bytes available at buf[lo:], reporting how many it
// got when the data (or end) stops first.
func (s *FileScanner) fill(n int) (int, error) {
	if s.hi-s.lo >= n {
		return s.hi - s.lo, nil
	}
	if s.lo > 0 {
		copy(s.buf, s.buf[s.lo:s.hi])
		s.hi -= s.lo
		s.bufPos += int64(s.lo)
		s.lo = 0
	}
	for s.hi < n {
		if s.hi == len(s.buf) {
			nb := make([]byte, min(2*len(s.buf), n+len(s.buf)))
			copy(nb, s.buf[:s.hi])
			s.buf = nb
		}
		fpos := s.bufPos + int64(s.hi)
		want := int64(len(s.buf) - s.hi)
		if left := s.end - fpos; left < want {
			want = left
		}
		if want <= 0 {
			return s.hi, nil
		}
		m, err := s.r.ReadAt(s.buf[s.hi:s.hi+int(want)], fpos)
		s.hi += m
		if err == io.EOF {
			if m < int(want) {
				s.end = fpos + int64(m)
			}
			continue
		}
		if err != nil {
			return s.hi, fmt.Errorf("record: read at %d: %w", fpos, err)
		}
		if m == 0 {
			return s.hi, fmt.Errorf("record: read at %d: %w", fpos, io.ErrNoProgress)
		}
	}
	return s.hi, nil
}

// Next advances to the next entry, returning false at the end or on error.
func (s *FileScanner) Next() bool {
	if s.err != nil {
		return false
	}
	s.lo += len(s.entry)
	s.pos += int64(len(s.entry))
	s.entry = nil
	have, err := s.fill(HeaderSizeUpToMagic)
	if err != nil {
		s.err = err
		return false
	}
	if have == 0 {
		return false
	}
	if have < HeaderSizeUpToMagic {
		s.err = Corrupt(ErrTruncated, s.pos, -1, "%d bytes left, entry header needs %d", have, HeaderSizeUpToMagic)
		return false
	}
	total, err := frameSize(s.buf[s.lo:s.hi], s.pos, s.opts.maxEntry())
	if err != nil {
		s.err = err
		return false
	}
	if s.end-s.pos < total {
		// Cheap early answer when the end is known: no need to read it all.
		s.err = Corrupt(ErrTruncated, s.pos, int64(binary.BigEndian.Uint64(s.buf[s.lo:])), "entry of %d bytes, %d left", total, s.end-s.pos)
		return false
	}
	if have, err = s.fill(int(total)); err != nil {
		s.err = err
		return false
	}
	if int64(have) < total {
		s.err = Corrupt(ErrTruncated, s.pos, int64(binary.BigEndian.Uint64(s.buf[s.lo:])), "entry of %d bytes, %d left", total, have)
		return false
	}
	e := s.buf[s.lo : s.lo+int(total) : s.lo+int(total)]
	if s.hdr, s.err = checkEntry(e, s.pos, s.opts.VerifyCRC); s.err != nil {
		return false
	}
	s.entry = e
	return true
}

// Entry is the current entry, log overhead included. It aliases the
// scanner's buffer until the next call to Next.
func (s *FileScanner) Entry() []byte { return s.entry }

// Batch is Entry as a v2 batch (check Header().Magic first).
func (s *FileScanner) Batch() Batch { return Batch(s.entry) }

// Header is the current entry's header.
func (s *FileScanner) Header() EntryHeader { return s.hdr }

// Pos is the file position of the current entry, or after an error or the
// end, the position where scanning stopped (where a valid prefix ends).
func (s *FileScanner) Pos() int64 { return s.pos }

// Err is the error that stopped the scan, nil at a clean end.
func (s *FileScanner) Err() error { return s.err }
