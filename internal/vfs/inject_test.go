package vfs_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// seqWorkload does a fixed sequence of operations, stopping at the first error.
func seqWorkload(fsys vfs.FS) error {
	if err := fsys.MkdirAll("/d", 0o755); err != nil { // mkdirall 0
		return err
	}
	f, err := fsys.Create("/d/f") // create 1
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write([]byte("abc")); err != nil { // write 2
		return err
	}
	if _, err := f.WriteAt([]byte("Z"), 0); err != nil { // writeat 3
		return err
	}
	if err := f.Sync(); err != nil { // sync 4
		return err
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err != nil { // readat 5
		return err
	}
	if err := f.Truncate(2); err != nil { // truncate 6
		return err
	}
	if err := fsys.Rename("/d/f", "/d/g"); err != nil { // rename 7
		return err
	}
	if _, err := fsys.Stat("/d/g"); err != nil { // stat 8
		return err
	}
	if _, err := fsys.ReadDir("/d"); err != nil { // readdir 9
		return err
	}
	if err := fsys.SyncDir("/d"); err != nil { // syncdir 10
		return err
	}
	return fsys.Remove("/d/g") // remove 11
}

func TestInjectCounterAndFailAt(t *testing.T) {
	all := vfs.NewCounter()
	muts := vfs.NewCounter(vfs.MutatingOps...)
	syncs := vfs.NewCounter(vfs.OpSync, vfs.OpSyncDir)
	both := vfs.InjectorFunc(func(op vfs.Op) error {
		for _, c := range []*vfs.Counter{all, muts, syncs} {
			_ = c.MaybeError(op)
		}
		return nil
	})
	must(t, seqWorkload(vfs.Inject(vfs.NewMem(), both)))
	// 12 ops plus the deferred close.
	if all.Count() != 13 || muts.Count() != 9 || syncs.Count() != 2 {
		t.Fatalf("counts: all %d mutating %d syncs %d", all.Count(), muts.Count(), syncs.Count())
	}
	for k := range 12 {
		inj := vfs.FailAt(k)
		var seen []vfs.Op
		rec := vfs.InjectorFunc(func(op vfs.Op) error {
			seen = append(seen, op)
			return inj.MaybeError(op)
		})
		fsys := vfs.Inject(vfs.NewMem(), rec)
		err := seqWorkload(fsys)
		if !errors.Is(err, vfs.ErrInjected) || !vfs.IsInjected(err) {
			t.Fatalf("k=%d: err %v does not match ErrInjected", k, err)
		}
		var ie *vfs.InjectedError
		if !errors.As(err, &ie) || ie.Op != seen[k] {
			t.Fatalf("k=%d: err %v is not for op %v", k, err, seen[k])
		}
		if inj.Injected() != 1 || fsys.(*vfs.InjectFS).Injected() != 1 {
			t.Fatalf("k=%d: injected %d/%d", k, inj.Injected(), fsys.(*vfs.InjectFS).Injected())
		}
		// The op was failed, and every op before it ran: k ops plus the failed
		// one plus (if a file was opened) the deferred close.
		if len(seen) < k+1 || len(seen) > k+2 {
			t.Fatalf("k=%d: %d ops seen", k, len(seen))
		}
	}
	// FailAt by kind: the second write-ish op.
	inj := vfs.FailAt(1, vfs.OpWrite, vfs.OpWriteAt)
	err := seqWorkload(vfs.Inject(vfs.NewMem(), inj))
	var ie *vfs.InjectedError
	if !errors.As(err, &ie) || ie.Op.Kind != vfs.OpWriteAt || ie.Op.Off != 0 || ie.Op.Len != 1 {
		t.Fatalf("err %v", err)
	}
	if msg := err.Error(); msg != "vfs: injected error: writeat /d/f (1 bytes at 0)" {
		t.Fatalf("message %q", msg)
	}
}

func TestInjectCustomError(t *testing.T) {
	enospc := errors.New("no space left on device")
	fsys := vfs.Inject(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpWrite {
			return enospc
		}
		return nil
	}))
	err := seqWorkload(fsys)
	if !errors.Is(err, enospc) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("err %v", err)
	}
}

