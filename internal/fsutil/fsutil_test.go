package fsutil_test

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
)

func read(t *testing.T, fsys vfs.FS, name string) (string, bool) {
	t.Helper()
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestWriteFileAtomicOS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	for _, content := range []string{"first", "second, longer", ""} {
		if err := fsutil.WriteFileAtomic(vfs.OS, path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, ok := read(t, vfs.OS, path); !ok || got != content {
			t.Fatalf("got %q %v want %q", got, ok, content)
		}
		if _, ok := read(t, vfs.OS, path+".tmp"); ok {
			t.Fatal("tmp file left behind")
		}
	}
}

// setup returns a MemFS holding /d/ckpt = old, durably (or no file if old is "").
func setup(t *testing.T, old string) *vfs.MemFS {
	m := vfs.NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		if err := fsutil.WriteFileAtomic(m, "/d/ckpt", []byte(old)); err != nil {
			t.Fatal(err)
		}
	}
	m.SyncAll()
	return m
}

// TestWriteFileAtomicCrash crashes at every mutating op of the sequence and checks
// every post-crash state: the file is old or new, never empty or mixed; once
// WriteFileAtomic has returned nil it is new.
func TestWriteFileAtomicCrash(t *testing.T) {
	const oldC, newC = "old content 0123456789", "NEW"
	for _, old := range []string{oldC, ""} {
		counter := vfs.NewCounter(vfs.MutatingOps...)
		if err := fsutil.WriteFileAtomic(vfs.Inject(setup(t, old), counter), "/d/ckpt", []byte(newC)); err != nil {
			t.Fatal(err)
		}
		n := counter.Count()
		if n != 5 { // create, write, sync, rename, syncdir
			t.Fatalf("%d mutating ops", n)
		}
		states := 0
		for k := 0; k <= n; k++ {
			m := setup(t, old)
			crash := vfs.CrashAt(k, vfs.MutatingOps...)
			fsys := vfs.Inject(m, crash)
			err := fsutil.WriteFileAtomic(fsys, "/d/ckpt", []byte(newC))
			if k < n {
				if !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, fsutil.ErrAtomicWrite) {
					t.Fatalf("k=%d: error %v", k, err)
				}
				// Every injected error was reported: the crash op and the cleanup
				// attempts after it all failed, and the first one was returned.
				if crash.Injected() == 0 {
					t.Fatalf("k=%d: nothing injected", k)
				}
			} else if err != nil {
				t.Fatalf("no crash: %v", err)
			}
			for desc, c := range m.AllCrashStates(vfs.CrashOptions{TornPoints: 8}) {
				states++
				got, ok := read(t, c, "/d/ckpt")
				switch {
				case ok && got == newC:
				case ok && got == old && old != "":
				case !ok && old == "":
				default:
					t.Fatalf("old %q, k=%d, state %q: file is %q (exists %v)", old, k, desc, got, ok)
				}
				if k == n && got != newC {
					t.Fatalf("completed write lost in state %q", desc)
				}
			}
		}
		t.Logf("old %q: %d ops, %d crash states checked", old, n, states)
	}
}

// TestWriteFileAtomicFailures fails each op in turn (the process lives on): the
// error is returned, the old content stays, the tmp file is cleaned up.
func TestWriteFileAtomicFailures(t *testing.T) {
	counter := vfs.NewCounter()
	if err := fsutil.WriteFileAtomic(vfs.Inject(setup(t, "old"), counter), "/d/ckpt", []byte("new")); err != nil {
		t.Fatal(err)
	}
	for k := range counter.Count() {
		m := setup(t, "old")
		inj := vfs.FailAt(k)
		fsys := vfs.Inject(m, inj)
		err := fsutil.WriteFileAtomic(fsys, "/d/ckpt", []byte("new"))
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("k=%d: err %v", k, err)
		}
		var ie *vfs.InjectedError
		errors.As(err, &ie)
		got, _ := read(t, m, "/d/ckpt")
		if ie.Op.Kind == vfs.OpSyncDir {
			if got != "new" {
				t.Fatalf("k=%d: failed SyncDir after rename: %q", k, got)
			}
		} else if got != "old" {
			t.Fatalf("k=%d (%v): file is %q", k, ie.Op, got)
		}
		if _, ok := read(t, m, "/d/ckpt.tmp"); ok {
			t.Fatalf("k=%d (%v): tmp left behind", k, ie.Op)
		}
	}
}

// TestCrashModelCatchesMissingSync checks the test above has teeth: the same
// sequence without the file fsync can leave an empty or torn file.
func TestCrashModelCatchesMissingSync(t *testing.T) {
	m := setup(t, "old")
	f, err := m.Create("/d/ckpt.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new content")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := m.Rename("/d/ckpt.tmp", "/d/ckpt"); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, c := range m.AllCrashStates(vfs.CrashOptions{}) {
		if got, _ := read(t, c, "/d/ckpt"); got != "old" && got != "new content" {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("no crash state shows the missing fsync")
	}
}
