package recovery

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// A power loss at every mutating operation of a session (open a cleanly shut
// down directory, append, close cleanly), in every state it can leave (bounded
// per crash point): the next open succeeds, the log is a prefix of what was
// appended with nothing invalid in it, and a clean-shutdown marker is only ever
// found with the log as the previous clean shutdown or this one left it.
func TestCrashLoopSession(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop")
	}
	for _, prealloc := range []bool{false, true} {
		t.Run(fmt.Sprintf("preallocate=%v", prealloc), func(t *testing.T) { testCrashLoopSession(t, prealloc) })
	}
}

func testCrashLoopSession(t *testing.T, prealloc bool) {
	testOpts := func(fsys vfs.FS) *Options {
		o := testOpts(fsys)
		o.OptionsFor = func(string) *segment.Options { so := testSegOpts(); so.Preallocate = prealloc; return so }
		return o
	}
	base := vfs.NewMem()
	buildDataDir(t, base, "/d", []string{"t-0"}, 8)
	tp := TopicPartition{Topic: "t", Partition: 0}
	// CRCs of every batch in order: the 8 first, then the session's.
	want := append([]uint32(nil), batchCRCsMem(t, base, "/d/t-0")...)
	session := func(fsys vfs.FS) error {
		d, _, err := OpenDataDir("/d", testOpts(fsys))
		if err != nil {
			return err
		}
		l := d.Log(tp)
		for i := 0; i < 6; i++ {
			if _, err := l.Append(batch(t, 100+i, 2, 150)); err != nil {
				d.Close()
				return err
			}
		}
		return d.Close()
	}
	for i := 0; i < 6; i++ {
		want = append(want, record.Batch(batch(t, 100+i, 2, 150)).CRC())
	}
	counter := vfs.NewCounter(vfs.MutatingOps...)
	if err := session(vfs.Inject(cloneMem(base), counter)); err != nil {
		t.Fatal(err)
	}
	states := 0
	for k := 0; k <= counter.Count(); k++ {
		mem := cloneMem(base)
		crash := vfs.CrashAt(k, vfs.MutatingOps...)
		err := session(vfs.Inject(mem, crash))
		if crash.Crashed() && !errors.Is(err, vfs.ErrInjected) {
			// No injected failure may be swallowed.
			t.Fatalf("crash at op %d of %d: session error %v", k, counter.Count(), err)
		}
		for _, after := range mem.CrashStates(vfs.CrashOptions{}, 12) {
			states++
			d, rep, err := OpenDataDir("/d", testOpts(after))
			if err != nil {
				t.Fatalf("crash at op %d: open: %v", k, err)
			}
			end := d.Log(tp).LogEndOffset()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			verifyPartition(t, after, "/d/t-0")
			got := batchCRCsMem(t, after, "/d/t-0")
			if len(got) > len(want) {
				t.Fatalf("crash at op %d: %d batches, only %d appended", k, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("crash at op %d: batch %d differs from what was appended", k, i)
				}
			}
			// A marker is the old one (the session died before removing it) or
			// the new one (written after everything was durable).
			if rep.CleanShutdown && len(got) != 8 && len(got) != len(want) {
				t.Fatalf("crash at op %d: marker present with %d batches (end %d): neither before nor after the session", k, len(got), end)
			}
			if k == counter.Count() && len(got) != len(want) {
				t.Fatalf("after a completed clean close: %d of %d batches", len(got), len(want))
			}
		}
	}
	t.Logf("%d crash points, %d states", counter.Count()+1, states)
}

// cloneMem copies a MemFS as it is (nothing lost).
func cloneMem(m *vfs.MemFS) *vfs.MemFS {
	return m.CrashClone(vfs.CrashOptions{KeepUnsynced: true})
}

// batchCRCsMem lists the CRCs of a partition's batches in order.
func batchCRCsMem(t *testing.T, fsys vfs.FS, pdir string) []uint32 {
	t.Helper()
	var out []uint32
	for _, p := range logFiles(t, fsys, pdir) {
		it := record.NewIterator(readFile(t, fsys, p), record.ScanOptions{VerifyCRC: true})
		for it.Next() {
			out = append(out, it.Batch().CRC())
		}
		if it.Err() != nil {
			t.Fatal(fmt.Errorf("%s: %w", p, it.Err()))
		}
	}
	return out
}