func TestInjectFailedOpDoesNothing(t *testing.T) {
	m := vfs.NewMem()
	fsys := vfs.Inject(m, vfs.FailAt(0, vfs.OpCreate, vfs.OpRename, vfs.OpRemove, vfs.OpMkdirAll))
	if _, err := fsys.Create("/x"); !vfs.IsInjected(err) {
		t.Fatal(err)
	}
	if _, err := m.Stat("/x"); err == nil {
		t.Fatal("failed create created the file")
	}
}

func TestCrashAt(t *testing.T) {
	c := vfs.NewCounter(vfs.MutatingOps...)
	must(t, seqWorkload(vfs.Inject(vfs.NewMem(), c)))
	n := c.Count()
	for k := 0; k <= n; k++ {
		m := vfs.NewMem()
		crash := vfs.CrashAt(k, vfs.MutatingOps...)
		fsys := vfs.Inject(m, crash)
		err := seqWorkload(fsys)
		if k == n {
			if err != nil || crash.Crashed() {
				t.Fatalf("k=n: %v %v", err, crash.Crashed())
			}
			continue
		}
		if !vfs.IsInjected(err) || !crash.Crashed() {
			t.Fatalf("k=%d: %v", k, err)
		}
		// Nothing mutates after the crash point.
		before := dump(t, m)
		if _, err := fsys.Create("/late"); !vfs.IsInjected(err) {
			t.Fatalf("k=%d: create after crash: %v", k, err)
		}
		if err := fsys.MkdirAll("/late", 0o755); !vfs.IsInjected(err) {
			t.Fatalf("k=%d: mkdir after crash: %v", k, err)
		}
		if _, err := fsys.ReadDir("/"); err != nil {
			t.Fatalf("k=%d: reads must still work: %v", k, err)
		}
		if dump(t, m) != before {
			t.Fatalf("k=%d: filesystem changed after the crash", k)
		}
		if got := fsys.(*vfs.InjectFS).Injected(); got != crash.Injected() || got < 3 {
			t.Fatalf("k=%d: injected %d vs %d", k, got, crash.Injected())
		}
	}
}

func TestOpKindString(t *testing.T) {
	for k := vfs.OpOpen; k <= vfs.OpMapWrite; k++ {
		if s := k.String(); s == "" || s[0] == 'O' {
			t.Fatalf("kind %d: %q", k, s)
		}
	}
	if got := fmt.Sprint(vfs.Op{Kind: vfs.OpRename, Path: "a", NewPath: "b"}); got != "rename a -> b" {
		t.Fatal(got)
	}
	if !vfs.OpSync.Mutating() || vfs.OpRead.Mutating() {
		t.Fatal("Mutating")
	}
}

// Files of an injected filesystem show writes through a mapping to the
// injector (OpMapWrite); plain OS and in-memory files have no such hook.
func TestInjectMapWriteCheck(t *testing.T) {
	dir := t.TempDir()
	if vfs.MapWriteCheckFunc(mustCreate(t, vfs.OS, filepath.Join(dir, "os"))) != nil {
		t.Fatal("an OS file has a map-write check")
	}
	if vfs.MapWriteCheckFunc(mustCreate(t, vfs.NewMem(), "/m")) != nil {
		t.Fatal("a MemFS file has a map-write check")
	}
	fail := vfs.FailAt(1, vfs.OpMapWrite)
	fsys := vfs.Inject(vfs.OS, fail)
	check := vfs.MapWriteCheckFunc(mustCreate(t, fsys, filepath.Join(dir, "inj")))
	if check == nil {
		t.Fatal("an injected file has no map-write check")
	}
	if err := check(0, 8); err != nil {
		t.Fatalf("first mapped write: %v", err)
	}
	err := check(4096, 8)
	var ie *vfs.InjectedError
	if !errors.As(err, &ie) || ie.Op.Kind != vfs.OpMapWrite || ie.Op.Off != 4096 || ie.Op.Len != 8 {
		t.Fatalf("second mapped write: %v, want the injected OpMapWrite at 4096", err)
	}
	if !vfs.OpMapWrite.Mutating() || fail.Injected() != 1 {
		t.Fatalf("OpMapWrite mutating %v, injected %d", vfs.OpMapWrite.Mutating(), fail.Injected())
	}
}

func mustCreate(t *testing.T, fsys vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
