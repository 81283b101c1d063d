package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// TestDumplogProducerFiles: the .snapshot and .txnindex files the log
// writes (an idempotent producer, a transactional one aborted by a
// coordinator's marker) are printed by dumplog as Kafka's tool prints
// them, the marker is marked as a control record, and verify finds the
// directory sound.
func TestDumplogProducerFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l, err := segment.Open(dir, &segment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	batch := func(pid int64, seq int32, txn bool) []byte {
		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 2, seq, txn
		b, err := record.AppendBatch(nil, opts, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}, {Timestamp: time.Now().UnixMilli(), Value: []byte("w")}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = 9, 2
	marker, err := record.AppendEndTxnBatch(nil, opts, false, 4, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{batch(8, 0, false), batch(9, 0, true), marker} {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snap, txn, seg := filepath.Join(dir, seg0[:18]+"05.snapshot"), filepath.Join(dir, seg0+".txnindex"), filepath.Join(dir, seg0+".log")
	if _, err := os.Stat(snap); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "dumplog", "--print-data-log", snap, txn, seg)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"producerId: 8 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: -1",
		"firstSequence: 0 lastSequence: 1 lastOffset: 1 offsetDelta: 1",
		"producerId: 9 producerEpoch: 2 coordinatorEpoch: 4 currentTxnFirstOffset: -1",
		"version: 0 producerId: 9 firstOffset: 2 lastOffset: 4 lastStableOffset: 5",
		"isTransactional: true isControl: true",
		"endTxnMarker: ABORT coordinatorEpoch: 4",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("missing %q in\n%s", want, stdout)
		}
	}
	if stdout, stderr, code := run(t, "verify", dir); code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}
