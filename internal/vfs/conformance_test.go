package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// forEachFS runs f over every FS implementation, rooted at dir.
func forEachFS(t *testing.T, f func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Run("OS", func(t *testing.T) { f(t, vfs.OS, t.TempDir()) })
	t.Run("Mem", func(t *testing.T) {
		m := vfs.NewMem()
		if err := m.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		f(t, m, "/data")
	})
	t.Run("InjectMem", func(t *testing.T) {
		m := vfs.NewMem()
		if err := m.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		f(t, vfs.Inject(m, vfs.NewCounter()), "/data")
	})
	t.Run("InjectOS", func(t *testing.T) { f(t, vfs.Inject(vfs.OS, vfs.NewCounter()), t.TempDir()) })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	must(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	must(t, err)
	return b
}

func writeFile(t *testing.T, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	must(t, err)
	_, err = f.Write(data)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

func TestConformanceReadWrite(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		f, err := fsys.Create(name)
		must(t, err)
		if f.Name() != name {
			t.Fatalf("Name = %q", f.Name())
		}
		n, err := f.Write([]byte("hello "))
		if n != 6 || err != nil {
			t.Fatal(n, err)
		}
		_, err = f.Write([]byte("world"))
		must(t, err)
		// WriteAt does not move the offset.
		_, err = f.WriteAt([]byte("W"), 6)
		must(t, err)
		_, err = f.Write([]byte("!"))
		must(t, err)
		// Write past the end leaves a hole of zeros.
		_, err = f.WriteAt([]byte("x"), 15)
		must(t, err)
		must(t, f.Sync())
		fi, err := f.Stat()
		must(t, err)
		if fi.Size() != 16 || fi.Name() != "a" || fi.IsDir() {
			t.Fatalf("stat: %d %q %v", fi.Size(), fi.Name(), fi.IsDir())
		}
		// Read from the current offset (12: WriteAt did not move it), then at the end.
		buf := make([]byte, 8)
		if n, err := f.Read(buf); n != 4 || err != nil || string(buf[:4]) != "\x00\x00\x00x" {
			t.Fatalf("read at 12: %d %v %q", n, err, buf[:n])
		}
		buf = buf[:4]
		if n, err := f.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("read at end: %d %v", n, err)
		}
		pos, err := f.Seek(0, io.SeekStart)
		must(t, err)
		if pos != 0 {
			t.Fatal(pos)
		}
		all, err := io.ReadAll(f)
		must(t, err)
		want := []byte("hello World!\x00\x00\x00x")
		if !bytes.Equal(all, want) {
			t.Fatalf("content %q, want %q", all, want)
		}
		// ReadAt: full, short with io.EOF, past end io.EOF.
		if n, err := f.ReadAt(buf, 0); n != 4 || err != nil || string(buf) != "hell" {
			t.Fatalf("readat: %d %v %q", n, err, buf)
		}
		if n, err := f.ReadAt(buf, 14); n != 2 || err != io.EOF {
			t.Fatalf("short readat: %d %v", n, err)
		}
		if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
			t.Fatalf("readat past end: %d %v", n, err)
		}
		if _, err := f.ReadAt(buf, -1); err == nil {
			t.Fatal("readat negative offset succeeded")
		}
		// Seek.
		if pos, err := f.Seek(-2, io.SeekEnd); pos != 14 || err != nil {
			t.Fatal(pos, err)
		}
		if pos, err := f.Seek(1, io.SeekCurrent); pos != 15 || err != nil {
			t.Fatal(pos, err)
		}
		if _, err := f.Seek(-100, io.SeekCurrent); err == nil {
			t.Fatal("seek before start succeeded")
		}
		must(t, f.Close())
		if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
		if err := f.Close(); err == nil {
			t.Fatal("double close succeeded")
		}
		if got := readAll(t, fsys, name); !bytes.Equal(got, want) {
			t.Fatalf("reopen: %q", got)
		}
	})
}

