package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/recovery"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCleanRestartSkipsScan: a broker closed cleanly leaves checkpoints and
// the clean-shutdown marker; the next start scans nothing.
func TestCleanRestartSkipsScan(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	cl := newClient(t, s, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("clean"))
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if rep := s.topics.reports[0]; rep.CleanShutdown {
		t.Fatal("fresh dir reported as a clean shutdown")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{recovery.CleanShutdownFile, "recovery-point-offset-checkpoint"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("after a clean shutdown: %v", err)
		}
	}
	s2 := startServer(t, dir)
	rep := s2.topics.reports[0]
	if !rep.CleanShutdown || rep.Totals.SegmentsScanned != 0 || rep.Totals.Partitions != 1 {
		t.Fatalf("clean restart: clean=%v scanned=%d partitions=%d", rep.CleanShutdown, rep.Totals.SegmentsScanned, rep.Totals.Partitions)
	}
	if _, err := os.Stat(filepath.Join(dir, recovery.CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker still present while running: %v", err)
	}
	if got := consumeAll(t, s2, "clean", []int32{0}, 200); len(got) != 200 {
		t.Fatalf("%d records", len(got))
	}
}

// TestSecondBrokerOnSameDirFails: the log dir lock keeps a second broker out
// with a clear error, and the first keeps serving.
func TestSecondBrokerOnSameDirFails(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Start(cfg, &Options{Logger: testLogger()})
	if err == nil {
		s2.Close()
		t.Fatal("second broker on the same log dir started")
	}
	if !errors.Is(err, ErrDataDir) || !errors.Is(err, recovery.ErrLocked) {
		t.Fatalf("second broker: %v", err)
	}
	healthy(t, s)
	// Once the first is gone the dir can be opened again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	startServer(t, dir)
}

// TestPeriodicCheckpoints: log.flush.offset.checkpoint.interval.ms writes the
// recovery-point checkpoint while the broker runs.
func TestPeriodicCheckpoints(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "log.flush.offset.checkpoint.interval.ms=50", "log.flush.interval.messages=1")
	cl := newClient(t, s, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("cp"))
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "recovery-point-offset-checkpoint"))
		if len(b) > 0 && strings.Contains(string(b), "\ncp 0 1\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint not written: %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
