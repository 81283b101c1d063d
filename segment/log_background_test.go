package segment

import (
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestOptionsGo: the flush after a roll goes through Options.Go, so an
// executor that holds it (a deterministic simulation) decides when it runs:
// until then the recovery point stays below the new segment and a power
// loss may take the sealed segment's tail; once it ran, Close returns.
func TestOptionsGo(t *testing.T) {
	fsys := vfs.NewMem()
	var tasks []func()
	l, err := Open("/data/t-0", &Options{FS: fsys, SegmentBytes: 1024, Logger: quiet, Go: func(task func()) { tasks = append(tasks, task) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(l.Segments()) < 2; i++ {
		if _, err := l.Append(makeBatch(t, i, 2, 1000, 0, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if len(tasks) != 1 {
		t.Fatalf("%d tasks handed to Options.Go after one roll, want 1", len(tasks))
	}
	base := l.Segments()[1].Base()
	if got := l.FlushedOffset(); got >= base {
		t.Fatalf("recovery point %d reached the new segment %d before the flush task ran", got, base)
	}
	// A power loss now may lose the sealed segment's unsynced tail.
	crashed := fsys.CrashClone(vfs.CrashOptions{})
	if l2, err := Open("/data/t-0", &Options{FS: crashed, Logger: quiet}); err != nil {
		t.Fatal(err)
	} else {
		if end := l2.LogEndOffset(); end >= base {
			t.Fatalf("nothing was synced, yet %d records survived the power loss (new segment at %d)", end, base)
		}
		l2.Close()
	}
	tasks[0]()
	if got := l.FlushedOffset(); got != base {
		t.Fatalf("recovery point %d after the flush task, want %d", got, base)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
