package vfs_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// TestSyncGate: a held gate blocks matching syncs until Release, and lets
// other files' syncs and syncs before Hold through.
func TestSyncGate(t *testing.T) {
	gate := vfs.NewSyncGate(".log")
	fs := vfs.Inject(vfs.OS, gate)
	dir := t.TempDir()
	open := func(name string) vfs.File {
		f, err := fs.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	log, other := open("a.log"), open("a.index")
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	gate.Hold()
	defer gate.Release()
	if err := other.Sync(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- log.Sync() }()
	if p := <-gate.Entered(); filepath.Base(p) != "a.log" {
		t.Fatalf("entered by %s", p)
	}
	select {
	case <-done:
		t.Fatal("a held sync returned before Release")
	case <-time.After(50 * time.Millisecond):
	}
	gate.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	gate.Release() // twice is fine
}
