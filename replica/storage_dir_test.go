package replica

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
)

// failWrite refuses the first write to a .log file (a full disk refusing
// an append: nothing written, the log undoes nothing).
type failWrite struct{ done bool }

func (f *failWrite) MaybeError(op vfs.Op) error {
	if !f.done && op.Kind == vfs.OpWriteAt && strings.HasSuffix(op.Path, ".log") {
		f.done = true
		return vfs.ErrInjected
	}
	return nil
}

// TestStorageErrorFailsLogDir: a follower whose append fails (a full disk)
// takes its log dir offline, as Kafka's LogDirFailureChannel does: the
// log's Health, which its DataDir shares and reports to the controller,
// fails. The log alone kept its dir online after a write it could undo,
// so the replica stopped without anyone being told (the disk-full fault
// test: the controller heard of the dir a minute later, from a failed
// checkpoint).
func TestStorageErrorFailsLogDir(t *testing.T) {
	f := newTestPartition(t, 2, vfs.Inject(vfs.NewMem(), &failWrite{}))
	mustFollower(t, f, state(1, 0, []int32{1, 2}), t0)
	err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 0, 0, "a") })
	if !errors.Is(err, ErrStorage) || f.Failed() == nil {
		t.Fatalf("append refused by the disk: %v (failed: %v)", err, f.Failed())
	}
	if herr := f.Log().Health().Err(); herr == nil || !vfs.IsInjected(herr) {
		t.Fatalf("the log's Health after the partition failed: %v, want the injected error", herr)
	}
}

// TestOfflineDirCheckpoint: once a partition took its log dir offline, the
// Manager writes no high-watermark checkpoint there (Kafka checkpoints live
// log dirs only): on a full disk every replica.high.watermark.checkpoint.
// interval.ms brought a failed write and an ERROR.
func TestOfflineDirCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	m := newTestManager(t, 2, vfs.Inject(mem, &failWrite{}))
	if c := codes(m.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 0, []int32{1, 2}, 1, 2)), t0)); !slices.Equal(c, []int16{0}) {
		t.Fatalf("LeaderAndIsr: %v", c)
	}
	p := m.Partition(testTopic, 0)
	if err := fetchData(t, p, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 0, 0, "a") }); !errors.Is(err, ErrStorage) {
		t.Fatalf("append refused by the disk: %v", err)
	}
	if err := m.CheckpointHighWatermarks(); err != nil {
		t.Fatalf("checkpoint with the only log dir offline: %v", err)
	}
	if _, err := mem.Stat("/data/" + checkpoint.ReplicationOffsetFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a high-watermark checkpoint was written into the offline log dir (stat: %v)", err)
	}
}
