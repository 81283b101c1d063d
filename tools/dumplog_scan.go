package tools

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/stratalog/strata/record"
)

// problem is one finding about stored data: where, what kind, in words.
// offset is -1 when unknown.
type problem struct {
	file    string
	pos     int64
	offset  int64
	kind    string
	message string
}

// Problem kinds (the "kind" field of JSON problem lines).
const (
	kindTornEntry       = "torn_entry"        // the file ends inside an entry
	kindZeroedTail      = "zeroed_tail"       // the file ends in zero bytes where an entry should be
	kindCorruptEntry    = "corrupt_entry"     // an entry header that cannot be framed (size, magic)
	kindCRC             = "crc_mismatch"      // stored CRC differs from the data
	kindBadRecords      = "bad_records"       // records inside a batch do not decode
	kindOffsetOrder     = "offset_order"      // offsets not strictly increasing
	kindOffsetBelowBase = "offset_below_base" // a batch below its segment's base offset
	kindIndexMissing    = "index_missing"
	kindIndexFile       = "index_file" // unreadable index, bad length
	kindIndexZeroPad    = "index_zero_padding"
	kindIndexOrder      = "index_order"    // entries out of order
	kindIndexPosition   = "index_position" // position is not a batch start
	kindIndexOffset     = "index_offset"   // offset does not match the batch at its position
	kindIndexPastEnd    = "index_past_end"
	kindIndexTimestamp  = "index_timestamp"
	kindCheckpoint      = "checkpoint"
	kindLeftover        = "leftover_file"
	kindSnapshot        = "snapshot"
	kindTxnIndex        = "txn_index"
	kindWindowEnd       = "window_end" // not a problem: the scan window ends inside an entry
)

// entryInfo is what a scan learns of one log entry.
type entryInfo struct {
	pos    int64
	size   int64 // on disk, overhead included
	magic  int8
	base   int64 // first offset (legacy wrappers: the entry offset, see legacyBase)
	last   int64
	maxTs  int64
	valid  bool // CRC (and v2 header sanity) checks out
	err    error
	entry  []byte // aliases the scanner's buffer until the next entry
	legacy bool
}

// logScan walks the entries of a .log file between [start, end) with large
// reads. Framing stops it (a torn, zeroed or unframable tail); a bad CRC does
// not: the entry is passed with valid false and the scan goes on.
type logScan struct {
	f       *os.File
	file    string
	size    int64 // file size
	end     int64
	sc      record.FileScanner
	e       entryInfo
	stop    *problem // why the scan stopped early, nil at a clean end
	maxSize int64
}

// scanReadSize is the FileScanner read size: large sequential reads keep a
// page-cached scan close to memory bandwidth.
const scanReadSize = 1 << 20

func (s *logScan) reset(f *os.File, file string, size, start, end, maxEntry int64) {
	s.f, s.file, s.size, s.end, s.stop, s.maxSize = f, file, size, end, nil, maxEntry
	s.sc.Reset(f, start, end, record.ScanOptions{ReadSize: scanReadSize, MaxEntrySize: maxEntry})
}

// next advances; false at the end or when framing stops the scan (see stop).
func (s *logScan) next() bool {
	if !s.sc.Next() {
		if err := s.sc.Err(); err != nil {
			s.stop = s.classify(err)
		}
		return false
	}
	e, h := s.sc.Entry(), s.sc.Header()
	s.e = entryInfo{pos: s.sc.Pos(), size: int64(len(e)), magic: h.Magic, base: h.Offset, last: h.LastOffset, maxTs: h.MaxTimestamp, entry: e}
	if h.Magic == 2 {
		s.e.err = record.Batch(e).Validate(s.e.pos)
	} else {
		s.e.legacy = true
		s.e.err = record.ValidateLegacy(e, s.e.pos)
	}
	s.e.valid = s.e.err == nil
	return true
}

// classify turns the error that stopped a scan into a problem. An I/O error
// is returned as a problem of kind "io" and makes the caller fail.
func (s *logScan) classify(err error) *problem {
	pos := s.sc.Pos()
	off := int64(-1)
	var ce *record.CorruptionError
	if errors.As(err, &ce) {
		pos, off = ce.Pos, ce.Offset
	}
	if !record.IsCorruption(err) {
		return &problem{file: s.file, pos: pos, offset: off, kind: "io", message: err.Error()}
	}
	if s.end < s.size && errors.Is(err, record.ErrTruncated) {
		// The entry crosses the end of the window asked for (--max-bytes).
		return &problem{file: s.file, pos: pos, offset: off, kind: kindWindowEnd}
	}
	left := s.size - pos
	if z, zerr := allZero(s.f, pos, pos+left); zerr == nil && z && left > 0 {
		return &problem{file: s.file, pos: pos, offset: -1, kind: kindZeroedTail,
			message: fmt.Sprintf("%d zero bytes at the end where an entry should be "+
				"(after a crash: a preallocated segment's unwritten reserve, log.preallocate, or unsynced data; recovery cuts it)", left)}
	}
	if errors.Is(err, record.ErrTruncated) {
		what := "body"
		if left < record.HeaderSizeUpToMagic {
			what = "header"
		}
		return &problem{file: s.file, pos: pos, offset: off, kind: kindTornEntry,
			message: fmt.Sprintf("torn entry %s: the file ends %d bytes after the entry starts (%v)", what, left, detail(err))}
	}
	return &problem{file: s.file, pos: pos, offset: off, kind: kindCorruptEntry,
		message: fmt.Sprintf("%v; %d bytes from here to the end of the file are not valid entries", detail(err), left)}
}

// detail is a corruption's description without its position (printed apart).
func detail(err error) string {
	var ce *record.CorruptionError
	if errors.As(err, &ce) {
		if ce.Detail != "" {
			return fmt.Sprintf("%v: %s", ce.Err, ce.Detail)
		}
		return ce.Err.Error()
	}
	return err.Error()
}

// allZero reports whether f holds only zero bytes in [from, to).
func allZero(f io.ReaderAt, from, to int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for p := from; p < to; {
		n := int64(len(buf))
		if to-p < n {
			n = to - p
		}
		m, err := f.ReadAt(buf[:n], p)
		for _, c := range buf[:m] {
			if c != 0 {
				return false, nil
			}
		}
		p += int64(m)
		if err != nil {
			if err == io.EOF {
				return true, nil
			}
			return false, err
		}
	}
	return true, nil
}
