package vfs_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// dump renders a filesystem's whole tree and contents as text.
func dump(t *testing.T, fsys vfs.FS) string {
	t.Helper()
	var b strings.Builder
	var rec func(dir string)
	rec = func(dir string) {
		names, err := fsys.ReadDir(dir)
		must(t, err)
		fmt.Fprintf(&b, "d %s\n", dir)
		for _, n := range names {
			p := path.Join(dir, n)
			fi, err := fsys.Stat(p)
			must(t, err)
			if fi.IsDir() {
				rec(p)
				continue
			}
			fmt.Fprintf(&b, "f %s %q\n", p, readAll(t, fsys, p))
		}
	}
	rec("/")
	return b.String()
}

// states enumerates m's crash states and checks that they are distinct.
func states(t *testing.T, m *vfs.MemFS, opts vfs.CrashOptions) (dumps []string, descs []string, fss []*vfs.MemFS) {
	t.Helper()
	seen := map[string]string{}
	for desc, c := range m.AllCrashStates(opts) {
		d := dump(t, c)
		if prev, ok := seen[d]; ok {
			t.Fatalf("states %q and %q are the same:\n%s", prev, desc, d)
		}
		seen[d] = desc
		dumps = append(dumps, d)
		descs = append(descs, desc)
		fss = append(fss, c)
	}
	return dumps, descs, fss
}

func appendFile(t *testing.T, fsys vfs.FS, name string, data string, sync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	if sync {
		must(t, f.Sync())
	}
	must(t, f.Close())
}

func fileOr(t *testing.T, fsys vfs.FS, name string) (string, bool) {
	t.Helper()
	if _, err := fsys.Stat(name); err != nil {
		return "", false
	}
	return string(readAll(t, fsys, name)), true
}

func TestCrashSyncedDataSurvives(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	appendFile(t, m, "/d/a", "synced", true)
	must(t, m.SyncDir("/d"))
	must(t, m.SyncDir("/"))
	appendFile(t, m, "/d/a", "unsynced", false)

	dumps, descs, fss := states(t, m, vfs.CrashOptions{})
	// lose, keep, 3 torn, zero-extended, garbage-extended.
	if len(fss) != 7 {
		t.Fatalf("%d states: %q", len(fss), descs)
	}
	var sawLose, sawKeep, sawZero, sawTorn bool
	for i, c := range fss {
		got, ok := fileOr(t, c, "/d/a")
		if !ok || !strings.HasPrefix(got, "synced") {
			t.Fatalf("state %q lost synced data:\n%s", descs[i], dumps[i])
		}
		switch rest := got[6:]; {
		case rest == "":
			sawLose = true
		case rest == "unsynced":
			sawKeep = true
		case rest == strings.Repeat("\x00", 8):
			sawZero = true
		case strings.HasPrefix("unsynced", rest):
			sawTorn = true
		}
	}
	if !sawLose || !sawKeep || !sawZero || !sawTorn {
		t.Fatalf("missing variants: lose %v keep %v zero %v torn %v", sawLose, sawKeep, sawZero, sawTorn)
	}
	if descs[0] != "all unsynced changes lost" {
		t.Fatalf("first state is %q", descs[0])
	}
	// Options shrink the set.
	if n := len(m.CrashStates(vfs.CrashOptions{TornPoints: -1, NoExtend: true}, 0)); n != 2 {
		t.Fatalf("lose/keep only: %d states", n)
	}
	if n := len(m.CrashStates(vfs.CrashOptions{TornPoints: 100}, 0)); n != 2+7+2 {
		t.Fatalf("every torn point: %d states", n)
	}
	if n := len(m.CrashStates(vfs.CrashOptions{}, 3)); n != 3 {
		t.Fatalf("max 3: %d states", n)
	}
	// After Sync there is one state.
	f, err := m.OpenFile("/d/a", os.O_WRONLY, 0)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	if _, descs, _ := states(t, m, vfs.CrashOptions{}); len(descs) != 1 {
		t.Fatalf("after sync: %q", descs)
	}
}

