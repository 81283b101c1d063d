package vfs_test

import (
	"fmt"

	"github.com/stratalog/strata/internal/vfs"
)

// Example_crashLoop is the crash-consistency loop: run the workload once to count
// its mutating ops, then for every k run it again dying at op k, and check every
// state a power loss at that moment could leave.
func Example_crashLoop() {
	workload := func(fsys vfs.FS) error {
		f, err := fsys.Create("/seg.log")
		if err != nil {
			return err
		}
		defer f.Close()
		if err := fsys.SyncDir("/"); err != nil {
			return err
		}
		if _, err := f.Write([]byte("record-1;")); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		_, err = f.Write([]byte("record-2;"))
		return err
	}

	counter := vfs.NewCounter(vfs.MutatingOps...)
	_ = workload(vfs.Inject(vfs.NewMem(), counter))

	states := 0
	for k := 0; k <= counter.Count(); k++ {
		mem := vfs.NewMem()
		crash := vfs.CrashAt(k, vfs.MutatingOps...)
		_ = workload(vfs.Inject(mem, crash)) // fails with vfs.ErrInjected when k < count
		for desc, after := range mem.AllCrashStates(vfs.CrashOptions{}) {
			states++
			_ = desc  // print it when an invariant fails
			_ = after // reopen and recover from it, then check invariants
		}
	}
	fmt.Println(counter.Count(), "crash points,", states, "states")
	// Output: 5 crash points, 19 states
}