func TestConformanceOpenFlags(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "f")
		if _, err := fsys.Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open missing: %v", err)
		}
		var pe *os.PathError
		if _, err := fsys.OpenFile(name, os.O_RDWR, 0); !errors.As(err, &pe) {
			t.Fatalf("not a PathError: %T %v", err, err)
		}
		writeFile(t, fsys, name, []byte("abc"))
		if _, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("O_EXCL on existing: %v", err)
		}
		// Read-only files refuse writes and truncates.
		r, err := fsys.Open(name)
		must(t, err)
		if _, err := r.Write([]byte("x")); err == nil {
			t.Fatal("write on read-only file succeeded")
		}
		if _, err := r.WriteAt([]byte("x"), 0); err == nil {
			t.Fatal("writeat on read-only file succeeded")
		}
		if err := r.Truncate(0); err == nil {
			t.Fatal("truncate on read-only file succeeded")
		}
		must(t, r.Close())
		// Write-only files refuse reads.
		w, err := fsys.OpenFile(name, os.O_WRONLY, 0)
		must(t, err)
		if _, err := w.Read(make([]byte, 1)); err == nil {
			t.Fatal("read on write-only file succeeded")
		}
		// Without O_APPEND writes start at 0.
		_, err = w.Write([]byte("X"))
		must(t, err)
		must(t, w.Close())
		if got := readAll(t, fsys, name); string(got) != "Xbc" {
			t.Fatalf("got %q", got)
		}
		// O_APPEND appends, whatever the offset; WriteAt is refused.
		a, err := fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = a.Seek(0, io.SeekStart)
		must(t, err)
		_, err = a.Write([]byte("de"))
		must(t, err)
		if _, err := a.WriteAt([]byte("z"), 0); err == nil {
			t.Fatal("WriteAt on O_APPEND file succeeded")
		}
		must(t, a.Close())
		if got := readAll(t, fsys, name); string(got) != "Xbcde" {
			t.Fatalf("got %q", got)
		}
		// O_TRUNC empties; Create truncates.
		tr, err := fsys.OpenFile(name, os.O_RDWR|os.O_TRUNC, 0)
		must(t, err)
		must(t, tr.Close())
		if got := readAll(t, fsys, name); len(got) != 0 {
			t.Fatalf("got %q", got)
		}
		// Missing parent directory.
		if _, err := fsys.Create(filepath.Join(dir, "nodir", "x")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("create in missing dir: %v", err)
		}
	})
}

func TestConformanceTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "t")
		f, err := fsys.Create(name)
		must(t, err)
		_, err = f.Write([]byte("0123456789"))
		must(t, err)
		must(t, f.Truncate(4))
		// The offset stays at 10: the next write leaves a hole.
		_, err = f.Write([]byte("Z"))
		must(t, err)
		must(t, f.Truncate(12))
		if err := f.Truncate(-1); err == nil {
			t.Fatal("negative truncate succeeded")
		}
		must(t, f.Close())
		want := []byte("0123\x00\x00\x00\x00\x00\x00Z\x00")
		if got := readAll(t, fsys, name); !bytes.Equal(got, want) {
			t.Fatalf("got %q want %q", got, want)
		}
		fi, err := fsys.Stat(name)
		must(t, err)
		if fi.Size() != 12 {
			t.Fatal(fi.Size())
		}
	})
}

