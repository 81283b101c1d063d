package index

import (
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

func oe(rel, pos int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(rel))
	return binary.BigEndian.AppendUint32(b, uint32(pos))
}

func te(ts int64, rel int32) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(ts))
	return binary.BigEndian.AppendUint32(b, uint32(rel))
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func wantCorrupt(t *testing.T, err error, contains string) {
	t.Helper()
	var ce *CorruptionError
	if !errors.Is(err, ErrCorruptIndex) || !IsCorruption(err) || !errors.As(err, &ce) {
		t.Fatalf("want a marked corruption error, got %v", err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not mention %q", err, contains)
	}
}

func TestBadOffsetIndexFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		path := join(dir, "00000000000000000100.index")
		for _, writable := range []bool{false, true} {
			writeAll(t, fs, path, cat(oe(1, 10), []byte{0, 0, 0}))
			_, err := OpenOffsetIndex(fs, path, 100, 1<<10, writable)
			wantCorrupt(t, err, "not a multiple of the 8-byte entry size")
		}
		cases := []struct {
			name    string
			file    []byte
			logSize int64
			want    string
			entry   int
		}{
			{"zero padded tail", cat(oe(3, 100), oe(9, 5000), oe(0, 0), oe(0, 0)), 1 << 20, "zero-padded", 2},
			{"all zero", cat(oe(0, 0), oe(0, 0)), 1 << 20, "zero-padded", 1},
			{"offsets not increasing", cat(oe(3, 100), oe(3, 200)), 1 << 20, "offset not larger", 1},
			{"offsets decreasing", cat(oe(3, 100), oe(9, 200), oe(5, 300)), 1 << 20, "offset not larger", 2},
			{"positions not increasing", cat(oe(3, 100), oe(4, 100)), 1 << 20, "position not larger", 1},
			{"position past log end", cat(oe(3, 100), oe(4, 5000)), 5000, "past the log end", 1},
			{"offset below base", cat(oe(-1, 100)), 1 << 20, "below the base offset", 0},
			{"negative position", cat(oe(1, -5)), 1 << 20, "negative position", 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				writeAll(t, fs, path, c.file)
				ix := mustOffset(t, fs, path, 100, 0, false)
				defer ix.Close()
				err := ix.Check(c.logSize)
				wantCorrupt(t, err, c.want)
				var ce *CorruptionError
				errors.As(err, &ce)
				if ce.Entry != c.entry || ce.FilePos != int64(c.entry)*8 || ce.Path != path {
					t.Fatalf("error locates entry %d at %d in %s, want entry %d", ce.Entry, ce.FilePos, ce.Path, c.entry)
				}
				// Lookups on a corrupt index never panic.
				for _, q := range []int64{-1, 0, 100, 103, 109, 1 << 40} {
					ix.Lookup(q)
				}
				for _, p := range []int32{-1, 0, 100, 5000} {
					ix.LookupPosition(p)
				}
			})
		}
		// Kafka's SanityCheck: weak (zero padding passes), but catches last < base.
		writeAll(t, fs, path, cat(oe(3, 100), oe(0, 0)))
		ix := mustOffset(t, fs, path, 100, 0, false)
		if err := ix.SanityCheck(); err != nil {
			t.Fatalf("Kafka's sanity check passes a zero-padded index, got %v", err)
		}
		_ = ix.Close()
		writeAll(t, fs, path, cat(oe(3, 100), oe(-2, 200)))
		ix = mustOffset(t, fs, path, 100, 0, false)
		wantCorrupt(t, ix.SanityCheck(), "below the base offset")
		_ = ix.Close()
	})
}

func TestBadTimeIndexFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		path := join(dir, "00000000000000000100.timeindex")
		writeAll(t, fs, path, cat(te(5, 1), make([]byte, 11)))
		_, err := OpenTimeIndex(fs, path, 100, 1<<10, true)
		wantCorrupt(t, err, "not a multiple of the 12-byte entry size")
		cases := []struct {
			name   string
			file   []byte
			logEnd int64
			want   string
			entry  int
		}{
			{"zero padded tail", cat(te(1000, 3), te(2000, 9), te(0, 0)), 1 << 20, "zero-padded", 2},
			{"timestamps not increasing", cat(te(1000, 3), te(1000, 4)), 1 << 20, "timestamp not larger", 1},
			{"timestamps decreasing", cat(te(1000, 3), te(900, 4)), 1 << 20, "timestamp not larger", 1},
			{"offsets decreasing", cat(te(1000, 5), te(2000, 4)), 1 << 20, "offset smaller", 1},
			{"offset past log end", cat(te(1000, 5), te(2000, 10)), 110, "past the log end", 1},
			{"offset below base", cat(te(1000, -3)), 1 << 20, "below the base offset", 0},
			{"negative timestamp", cat(te(-7, 3)), 1 << 20, "negative timestamp", 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				writeAll(t, fs, path, c.file)
				ix := mustTime(t, fs, path, 100, 0, false)
				defer ix.Close()
				err := ix.Check(c.logEnd)
				wantCorrupt(t, err, c.want)
				var ce *CorruptionError
				errors.As(err, &ce)
				if ce.Entry != c.entry || ce.FilePos != int64(c.entry)*12 {
					t.Fatalf("error locates entry %d at %d, want entry %d", ce.Entry, ce.FilePos, c.entry)
				}
				for _, q := range []int64{-1, 0, 999, 1000, 1 << 40} {
					ix.Lookup(q)
				}
			})
		}
		writeAll(t, fs, path, cat(te(1000, 3), te(500, 4)))
		ix := mustTime(t, fs, path, 100, 0, false)
		wantCorrupt(t, ix.SanityCheck(), "below the first timestamp")
		_ = ix.Close()
		writeAll(t, fs, path, cat(te(1000, 3), te(1500, -4)))
		ix = mustTime(t, fs, path, 100, 0, false)
		wantCorrupt(t, ix.SanityCheck(), "below the base offset")
		_ = ix.Close()
	})
}

// TestShortFile: a file whose reads end before its reported size is an error at
// open, not a panic.
func TestShortFile(t *testing.T) {
	fs := shortFS{vfs.NewMem()}
	writeAll(t, fs.FS, "/x.index", cat(oe(1, 1), oe(2, 2)))
	if _, err := OpenOffsetIndex(fs, "/x.index", 0, 0, false); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Fatalf("short read: %v", err)
	}
}

// shortFS returns files whose ReadAt stops half way.
type shortFS struct{ vfs.FS }

func (s shortFS) Open(name string) (vfs.File, error) {
	f, err := s.FS.Open(name)
	return shortFile{f}, err
}

type shortFile struct{ vfs.File }

func (f shortFile) ReadAt(p []byte, off int64) (int, error) {
	fi, _ := f.Stat()
	half := fi.Size() / 2
	if off >= half {
		return 0, io.EOF
	}
	if int64(len(p)) > half-off {
		p = p[:half-off]
	}
	n, _ := f.File.ReadAt(p, off)
	return n, nil
}
