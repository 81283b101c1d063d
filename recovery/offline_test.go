package recovery

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// offlineRecorder records OnOffline calls.
type offlineRecorder struct {
	mu    sync.Mutex
	calls []error
}

func (r *offlineRecorder) on(_ string, err error) {
	r.mu.Lock()
	r.calls = append(r.calls, err)
	r.mu.Unlock()
}

func (r *offlineRecorder) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func markerExists(fsys vfs.FS, dir string) bool {
	_, err := fsys.Stat(filepath.Join(dir, CleanShutdownFile))
	return err == nil
}

// A failed fsync in one partition takes the whole data directory offline:
// the other partition refuses appends too, the periodic checkpoint is not
// written, Close writes no clean-shutdown marker (so the next start scans
// instead of trusting the files), and the failure is reported once.
func TestFailedFsyncTakesDataDirOffline(t *testing.T) {
	mem := vfs.NewMem()
	buildDataDir(t, mem, "/d", []string{"a-0", "b-0"}, 4)
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.Contains(op.Path, "/a-0/") {
			return vfs.ErrInjected
		}
		return nil
	})
	rec := &offlineRecorder{}
	o := testOpts(vfs.Inject(mem, inj))
	o.OnOffline = rec.on
	d, _, err := OpenDataDir("/d", o)
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.Log(TopicPartition{Topic: "a", Partition: 0}), d.Log(TopicPartition{Topic: "b", Partition: 0})
	if _, err := a.Append(batch(t, 50, 2, 60)); err != nil {
		t.Fatal(err)
	}
	rpBefore, err := checkpoint.ReadOffsets(mem, "/d/"+checkpoint.RecoveryPointFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); !errors.Is(err, segment.ErrOffline) || !vfs.IsInjected(err) {
		t.Fatalf("flush with a failing fsync: %v", err)
	}
	if _, err := b.Append(batch(t, 51, 2, 60)); !errors.Is(err, segment.ErrOffline) {
		t.Fatalf("append to another partition of the offline directory: %v", err)
	}
	if !d.Offline() || rec.n() != 1 || !vfs.IsInjected(rec.calls[0]) {
		t.Fatalf("offline %v, %d reports (%v)", d.Offline(), rec.n(), rec.calls)
	}
	if err := d.WriteCheckpoints(); !errors.Is(err, segment.ErrOffline) {
		t.Fatalf("checkpoint of an offline directory: %v", err)
	}
	rpAfter, err := checkpoint.ReadOffsets(mem, "/d/"+checkpoint.RecoveryPointFile)
	if err != nil || fmt.Sprint(rpAfter) != fmt.Sprint(rpBefore) {
		t.Fatalf("recovery-point checkpoint changed: %v -> %v (%v)", rpBefore, rpAfter, err)
	}
	if err := d.Close(); !errors.Is(err, segment.ErrOffline) {
		t.Fatalf("close of an offline directory: %v", err)
	}
	if markerExists(mem, "/d") {
		t.Fatal("clean-shutdown marker written for an offline directory")
	}
	if rec.n() != 1 {
		t.Fatalf("%d offline reports, want 1", rec.n())
	}
	d, rep, err := OpenDataDir("/d", testOpts(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if rep.CleanShutdown {
		t.Fatal("the restart after the failure trusted a clean shutdown")
	}
}

// A failed checkpoint write takes the directory offline (its state on disk
// is unknown), as in Kafka.
func TestFailedCheckpointTakesDataDirOffline(t *testing.T) {
	mem := vfs.NewMem()
	buildDataDir(t, mem, "/d", []string{"a-0"}, 4)
	var armed bool
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if armed && op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".tmp") {
			return vfs.ErrInjected
		}
		return nil
	})
	rec := &offlineRecorder{}
	o := testOpts(vfs.Inject(mem, inj))
	o.OnOffline = rec.on
	d, _, err := OpenDataDir("/d", o)
	if err != nil {
		t.Fatal(err)
	}
	armed = true
	if err := d.WriteCheckpoints(); !errors.Is(err, segment.ErrOffline) || !vfs.IsInjected(err) {
		t.Fatalf("checkpoint with a failing fsync: %v", err)
	}
	if _, err := d.Log(TopicPartition{Topic: "a", Partition: 0}).Append(batch(t, 9, 1, 10)); !errors.Is(err, segment.ErrOffline) {
		t.Fatalf("append after the failed checkpoint: %v", err)
	}
	if err := d.Close(); err == nil || markerExists(mem, "/d") {
		t.Fatalf("close after the failed checkpoint: %v, marker %v", err, markerExists(mem, "/d"))
	}
	if rec.n() != 1 {
		t.Fatalf("%d offline reports, want 1", rec.n())
	}
}

