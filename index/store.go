package index

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"

	"github.com/stratalog/strata/internal/vfs"
)

// store is the part of an index both kinds share: the file, the entry bytes readers
// see (a memory mapping, or an in-memory copy for files without a descriptor), the
// published entry count and the file-size bookkeeping of the single writer.
//
// Publication: the writer fills slot i completely, stores the buffer pointer (if it
// had to grow the in-memory copy), then stores n = i+1. A reader loads n first, then
// the buffer, so every slot below n is complete in the buffer it sees.
type store struct {
	fs       vfs.FS
	f        vfs.File
	path     string
	es       int64 // entry size in bytes
	writable bool
	mm       mmap.MMap                    // the mapping (mmap backend); nil for the fallback
	mapCheck func(off int64, n int) error // the file's vfs.MapWriteChecker (injected files), or nil
	mapLen   int64                        // length of the mapping; 0 for the fallback (no limit)
	buf      atomic.Pointer[[]byte]
	n        atomic.Int64 // published entries
	maxN     atomic.Int64 // capacity in entries
	fileSize int64        // current file length; writer-owned
	closed   atomic.Bool
	emptyBuf []byte
}

func roundDown(v, m int64) int64 { return v - v%m }

// openStore opens or creates the file and sets up the backend. See OpenOffsetIndex
// for the rules.
func openStore(fs vfs.FS, path string, es int64, maxBytes int, writable bool) (*store, error) {
	s := &store{fs: fs, path: path, es: es, writable: writable}
	maxLen := roundDown(int64(maxBytes), es)
	var (
		f       vfs.File
		err     error
		created bool
	)
	if writable {
		if maxLen < es {
			return nil, fmt.Errorf("%w: %s: max size %d is smaller than one %d-byte entry", ErrInvalidSize, path, maxBytes, es)
		}
		if _, serr := fs.Stat(path); errors.Is(serr, os.ErrNotExist) {
			created = true
		} else if serr != nil {
			// Guessing "exists" would skip the preallocation the mapping relies on.
			return nil, fmt.Errorf("index: stat %s: %w", path, serr)
		}
		f, err = fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	} else {
		f, err = fs.Open(path)
	}
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	s.f = f
	fail := func(err error) (*store, error) {
		if s.mm != nil {
			_ = s.mm.Unmap()
		}
		_ = f.Close()
		return nil, err
	}
	if created {
		// Preallocate like Kafka (sparse on most filesystems); a new index has no
		// entries.
		if err := f.Truncate(maxLen); err != nil {
			return fail(fmt.Errorf("index: preallocate %s: %w", path, err))
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("index: stat %s: %w", path, err))
	}
	size := fi.Size()
	if size%es != 0 {
		return fail(corruptFile(path, size, fmt.Sprintf("file length %d is not a multiple of the %d-byte entry size", size, es)))
	}
	s.fileSize = size
	length := size
	if writable && maxLen > length {
		length = maxLen
	}
	s.maxN.Store(length / es)
	if osf, ok := vfs.AsOSFile(f); ok && length > 0 && int64(int(length)) == length {
		prot := mmap.RDONLY
		if writable {
			prot = mmap.RDWR
		}
		// The mapping may be longer than the file (mmap beyond EOF is allowed); only
		// slots below n are read and they always lie inside the file.
		m, err := mmap.MapRegion(osf, int(length), prot, 0, 0)
		if err != nil {
			return fail(fmt.Errorf("index: mmap %s: %w", path, err))
		}
		s.mm = m
		s.mapLen = length
		s.mapCheck = vfs.MapWriteCheckFunc(f)
		b := []byte(m)
		s.buf.Store(&b)
	} else {
		var b []byte
		if !created {
			b = make([]byte, size)
			if err := readFull(f, b); err != nil {
				return fail(fmt.Errorf("index: read %s: %w", path, err))
			}
		}
		s.buf.Store(&b)
	}
	if !created {
		// An existing file is trusted up to its length, as Kafka does: no checksum,
		// no end marker. Check finds zero padding and disorder.
		s.n.Store(size / es)
	}
	return s, nil
}