func TestCrashUnsyncedEntryVanishes(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	m.SyncAll()
	appendFile(t, m, "/d/new", "data", true) // data synced, entry not
	_, descs, fss := states(t, m, vfs.CrashOptions{})
	if len(fss) != 2 {
		t.Fatalf("%q", descs)
	}
	if _, ok := fileOr(t, fss[0], "/d/new"); ok {
		t.Fatal("unsynced entry survived the lose-all state")
	}
	if got, ok := fileOr(t, fss[1], "/d/new"); !ok || got != "data" {
		t.Fatalf("keep state: %q %v", got, ok)
	}
	// A directory made by MkdirAll is itself an unsynced entry of its parent.
	m2 := vfs.NewMem()
	must(t, m2.MkdirAll("/p/q", 0o755))
	must(t, m2.SyncDir("/p/q"))
	if got := m2.CrashClone(vfs.CrashOptions{}); dump(t, got) != "d /\n" {
		t.Fatalf("unsynced mkdir survived:\n%s", dump(t, got))
	}
	if got := dump(t, m2.CrashClone(vfs.CrashOptions{KeepUnsynced: true})); got != "d /\nd /p\nd /p/q\n" {
		t.Fatalf("keep-all:\n%s", got)
	}
}

func TestCrashRenameDurability(t *testing.T) {
	m := vfs.NewMem()
	writeFile(t, m, "/ckpt", []byte("old"))
	m.SyncAll()
	writeFile(t, m, "/ckpt.tmp", []byte("new"))
	must(t, m.Rename("/ckpt.tmp", "/ckpt"))
	dumps, descs, _ := states(t, m, vfs.CrashOptions{})
	want := []string{
		"d /\nf /ckpt \"old\"\n",                      // nothing landed
		"d /\nf /ckpt \"new\"\n",                      // both landed
		"d /\nf /ckpt \"old\"\nf /ckpt.tmp \"new\"\n", // create landed, rename not
	}
	if !slices.Equal(dumps, want) {
		t.Fatalf("states %q:\n%q", descs, dumps)
	}
	must(t, m.SyncDir("/"))
	if dumps, _, _ := states(t, m, vfs.CrashOptions{}); !slices.Equal(dumps, want[1:2]) {
		t.Fatalf("after SyncDir: %q", dumps)
	}
}

func TestCrashUnsyncedTruncate(t *testing.T) {
	m := vfs.NewMem()
	writeFile(t, m, "/f", []byte("0123456789"))
	m.SyncAll()
	f, err := m.OpenFile("/f", os.O_RDWR, 0)
	must(t, err)
	must(t, f.Truncate(4))
	dumps, _, _ := states(t, m, vfs.CrashOptions{})
	want := []string{"d /\nf /f \"0123456789\"\n", "d /\nf /f \"0123\"\n"}
	if !slices.Equal(dumps, want) {
		t.Fatalf("%q", dumps)
	}
	// Truncate then append: the torn states cut the append, after the truncate.
	_, err = f.WriteAt([]byte("abcd"), 4)
	must(t, err)
	dumps, descs, _ := states(t, m, vfs.CrashOptions{TornPoints: 100, NoExtend: true})
	want = []string{
		"d /\nf /f \"0123456789\"\n",
		"d /\nf /f \"0123abcd\"\n",
		"d /\nf /f \"0123\"\n",
		"d /\nf /f \"0123a\"\n",
		"d /\nf /f \"0123ab\"\n",
		"d /\nf /f \"0123abc\"\n",
	}
	if !slices.Equal(dumps, want) {
		t.Fatalf("%q\n%q", descs, dumps)
	}
	must(t, f.Close())
}

// TestCrashCleanerSwap follows Kafka's segment replacement: write .cleaned, rename
// it to .swap, rename the old segment to .deleted, rename .swap into place.
func TestCrashCleanerSwap(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/p", 0o755))
	writeFile(t, m, "/p/0.log", []byte("old"))
	m.SyncAll()
	writeFile(t, m, "/p/0.log.cleaned", []byte("new"))
	must(t, m.Rename("/p/0.log.cleaned", "/p/0.log.swap"))
	must(t, m.Rename("/p/0.log", "/p/0.log.deleted"))
	must(t, m.Rename("/p/0.log.swap", "/p/0.log"))
	dumps, _, _ := states(t, m, vfs.CrashOptions{})
	pre := "d /\nd /p\n"
	want := []string{
		pre + "f /p/0.log \"old\"\n",
		pre + "f /p/0.log \"new\"\nf /p/0.log.deleted \"old\"\n",
		pre + "f /p/0.log \"old\"\nf /p/0.log.cleaned \"new\"\n",
		pre + "f /p/0.log \"old\"\nf /p/0.log.swap \"new\"\n",
		pre + "f /p/0.log.deleted \"old\"\nf /p/0.log.swap \"new\"\n",
	}
	if !slices.Equal(dumps, want) {
		t.Fatalf("%q", dumps)
	}
	// Removing the .deleted file without SyncDir may be undone.
	must(t, m.SyncDir("/p"))
	must(t, m.Remove("/p/0.log.deleted"))
	dumps, _, _ = states(t, m, vfs.CrashOptions{})
	if !slices.Equal(dumps, []string{want[1], pre + "f /p/0.log \"new\"\n"}) {
		t.Fatalf("%q", dumps)
	}
}

