package segment

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/record"
)

// A preallocated log that is being flushed zero-fills its reserve ahead of
// the writer, never over data: the file matches a plain log's byte for byte
// up to the logical end and reads zero beyond it. A log that is not flushed
// does not zero-fill.
func TestZeroFillAhead(t *testing.T) {
	for _, flushEvery := range []int{0, 1, 10} {
		dir, plainDir := t.TempDir(), t.TempDir()
		l, err := Open(dir, &Options{Preallocate: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := Open(plainDir, &Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			b := makeBatch(t, i, 1, int64(1000+i), record.CodecNone, (i*37)%1500)
			if _, err := l.Append(bytes.Clone(b)); err != nil {
				t.Fatal(err)
			}
			if _, err := plain.Append(b); err != nil {
				t.Fatal(err)
			}
			if flushEvery > 0 && i%flushEvery == 0 {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := l.Segments()[0]
		switch {
		case flushEvery == 0 && s.zeroed != 0:
			t.Errorf("never flushed: zero-filled to %d", s.zeroed)
		case flushEvery > 0 && s.zeroed < s.Size()+minZeroFill/2:
			t.Errorf("flush every %d: zero-filled to %d, size %d: want at least half a fill ahead", flushEvery, s.zeroed, s.Size())
		}
		name := FilePath("", 0, LogSuffix)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(plainDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("flush every %d: data differs from the plain log's", flushEvery)
		}
		if tail := got[len(want):]; !bytes.Equal(tail, make([]byte, len(tail))) {
			t.Fatalf("flush every %d: non-zero bytes after the data", flushEvery)
		}
		for _, c := range []*Log{l, plain} {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
