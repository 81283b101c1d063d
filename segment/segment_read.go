package segment

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// headerReader reads entry headers from a segment file in chunks, so walking from
// an index entry to a target offset costs about one read per index interval
// instead of one per batch.
type headerReader struct {
	buf      [8192]byte
	start    int64 // file position of buf[0]
	n        int   // valid bytes in buf
	fileSize int64
}

var headerReaders = sync.Pool{New: func() any { return new(headerReader) }}

// header returns the entry header at pos, or io.EOF when pos is at the end.
func (r *headerReader) header(f vfs.File, pos int64) (record.EntryHeader, error) {
	if pos >= r.fileSize {
		return record.EntryHeader{}, io.EOF
	}
	need := int64(record.EntryHeaderSize)
	if rem := r.fileSize - pos; rem < need {
		need = rem
	}
	if pos < r.start || pos+need > r.start+int64(r.n) {
		want := int64(len(r.buf))
		if rem := r.fileSize - pos; rem < want {
			want = rem
		}
		n, err := f.ReadAt(r.buf[:want], pos)
		if int64(n) < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return record.EntryHeader{}, fmt.Errorf("segment: read %s at %d: %w", f.Name(), pos, err)
		}
		r.start, r.n = pos, n
	}
	off := pos - r.start
	h, err := record.ParseEntryHeader(r.buf[off:r.n], pos)
	if err != nil {
		return h, err
	}
	if h.TotalSize() > r.fileSize-pos {
		return h, record.Corrupt(record.ErrTruncated, pos, h.Offset, "entry of %d bytes runs past the end (%d)", h.TotalSize(), r.fileSize)
	}
	return h, nil
}

// find returns the position and header of the first entry whose last offset is
// at least target, looking only below size. ok is false when there is none.
func (s *Segment) find(target, size int64) (pos int64, h record.EntryHeader, ok bool, err error) {
	_, p := s.offIdx.Lookup(target)
	pos = int64(p)
	if pos > size {
		pos = 0 // an index entry past the published size is not ours to trust
	}
	r := headerReaders.Get().(*headerReader)
	defer headerReaders.Put(r)
	r.fileSize, r.n = size, 0
	for {
		h, err = r.header(s.log, pos)
		if err == io.EOF {
			return 0, h, false, nil
		}
		if err != nil {
			return 0, h, false, err
		}
		if h.LastOffset >= target {
			return pos, h, true, nil
		}
		pos += h.TotalSize()
	}
}

// Region is a byte range of a segment file holding whole batches from the one
// containing the requested offset (the last may be partial when MaxBytes cut it,
// as in Kafka). The broker sends it with sendfile; others ReadAt it. Release it
// when done: until then the file stays open even if the segment is deleted.
type Region struct {
	File vfs.File
	Pos  int64
	Len  int64
	// FirstOffset is the base offset (v2) of the first entry in the region.
	FirstOffset int64
	seg         *Segment
}

// Release gives the region's file back. Safe to call twice and on empty regions.
func (r *Region) Release() {
	if r.seg != nil {
		r.seg.release()
		r.seg = nil
	}
}

// ReadInto reads the region's bytes into dst (grown as needed) and returns it.
func (r *Region) ReadInto(dst []byte) ([]byte, error) {
	if int64(cap(dst)) < r.Len {
		dst = make([]byte, r.Len)
	}
	dst = dst[:r.Len]
	if r.Len == 0 {
		return dst, nil
	}
	n, err := r.File.ReadAt(dst, r.Pos)
	if int64(n) < r.Len {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return dst[:n], fmt.Errorf("segment: read %s at %d: %w", r.File.Name(), r.Pos, err)
	}
	return dst, nil
}

// read builds the region of this segment starting at the entry holding target,
// at most maxBytes long but always holding the first entry whole, and holding
// no entry at or past end (the reader's log end offset). ok is false when the
// segment has nothing at or after target. The caller holds a reference.
func (s *Segment) read(target, maxBytes, end int64) (Region, bool, error) {
	if target >= s.next.Load() {
		return Region{}, false, nil
	}
	size := s.size.Load()
	// append stores next before size, so this next covers every entry below
	// size. Past end means appends raced the reader after it took end: stop
	// at the first entry they added, or a client told the high watermark end
	// would get offsets beyond it and fetch past the log end.
	if s.next.Load() > end {
		p, _, ok, err := s.find(end, size)
		if err != nil {
			return Region{}, false, err
		}
		if ok {
			size = p
		}
	}
	pos, h, ok, err := s.find(target, size)
	if err != nil || !ok {
		return Region{}, ok, err
	}
	n := size - pos
	if n > maxBytes {
		n = maxBytes
	}
	if n < h.TotalSize() {
		n = h.TotalSize()
	}
	return Region{File: s.log, Pos: pos, Len: n, FirstOffset: h.Offset}, true, nil
}