// TestCrashStateCount pins the documented count: the product of the variants,
// each file's counted once per directory choice that reaches it.
func TestCrashStateCount(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	writeFile(t, m, "/d/a.log", []byte("AAAA"))
	m.SyncAll()
	appendFile(t, m, "/d/a.log", "0123456789", false) // 7 variants
	appendFile(t, m, "/d/b.log", "0123456789", false) // new entry: 2 dir variants; 7 data variants
	_, descs, _ := states(t, m, vfs.CrashOptions{})
	if len(descs) != 7+7*7 {
		t.Fatalf("%d states", len(descs))
	}
}

func TestCrashClonesIndependent(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	writeFile(t, m, "/d/a", []byte("synced"))
	m.SyncAll()
	appendFile(t, m, "/d/a", "-more", false)
	appendFile(t, m, "/d/b", "bbb", false)
	before := dump(t, m)

	dumps, _, fss := states(t, m, vfs.CrashOptions{})
	if len(fss) < 4 {
		t.Fatalf("%d states", len(fss))
	}
	// Mutate every clone in every way; the others and the original do not change.
	for i, c := range fss {
		f, err := c.OpenFile("/d/a", os.O_RDWR, 0)
		must(t, err)
		_, err = f.WriteAt([]byte("XX"), 0)
		must(t, err)
		_, err = f.Seek(0, io.SeekEnd)
		must(t, err)
		_, err = f.Write([]byte("tail"))
		must(t, err)
		must(t, f.Truncate(3))
		_, err = f.Write([]byte("again"))
		must(t, err)
		must(t, f.Close())
		must(t, c.RemoveAll("/d/b"))
		writeFile(t, c, "/d/c", []byte("c"))
		for j, o := range fss[i+1:] {
			if got := dump(t, o); got != dumps[i+1+j] {
				t.Fatalf("mutating state %d changed state %d", i, i+1+j)
			}
		}
	}
	if got := dump(t, m); got != before {
		t.Fatalf("mutating clones changed the original:\n%s\nwas\n%s", got, before)
	}
	// Mutating the original does not change states already enumerated, nor
	// states of an enumeration started before the mutation.
	seq := m.AllCrashStates(vfs.CrashOptions{})
	fresh := m.CrashStates(vfs.CrashOptions{}, 0)
	f, err := m.OpenFile("/d/a", os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("ZZZZ"), 0)
	must(t, err)
	must(t, f.Truncate(2))
	must(t, f.Sync())
	must(t, f.Close())
	must(t, m.Remove("/d/b"))
	must(t, m.SyncDir("/d"))
	i := 0
	for _, c := range seq {
		if got := dump(t, c); got != dumps[i] {
			t.Fatalf("state %d changed after the original did:\n%s", i, got)
		}
		i++
	}
	for i, c := range fresh {
		if got := dump(t, c); got != dumps[i] {
			t.Fatalf("state %d changed after the original did:\n%s", i, got)
		}
	}
}

func TestCrashCloneRandom(t *testing.T) {
	m := vfs.NewMem()
	writeFile(t, m, "/a", []byte("a"))
	m.SyncAll()
	appendFile(t, m, "/a", "123456", false)
	appendFile(t, m, "/b", "xyz", false)
	dumps, _, _ := states(t, m, vfs.CrashOptions{})
	all := map[string]bool{}
	for _, d := range dumps {
		all[d] = true
	}
	r := rand.New(rand.NewPCG(1, 2))
	hit := map[string]bool{}
	for range 500 {
		d := dump(t, m.CrashClone(vfs.CrashOptions{Rand: r}))
		if !all[d] {
			t.Fatalf("random clone is not an enumerated state:\n%s", d)
		}
		hit[d] = true
	}
	if len(hit) < len(all)/2 {
		t.Fatalf("random clones hit %d of %d states", len(hit), len(all))
	}
	if got := dump(t, m.CrashClone(vfs.CrashOptions{})); got != dumps[0] {
		t.Fatalf("default clone is not lose-all:\n%s", got)
	}
	if got := dump(t, m.CrashClone(vfs.CrashOptions{KeepUnsynced: true})); got != dump(t, m) {
		t.Fatalf("keep-all clone differs from the original:\n%s", got)
	}
}