func readFull(f vfs.File, b []byte) error {
	for off := 0; off < len(b); {
		k, err := f.ReadAt(b[off:], int64(off))
		off += k
		if off == len(b) {
			return nil
		}
		if err == io.EOF || (err == nil && k == 0) {
			return fmt.Errorf("file shorter than its reported size (%d < %d): %w", off, len(b), io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// view returns the published bytes and entry count, clamped to the bytes present.
func (s *store) view() ([]byte, int) {
	n := s.n.Load()
	b := *s.buf.Load()
	if n*s.es > int64(len(b)) {
		n = int64(len(b)) / s.es
	}
	return b, int(n)
}

func (s *store) checkWritable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if !s.writable {
		return ErrReadOnly
	}
	return nil
}

// slot returns the bytes of slot i (= n) for the writer to fill, growing the file
// (after a Trim) and the in-memory copy as needed. The caller has checked i < maxN.
func (s *store) slot(i int64) ([]byte, error) {
	end := (i + 1) * s.es
	if end > s.fileSize {
		full := s.maxN.Load() * s.es
		if err := s.f.Truncate(full); err != nil {
			return nil, fmt.Errorf("index: grow %s: %w", s.path, err)
		}
		s.fileSize = full
	}
	b := *s.buf.Load()
	if end > int64(len(b)) {
		if s.mm != nil {
			return nil, ErrIndexFull // cannot happen: maxN*es <= mapLen
		}
		c := 2 * int64(len(b))
		if min := 64 * s.es; c < min {
			c = min
		}
		if c < end {
			c = end
		}
		nb := make([]byte, c)
		copy(nb, b[:i*s.es])
		s.buf.Store(&nb)
		b = nb
	}
	return b[i*s.es : end], nil
}

// commit writes slot i through to the file (fallback) and publishes it. A
// mapped slot is already written; an injected file is shown the write
// first (vfs.OpMapWrite), and a failed one is not published.
func (s *store) commit(i int64, e []byte) error {
	if s.mm == nil {
		if _, err := s.f.WriteAt(e, i*s.es); err != nil {
			return fmt.Errorf("index: write %s: %w", s.path, err)
		}
	} else if s.mapCheck != nil {
		if err := s.mapCheck(i*s.es, len(e)); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrMappedWrite, s.path, err)
		}
	}
	s.n.Store(i + 1)
	return nil
}

// truncateToOffset drops every entry whose offset (the int32 relative offset at
// byte relOff of each entry, relative to base) is >= offset.
func (s *store) truncateToOffset(offset, base int64, relOff int) error {
	b, n := s.view()
	var k int
	switch {
	case offset <= base:
		k = 0
	case offset-base > math.MaxInt32:
		k = n
	default:
		k = lowerBound32(b, n, int(s.es), relOff, offset-base)
	}
	return s.truncateEntries(int64(k))
}

// truncateEntries keeps the first k entries and overwrites the dropped slots with
// zeros, so a crash before the next Trim cannot resurrect them. The file length and
// the mapping do not change: a reader still holding the old count reads stale or
// zero bytes inside the file, never past its end.
func (s *store) truncateEntries(k int64) error {
	if err := s.checkWritable(); err != nil {
		return err
	}
	n := s.n.Load()
	if k >= n {
		return nil
	}
	if k < 0 {
		k = 0
	}
	s.n.Store(k)
	from, to := k*s.es, n*s.es
	if to > s.fileSize {
		to = s.fileSize
	}
	if from >= to {
		return nil
	}
	if s.mm != nil {
		clear(s.mm[from:to])
		return nil
	}
	if _, err := s.f.WriteAt(make([]byte, to-from), from); err != nil {
		return fmt.Errorf("index: truncate %s: %w", s.path, err)
	}
	return nil
}

func (s *store) reset() error {
	if err := s.truncateEntries(0); err != nil {
		return err
	}
	return s.resizeBytes(s.maxN.Load() * s.es)
}

func (s *store) trim() error {
	if err := s.checkWritable(); err != nil {
		return err
	}
	size := s.n.Load() * s.es
	if size == s.fileSize {
		return nil
	}
	if err := s.f.Truncate(size); err != nil {
		return fmt.Errorf("index: trim %s: %w", s.path, err)
	}
	s.fileSize = size
	return nil
}

func (s *store) resize(maxBytes int) error {
	if err := s.checkWritable(); err != nil {
		return err
	}
	return s.resizeBytes(roundDown(int64(maxBytes), s.es))
}

func (s *store) resizeBytes(size int64) error {
	if size < s.n.Load()*s.es || size < s.es {
		return fmt.Errorf("%w: %s: %d bytes cannot hold the %d entries present", ErrInvalidSize, s.path, size, s.n.Load())
	}
	if s.mm != nil && size > s.mapLen {
		return fmt.Errorf("%w: %s: %d bytes exceed the %d bytes mapped at open", ErrInvalidSize, s.path, size, s.mapLen)
	}
	if size != s.fileSize {
		if err := s.f.Truncate(size); err != nil {
			return fmt.Errorf("index: resize %s: %w", s.path, err)
		}
		s.fileSize = size
	}
	s.maxN.Store(size / s.es)
	return nil
}

func (s *store) sync() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if !s.writable {
		return nil
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("index: sync %s: %w", s.path, err)
	}
	return nil
}

func (s *store) close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	var first error
	if s.writable {
		size := s.n.Load() * s.es
		if size != s.fileSize {
			if err := s.f.Truncate(size); err != nil {
				first = fmt.Errorf("index: trim %s: %w", s.path, err)
			}
		}
	}
	s.n.Store(0)
	s.buf.Store(&s.emptyBuf)
	if s.mm != nil {
		if err := s.mm.Unmap(); err != nil && first == nil {
			first = fmt.Errorf("index: munmap %s: %w", s.path, err)
		}
		s.mm = nil
	}
	if err := s.f.Close(); err != nil && first == nil {
		first = fmt.Errorf("index: close %s: %w", s.path, err)
	}
	return first
}

func (s *store) statSize() (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	fi, err := s.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("index: stat %s: %w", s.path, err)
	}
	return fi.Size(), nil
}
