package index

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// backend is one of the two storage paths every conformance test runs over.
type backend struct {
	name   string
	mapped bool
	open   func(t testing.TB) (vfs.FS, string) // filesystem and a directory in it
}

var backends = []backend{
	{"mmap", true, func(t testing.TB) (vfs.FS, string) { return vfs.OS, t.TempDir() }},
	{"mem", false, func(t testing.TB) (vfs.FS, string) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/seg", 0o755); err != nil {
			t.Fatal(err)
		}
		return fs, "/seg"
	}},
}

func forEachBackend(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fs, dir := b.open(t)
			f(t, fs, dir)
		})
	}
}

func join(dir, name string) string { return filepath.Join(dir, name) }

func readAll(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeAll(t testing.TB, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, fs vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func mustOffset(t testing.TB, fs vfs.FS, path string, base int64, maxBytes int, writable bool) *OffsetIndex {
	t.Helper()
	ix, err := OpenOffsetIndex(fs, path, base, maxBytes, writable)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func mustTime(t testing.TB, fs vfs.FS, path string, base int64, maxBytes int, writable bool) *TimeIndex {
	t.Helper()
	ix, err := OpenTimeIndex(fs, path, base, maxBytes, writable)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// offsetRef is the reference model of an offset index: a sorted slice.
type offsetRef struct {
	base int64
	off  []int64
	pos  []int32
}

func (r *offsetRef) lookup(target int64) (int64, int32) {
	for i := len(r.off) - 1; i >= 0; i-- {
		if r.off[i] <= target {
			return r.off[i], r.pos[i]
		}
	}
	return r.base, 0
}

func (r *offsetRef) lookupPos(p int32) (int64, int32, bool) {
	for i := range r.pos {
		if r.pos[i] >= p {
			return r.off[i], r.pos[i], true
		}
	}
	return 0, 0, false
}

func (r *offsetRef) truncateTo(o int64) {
	k := 0
	for k < len(r.off) && r.off[k] < o {
		k++
	}
	r.off, r.pos = r.off[:k], r.pos[:k]
}

// timeRef is the reference model of a time index.
type timeRef struct {
	base int64
	ts   []int64
	off  []int64
}

func (r *timeRef) lookup(target int64) (int64, int64) {
	for i := len(r.ts) - 1; i >= 0; i-- {
		if r.ts[i] <= target {
			return r.ts[i], r.off[i]
		}
	}
	return NoTimestamp, r.base
}

func (r *timeRef) last() (int64, int64) {
	if len(r.ts) == 0 {
		return NoTimestamp, r.base
	}
	return r.ts[len(r.ts)-1], r.off[len(r.off)-1]
}

func (r *timeRef) truncateTo(o int64) {
	k := 0
	for k < len(r.off) && r.off[k] < o {
		k++
	}
	r.ts, r.off = r.ts[:k], r.off[:k]
}