// TestCrashCrossDirRename: the two halves of an unsynced cross-directory rename
// land independently; when both names survive they are one file.
func TestCrashCrossDirRename(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/a", 0o755))
	must(t, m.MkdirAll("/b", 0o755))
	writeFile(t, m, "/a/f", []byte("f"))
	m.SyncAll()
	must(t, m.Rename("/a/f", "/b/f"))
	dumps, descs, fss := states(t, m, vfs.CrashOptions{})
	if len(fss) != 4 {
		t.Fatalf("%q", descs)
	}
	both := -1
	for i, d := range dumps {
		if strings.Contains(d, "/a/f") && strings.Contains(d, "/b/f") {
			both = i
		}
	}
	if both < 0 {
		t.Fatalf("no state with both names: %q", dumps)
	}
	c := fss[both]
	appendFile(t, c, "/a/f", "+", false)
	if got := readAll(t, c, "/b/f"); string(got) != "f+" {
		t.Fatalf("the two names are not one file: %q", got)
	}
}

// TestCrashDirRemoveUndone: an unsynced RemoveAll can come back whole.
func TestCrashDirRemoveUndone(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/t-0/x", 0o755))
	writeFile(t, m, "/t-0/x/seg", []byte("data"))
	m.SyncAll()
	must(t, m.RemoveAll("/t-0"))
	dumps, _, _ := states(t, m, vfs.CrashOptions{})
	if dumps[0] != "d /\nd /t-0\nd /t-0/x\nf /t-0/x/seg \"data\"\n" || dumps[1] != "d /\n" {
		t.Fatalf("%q", dumps)
	}
}

// TestCrashRandomWorkload checks on random workloads that the lose-all state is
// the durable view, the keep-all state is the current view, and that the states
// are distinct.
func TestCrashRandomWorkload(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		m := vfs.NewMem()
		names := []string{"/a", "/b", "/d/c", "/d/e"}
		must(t, m.MkdirAll("/d", 0o755))
		for range 12 {
			n := names[r.IntN(len(names))]
			switch r.IntN(7) {
			case 0, 1:
				appendFile(t, m, n, strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(5)), r.IntN(2) == 0)
			case 2:
				if f, err := m.OpenFile(n, os.O_RDWR, 0); err == nil {
					must(t, f.Truncate(int64(r.IntN(6))))
					must(t, f.Close())
				}
			case 3:
				_ = m.Rename(n, names[r.IntN(len(names))])
			case 4:
				_ = m.Remove(n)
			case 5:
				must(t, m.SyncDir(path.Dir(n)))
			case 6:
				if f, err := m.OpenFile(n, os.O_RDWR, 0); err == nil {
					_, err = f.WriteAt([]byte("WW"), int64(r.IntN(4)))
					must(t, err)
					must(t, f.Close())
				}
			}
		}
		dumps, _, _ := states(t, m, vfs.CrashOptions{})
		if got := dump(t, m.CrashClone(vfs.CrashOptions{KeepUnsynced: true})); got != dump(t, m) {
			t.Fatalf("seed %d: keep-all differs:\n%s\nvs\n%s", seed, got, dump(t, m))
		}
		m.SyncAll()
		d, _, _ := states(t, m, vfs.CrashOptions{})
		if len(d) != 1 || d[0] != dump(t, m) {
			t.Fatalf("seed %d: after SyncAll: %d states", seed, len(d))
		}
		_ = dumps
	}
}

func TestMemConcurrent(t *testing.T) {
	m := vfs.NewMem()
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			name := fmt.Sprintf("/f%d", g)
			for i := range 200 {
				appendFile(t, m, name, "x", i%10 == 0)
				_, _ = m.ReadDir("/")
				if i%50 == 0 {
					_ = m.CrashClone(vfs.CrashOptions{})
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	for g := range 4 {
		if got := readAll(t, m, fmt.Sprintf("/f%d", g)); !bytes.Equal(got, bytes.Repeat([]byte("x"), 200)) {
			t.Fatalf("f%d: %d bytes", g, len(got))
		}
	}
}
