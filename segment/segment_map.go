package segment

import (
	"fmt"
	"os"

	"github.com/stratalog/strata/internal/vfs"
	"golang.org/x/sys/unix"
)

// Mapped appends. A preallocated segment's reserve is already part of the
// file, so a small append can be copied into a shared writable mapping of it
// instead of being written with pwrite: the bytes land in the same page-cache
// pages a write would fill (readers' pread and sendfile see them, fdatasync
// writes them back, a process crash keeps them), without a system call per
// append. Page faults are the cost: the first write to each page faults, so
// a large append is cheaper with one pwrite; appends of Options.MapAppendsBelow
// bytes or more take the pwrite path. A fault the kernel cannot serve (an I/O
// error, a file cut by another process) becomes an error of that append, not a
// crash (debug.SetPanicOnFault).
//
// The mapping covers [mapOff, allocated) of the file, mapOff page-aligned at or
// below the append that created it; it is replaced when an append runs past
// it (after the reserve grew) and unmapped before the file is truncated or
// closed. Only the writer touches it.

// pageSize is the mapping granularity.
var pageSize = int64(os.Getpagesize())

// writeEntries writes buf at pos of the .log file: copied into the mapping
// when the append is small and inside the reserve, else with one pwrite.
func (s *Segment) writeEntries(buf []byte, pos int64) error {
	s.countAppend(len(buf))
	if err := s.zeroAhead(pos + int64(len(buf))); err != nil {
		return err
	}
	if len(buf) < s.mapLimit() && pos+int64(len(buf)) <= s.allocated && !s.mapFailed && s.mapByFlushes {
		if dst := s.mapped(pos, len(buf)); dst != nil {
			if s.mapCheck != nil { // an injected file: its fault point
				if err := s.mapCheck(pos, len(buf)); err != nil {
					return fmt.Errorf("%w: %s at %d: %w", errMappedFault, s.Path(LogSuffix), pos, err)
				}
			}
			copy(dst, buf) // a fault here panics: see faultGuard
			s.mappedAppends++
			return nil
		}
	}
	if _, err := s.log.WriteAt(buf, pos); err != nil {
		return fmt.Errorf("segment: write %s at %d: %w", s.Path(LogSuffix), pos, err)
	}
	return nil
}

// mapFlushedBelow caps the mapped append size while the log is being flushed
// (beingFlushed). Each fdatasync then cleans and write-protects the mapped
// pages, and cleaning a mapped page costs the fdatasync a walk of its page
// tables: with 1095-byte appends and an fdatasync every 100 (27 pages a
// flush) the fdatasync took 1.4 ms against 0.75 ms after pwrites, 57k
// appends/s against 100k/s. A log nobody flushes maps appends up to
// Options.MapAppendsBelow (4 KiB): a fault on a fresh page of the reserve costs
// about 2.5 µs here against 2.5 µs for a pwrite call, so up to 4 KiB the
// mapping never loses, and 1 KiB appends ran at 1.4M/s mapped against 410k/s
// with pwrite.
const mapFlushedBelow = 1024

// mapLimit is the size below which an append is mapped now.
func (s *Segment) mapLimit() int {
	if s.beingFlushed() {
		return min(s.o.MapAppendsBelow, mapFlushedBelow)
	}
	return s.o.MapAppendsBelow
}

// beingFlushed: the writer has seen a flush within the last flushWindow
// appends.
func (s *Segment) beingFlushed() bool {
	return s.seenFlushes > 0 && s.appendsSinceFlush <= flushWindow
}

// mapMinAppendsPerFlush: mapped appends pay off only when many of them come
// between two fsyncs. An fdatasync write-protects the mapped pages it cleans,
// and the next mapped write to the tail page faults again (ext4's page_mkwrite,
// which also makes the following fdatasync commit the journal): with an fsync
// every few appends that costs more than the pwrites it saves (measured: fsync
// every append, 100 B, 2.5k/s mapped against 3.8k/s with pwrite).
const mapMinAppendsPerFlush = 32

// countAppend notes an append and the flushes since the last one: whether
// at least mapMinAppendsPerFlush appends came between the last two flushes
// the writer saw (mapByFlushes, true until a flush is seen), and the appends
// and bytes since the last (zero-filling, segment_zero.go).
func (s *Segment) countAppend(n int) {
	if seq := s.flushes.Load(); seq != s.seenFlushes {
		s.flushIntervalBytes, s.bytesSinceFlush = s.bytesSinceFlush, 0
		s.mapByFlushes = s.appendsSinceFlush >= mapMinAppendsPerFlush && seq == s.seenFlushes+1
		if !s.mapByFlushes {
			s.unmap() // a mapped page costs every fsync a walk to clean it
		}
		s.seenFlushes, s.appendsSinceFlush = seq, 0
	}
	s.appendsSinceFlush++
	s.bytesSinceFlush += int64(n)
}

// mapped returns the n bytes at pos of the mapping, mapping [pos rounded down
// to a page, allocated) first when the current mapping does not hold them. It
// returns nil when the file cannot be mapped (not an OS file, or mmap failed:
// the segment then keeps to pwrite).
func (s *Segment) mapped(pos int64, n int) []byte {
	if s.wmap == nil || pos < s.mapOff || pos+int64(n) > s.mapOff+int64(len(s.wmap)) {
		s.unmap()
		f, ok := vfs.AsOSFile(s.log)
		if !ok {
			s.mapFailed = true
			return nil
		}
		off := pos &^ (pageSize - 1)
		m, err := unix.Mmap(int(f.Fd()), off, int(s.allocated-off), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			s.o.Logger.Warn("cannot map segment for appends; writing with pwrite", "file", s.Path(LogSuffix), "err", err)
			s.mapFailed = true
			return nil
		}
		s.wmap, s.mapOff = m, off
		s.mapCheck = vfs.MapWriteCheckFunc(s.log)
	}
	return s.wmap[pos-s.mapOff : pos-s.mapOff+int64(n)]
}

// unmap drops the append mapping; dirty pages stay in the page cache.
func (s *Segment) unmap() {
	if s.wmap == nil {
		return
	}
	if err := unix.Munmap(s.wmap); err != nil {
		s.o.Logger.Warn("munmap of segment failed", "file", s.Path(LogSuffix), "err", err)
	}
	s.wmap, s.mapOff = nil, 0
}

// faultError turns the value recovered from a panic into the error of the
// write that faulted, when it is a memory fault (debug.SetPanicOnFault: a
// SIGBUS from an I/O error or a file cut behind the writer's back, in the
// append mapping or an index's); anything else panics again.
func faultError(r any, what string) error {
	if _, ok := r.(interface{ Addr() uintptr }); !ok {
		panic(r)
	}
	return fmt.Errorf("%w of %s: %v", errMappedFault, what, r)
}
