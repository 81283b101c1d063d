package vfs_test

import (
	"bytes"
	"os"
	"path"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// Allocate extends a file with zeros, never shrinks it, and leaves the data
// before the old end alone; writes inside the allocated range do not grow it.
func TestConformanceAllocate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := path.Join(dir, "a")
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Allocate(4096); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.Stat(); st.Size() != 4096 {
			t.Fatalf("size %d after Allocate(4096)", st.Size())
		}
		if err := f.Allocate(10); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.Stat(); st.Size() != 4096 {
			t.Fatalf("Allocate shrank the file to %d", st.Size())
		}
		if _, err := f.WriteAt([]byte("xyz"), 100); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.Stat(); st.Size() != 4096 {
			t.Fatalf("write inside the allocation changed the size to %d", st.Size())
		}
		want := make([]byte, 4096)
		copy(want, "abc")
		copy(want[100:], "xyz")
		if got := readAll(t, fsys, name); !bytes.Equal(got, want) {
			t.Fatalf("contents differ after Allocate")
		}
		ro, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if err := ro.Allocate(8192); err == nil {
			t.Fatal("Allocate on a read-only file succeeded")
		}
	})
}

// An unsynced allocation is lost by a crash that keeps only synced state.
func TestMemAllocateDurability(t *testing.T) {
	m := vfs.NewMem()
	f, err := m.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Allocate(1024); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone(vfs.CrashOptions{})
	st, err := c.Stat("/f")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 5 {
		t.Fatalf("crash kept the unsynced allocation: size %d", st.Size())
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.CrashClone(vfs.CrashOptions{}).Stat("/f"); st.Size() != 1024 {
		t.Fatalf("synced allocation lost: size %d", st.Size())
	}
}
