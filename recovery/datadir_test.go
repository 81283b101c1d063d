package recovery

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
)

// WriteCheckpoints records each log's flushed offset as its recovery point and
// its log start offset only where it is above the first segment's base; Close
// writes them with everything flushed, then the marker; the next open uses
// them and finds the marker.
func TestCheckpointsAndMarker(t *testing.T) {
	mem := vfs.NewMem()
	ends := buildDataDir(t, mem, "/d", []string{"t-0", "t-1"}, 12)
	opts := testOpts(mem)
	opts.BrokerEpoch = 42
	d, rep, err := OpenDataDir("/d", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.CleanShutdown || rep.Totals.SegmentsScanned != 0 {
		t.Fatalf("clean open: %+v", rep.Totals)
	}
	if p := rep.Partitions[0]; p.RecoveryPoint != ends["t-0"] {
		t.Fatalf("recovery point %d, want %d from the checkpoint", p.RecoveryPoint, ends["t-0"])
	}
	t0, t1 := d.Log(TopicPartition{Topic: "t", Partition: 0}), d.Log(TopicPartition{Topic: "t", Partition: 1})
	if _, err := t0.Append(batch(t, 50, 3, 40)); err != nil {
		t.Fatal(err)
	}
	if err := t0.SetLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if _, err := t1.Append(batch(t, 51, 3, 40)); err != nil {
		t.Fatal(err)
	}
	if err := t1.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	rps, err := checkpoint.ReadOffsets(mem, "/d/"+checkpoint.RecoveryPointFile)
	if err != nil {
		t.Fatal(err)
	}
	tp0, tp1 := TopicPartition{Topic: "t", Partition: 0}, TopicPartition{Topic: "t", Partition: 1}
	if rps[tp0] != t0.FlushedOffset() || rps[tp0] >= t0.LogEndOffset() || rps[tp1] != t1.LogEndOffset() {
		t.Fatalf("recovery points %v; flushed %d/%d, ends %d/%d", rps, t0.FlushedOffset(), t1.FlushedOffset(), t0.LogEndOffset(), t1.LogEndOffset())
	}
	lsos, err := checkpoint.ReadOffsets(mem, "/d/"+checkpoint.LogStartOffsetFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(lsos) != 1 || lsos[tp0] != 5 {
		t.Fatalf("log start offsets %v, want only t-0 at 5", lsos)
	}
	if _, err := mem.Stat("/d/" + CleanShutdownFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("marker written while open")
	}
	end0 := t0.LogEndOffset()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	var marker struct {
		Version     int   `json:"version"`
		BrokerEpoch int64 `json:"brokerEpoch"`
	}
	if err := json.Unmarshal(readFile(t, mem, filepath.Join("/d", CleanShutdownFile)), &marker); err != nil || marker.BrokerEpoch != 42 {
		t.Fatalf("marker %+v %v", marker, err)
	}
	rps, _ = checkpoint.ReadOffsets(mem, "/d/"+checkpoint.RecoveryPointFile)
	if rps[tp0] != end0 {
		t.Fatalf("recovery point after close %d, want the log end %d", rps[tp0], end0)
	}
	// The checkpoints survive a power loss right after Close, and are used.
	after := mem.CrashClone(vfs.CrashOptions{})
	d, rep, err = OpenDataDir("/d", testOpts(after))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !rep.CleanShutdown || rep.Partitions[0].LogStartOffset != 5 || d.Log(tp0).LogStartOffset() != 5 || d.Log(tp0).LogEndOffset() != end0 {
		t.Fatalf("reopened: %+v", rep.Partitions[0])
	}
}