// A log opened outside the directory and added to it shares its fate: a
// failure of either takes both offline.
func TestAddLogJoinsHealth(t *testing.T) {
	mem := vfs.NewMem()
	d, _, err := OpenDataDir("/d", testOpts(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tp := TopicPartition{Topic: "n", Partition: 0}
	so := testSegOpts()
	so.FS = mem
	l, err := segment.Open(d.PartitionDir(tp), so) // a Health of its own
	if err != nil {
		t.Fatal(err)
	}
	if err := d.AddLog(tp, l); err != nil {
		t.Fatal(err)
	}
	d.Health().Fail(vfs.ErrInjected)
	if _, err := l.Append(batch(t, 1, 1, 10)); !errors.Is(err, segment.ErrOffline) {
		t.Fatalf("append to an added log of an offline directory: %v", err)
	}
}

// The I/O error loop over a broker-like session on a data directory: open,
// appends to two partitions (one with flush.messages=1), a periodic
// checkpoint, more appends, clean close. For every k the k-th filesystem
// operation fails once. Then: the failure surfaced (an error returned, or
// the directory reported offline), an offline directory wrote no marker,
// and the directory, reopened after a power loss, holds a prefix of what
// was appended including every append acknowledged under flush.messages=1,
// with a marker only when the session's Close succeeded.
func TestIOErrorSession(t *testing.T) {
	base := vfs.NewMem()
	buildDataDir(t, base, "/d", []string{"a-0", "b-0"}, 3)
	a, b := TopicPartition{Topic: "a", Partition: 0}, TopicPartition{Topic: "b", Partition: 0}
	optsFor := func(topic string) *segment.Options {
		so := testSegOpts()
		if topic == "a" {
			so.FlushMessages = 1
		}
		return so
	}
	type result struct {
		err     error
		acked   []uint32 // CRCs of a-0's appends that returned nil, in order
		offline int
		ckErrs  int // unreadable checkpoints reported by the open
	}
	session := func(fsys vfs.FS) result {
		var r result
		rec := &offlineRecorder{}
		o := testOpts(fsys)
		o.OptionsFor = optsFor
		o.OnOffline = rec.on
		d, rep, err := OpenDataDir("/d", o)
		if err != nil {
			r.err = err
			return r
		}
		r.ckErrs = len(rep.CheckpointErrors)
		step := func(i int) error {
			ba := batch(t, 200+i, 2, 150)
			if _, err := d.Log(a).Append(ba); err != nil {
				return err
			}
			r.acked = append(r.acked, record.Batch(ba).CRC())
			_, err := d.Log(b).Append(batch(t, 300+i, 2, 150))
			return err
		}
		for i := 0; i < 4 && r.err == nil; i++ {
			r.err = step(i)
		}
		if r.err == nil {
			r.err = d.WriteCheckpoints()
		}
		for i := 4; i < 8 && r.err == nil; i++ {
			r.err = step(i)
		}
		if err := d.Close(); r.err == nil {
			r.err = err
		}
		r.offline = rec.n()
		return r
	}
	want := batchCRCsMem(t, base, "/d/a-0")
	counter := vfs.NewCounter()
	if r := session(vfs.Inject(cloneMem(base), counter)); r.err != nil {
		t.Fatal(r.err)
	}
	K := counter.Count()
	offline := 0
	for k := 0; k < K; k++ {
		mem := cloneMem(base)
		fail := vfs.FailAt(k)
		r := session(vfs.Inject(mem, fail))
		if fail.Injected() == 0 {
			continue
		}
		where := fmt.Sprintf("k=%d/%d", k, K)
		if r.err == nil && r.offline == 0 && r.ckErrs == 0 {
			t.Errorf("%s: the injected error was swallowed", where)
		}
		if r.err != nil && !vfs.IsInjected(r.err) {
			t.Errorf("%s: error does not wrap the injected one: %v", where, r.err)
		}
		if r.offline > 1 {
			t.Errorf("%s: offline reported %d times", where, r.offline)
		}
		if r.offline > 0 {
			offline++
			if markerExists(mem, "/d") {
				t.Errorf("%s: clean-shutdown marker written for an offline directory", where)
			}
		}
		if r.err != nil && markerExists(mem, "/d") && r.offline > 0 {
			t.Errorf("%s: marker after a failed session", where)
		}
		after := mem.CrashClone(vfs.CrashOptions{})
		d, _, err := OpenDataDir("/d", testOpts(after))
		if err != nil {
			t.Errorf("%s: reopen after a power loss: %v", where, err)
			continue
		}
		if err := d.Close(); err != nil {
			t.Errorf("%s: close after the reopen: %v", where, err)
			continue
		}
		got := batchCRCsMem(t, after, "/d/a-0")
		for i := range got {
			if i >= len(want)+8 || (i < len(want) && got[i] != want[i]) {
				t.Errorf("%s: batch %d of a-0 was never appended there", where, i)
				break
			}
		}
		if len(got) < len(want)+len(r.acked) {
			t.Errorf("%s: a-0 holds %d batches, %d were there and %d acknowledged under flush.messages=1", where, len(got), len(want), len(r.acked))
		}
		for i, crc := range r.acked {
			if j := len(want) + i; j < len(got) && got[j] != crc {
				t.Errorf("%s: acknowledged batch %d differs", where, i)
			}
		}
	}
	t.Logf("%d failure points, %d took the directory offline", K, offline)
	if offline == 0 {
		t.Error("no failure point took the directory offline")
	}
}