func TestConformanceNamespace(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := func(s ...string) string { return filepath.Join(append([]string{dir}, s...)...) }
		must(t, fsys.MkdirAll(p("x", "y"), 0o755))
		must(t, fsys.MkdirAll(p("x", "y"), 0o755)) // exists: fine
		writeFile(t, fsys, p("x", "b"), []byte("b"))
		writeFile(t, fsys, p("x", "a"), []byte("a"))
		if err := fsys.MkdirAll(p("x", "a", "z"), 0o755); err == nil {
			t.Fatal("MkdirAll through a file succeeded")
		}
		names, err := fsys.ReadDir(p("x"))
		must(t, err)
		if !slices.Equal(names, []string{"a", "b", "y"}) {
			t.Fatalf("ReadDir = %v", names)
		}
		if _, err := fsys.ReadDir(p("nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadDir missing: %v", err)
		}
		if _, err := fsys.ReadDir(p("x", "a")); err == nil {
			t.Fatal("ReadDir of a file succeeded")
		}
		fi, err := fsys.Stat(p("x", "y"))
		must(t, err)
		if !fi.IsDir() || fi.Name() != "y" {
			t.Fatalf("stat dir: %v %q", fi.IsDir(), fi.Name())
		}
		if _, err := fsys.Stat(p("x", "nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat missing: %v", err)
		}
		// Rename replaces the target atomically.
		must(t, fsys.Rename(p("x", "a"), p("x", "b")))
		if got := readAll(t, fsys, p("x", "b")); string(got) != "a" {
			t.Fatalf("after rename: %q", got)
		}
		if _, err := fsys.Stat(p("x", "a")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("old name after rename: %v", err)
		}
		if err := fsys.Rename(p("x", "a"), p("x", "c")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("rename missing: %v", err)
		}
		if err := fsys.Rename(p("x", "b"), p("x", "y")); err == nil {
			t.Fatal("rename file over dir succeeded")
		}
		// Rename across directories, and of a directory.
		must(t, fsys.Rename(p("x", "b"), p("x", "y", "b")))
		must(t, fsys.Rename(p("x", "y"), p("w")))
		if got := readAll(t, fsys, p("w", "b")); string(got) != "a" {
			t.Fatalf("after dir rename: %q", got)
		}
		if err := fsys.Rename(p("w"), p("w", "inside")); err == nil {
			t.Fatal("rename of a dir into itself succeeded")
		}
		// An open file survives its removal.
		f, err := fsys.Open(p("w", "b"))
		must(t, err)
		if err := fsys.Remove(p("w")); err == nil {
			t.Fatal("remove of non-empty dir succeeded")
		}
		must(t, fsys.Remove(p("w", "b")))
		if b, err := io.ReadAll(f); err != nil || string(b) != "a" {
			t.Fatalf("read of removed file: %q %v", b, err)
		}
		must(t, f.Close())
		if err := fsys.Remove(p("w", "b")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("remove missing: %v", err)
		}
		must(t, fsys.Remove(p("w")))
		// RemoveAll: a tree, then a missing path.
		must(t, fsys.MkdirAll(p("r", "s", "t"), 0o755))
		writeFile(t, fsys, p("r", "s", "f"), nil)
		must(t, fsys.RemoveAll(p("r")))
		must(t, fsys.RemoveAll(p("r")))
		names, err = fsys.ReadDir(dir)
		must(t, err)
		if !slices.Equal(names, []string{"x"}) {
			t.Fatalf("ReadDir = %v", names)
		}
		must(t, fsys.SyncDir(dir))
		if err := fsys.SyncDir(p("nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("SyncDir missing: %v", err)
		}
	})
}

func TestOSFiler(t *testing.T) {
	f, err := vfs.OS.Create(filepath.Join(t.TempDir(), "x"))
	must(t, err)
	defer f.Close()
	if of, ok := vfs.AsOSFile(f); !ok || of == nil {
		t.Fatal("OS file has no *os.File")
	}
	inj := vfs.Inject(vfs.OS, vfs.NewCounter())
	g, err := inj.Create(filepath.Join(t.TempDir(), "y"))
	must(t, err)
	defer g.Close()
	if _, ok := vfs.AsOSFile(g); !ok {
		t.Fatal("injected OS file hides its *os.File")
	}
	m := vfs.NewMem()
	h, err := m.Create("/z")
	must(t, err)
	if _, ok := vfs.AsOSFile(h); ok {
		t.Fatal("mem file claims an *os.File")
	}
	hi, err := vfs.Inject(m, vfs.NewCounter()).Create("/w")
	must(t, err)
	if _, ok := vfs.AsOSFile(hi); ok {
		t.Fatal("injected mem file claims an *os.File")
	}
}
