package index

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// Hand-computed Kafka bytes for a segment with base offset 1000:
// offset index entries (1005, 4120), (1011, 8250), (1020, 12400);
// time index entries (1700000000000, 1005), (1700000000500, 1011).
var (
	goldenIndex = []byte{
		0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x10, 0x18, // rel 5,  pos 4120
		0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x20, 0x3a, // rel 11, pos 8250
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x30, 0x70, // rel 20, pos 12400
	}
	goldenTimeIndex = []byte{
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0x00, 0x00, 0x00, 0x05, // 1700000000000, rel 5
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x69, 0xf4, 0x00, 0x00, 0x00, 0x0b, // 1700000000500, rel 11
	}
)

func TestGoldenBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		ip := join(dir, "00000000000000001000.index")
		tp := join(dir, "00000000000000001000.timeindex")
		ix := mustOffset(t, fs, ip, 1000, 10<<20, true)
		tx := mustTime(t, fs, tp, 1000, 10<<20, true)
		if fileSize(t, fs, ip) != 10<<20 || fileSize(t, fs, tp) != 10<<20-(10<<20)%12 {
			t.Fatal("not preallocated to roundDown(maxBytes, entrySize)")
		}
		if ix.MaxEntries() != 1310720 || tx.MaxEntries() != 873813 {
			t.Fatalf("capacity %d / %d, Kafka has 1310720 / 873813", ix.MaxEntries(), tx.MaxEntries())
		}
		for _, e := range [][2]int64{{1005, 4120}, {1011, 8250}, {1020, 12400}} {
			if err := ix.Append(e[0], int32(e[1])); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range [][2]int64{{1700000000000, 1005}, {1700000000500, 1011}} {
			if err := tx.Append(e[0], e[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, fs, ip); !bytes.Equal(got, goldenIndex) {
			t.Fatalf(".index\n got % x\nwant % x", got, goldenIndex)
		}
		if got := readAll(t, fs, tp); !bytes.Equal(got, goldenTimeIndex) {
			t.Fatalf(".timeindex\n got % x\nwant % x", got, goldenTimeIndex)
		}

		// And the other way round: files written by Kafka load and answer lookups.
		writeAll(t, fs, ip, goldenIndex)
		writeAll(t, fs, tp, goldenTimeIndex)
		ro := mustOffset(t, fs, ip, 1000, 0, false)
		if err := ro.Check(12401); err != nil {
			t.Fatal(err)
		}
		if err := ro.Check(12400); !errors.Is(err, ErrCorruptIndex) {
			t.Fatalf("position at log end passed: %v", err)
		}
		if off, pos := ro.Lookup(1015); off != 1011 || pos != 8250 {
			t.Fatalf("lookup = (%d, %d)", off, pos)
		}
		if off, pos, ok := ro.LookupPosition(8251); !ok || off != 1020 || pos != 12400 {
			t.Fatalf("position lookup = (%d, %d, %v)", off, pos, ok)
		}
		rt := mustTime(t, fs, tp, 1000, 0, false)
		if err := rt.Check(1012); err != nil {
			t.Fatal(err)
		}
		if ts, off := rt.Lookup(1700000000499); ts != 1700000000000 || off != 1005 {
			t.Fatalf("time lookup = (%d, %d)", ts, off)
		}
		_ = ro.Close()
		_ = rt.Close()
	})
}
