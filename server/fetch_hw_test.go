package server

import (
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFetchWaitsForFlush: with log.flush.interval.messages=1 a produced
// record is fetched, listed as the latest offset, found by timestamp and
// counted in the high watermark only after its fsync returns, as in Kafka (the flush is part of
// the append, and the high watermark moves after it). The partition's fsync
// is held open through an injected file system.
func TestFetchWaitsForFlush(t *testing.T) {
	gate := vfs.NewSyncGate("held-0/00000000000000000000" + segment.LogSuffix)
	fsys := vfs.Inject(vfs.OS, gate)
	open := func(dir string, o *segment.Options) (PartitionLog, error) {
		o.FS = fsys
		return segment.Open(dir, o)
	}
	ov := []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + t.TempDir(), "log.flush.interval.messages=1"}
	cfg, err := LoadConfig("", ov, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(cfg, &Options{Logger: testLogger(), OpenLog: open})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer gate.Release() // a failing check must not leave an fsync held (the deferred Close would wait on it)
	ctx := testCtx(t)
	prod := newClient(t, s, kgo.DefaultProduceTopic("held"), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	t0 := time.UnixMilli(1_700_000_000_000)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("first"), Timestamp: t0}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	gate.Hold()
	done := make(chan error, 1)
	go func() {
		done <- prod.ProduceSync(ctx, &kgo.Record{Value: []byte("second"), Timestamp: t0.Add(time.Second)}).FirstErr()
	}()
	select {
	case <-gate.Entered():
	case <-time.After(10 * time.Second):
		t.Fatal("the second produce never reached its fsync")
	}
	admin := newClient(t, s)
	fetch := func(wait int32) (hw int64, n int) {
		req := fetchRequest(12, "held", 0, 1)
		req.MaxWaitMillis, req.MinBytes = wait, 1
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch at offset 1: error code %d", p.ErrorCode)
		}
		return p.HighWatermark, len(p.RecordBatches)
	}
	if hw, n := fetch(200); hw != 1 || n != 0 {
		t.Fatalf("fetch during the fsync: high watermark %d, %d record bytes; want 1 and none", hw, n)
	}
	listed := func(ts int64) int64 {
		resp, err := listOffsetsRequest("held", 0, ts).RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("ListOffsets %d: error code %d", ts, p.ErrorCode)
		}
		return p.Offset
	}
	second := t0.Add(time.Second / 2).UnixMilli() // only the second record is at or after it
	if off := listed(-1); off != 1 {
		t.Fatalf("ListOffsets latest during the fsync: %d, want 1", off)
	}
	if off := listed(second); off != -1 {
		t.Fatalf("ListOffsets by timestamp during the fsync: %d, want -1 (the record is past the high watermark)", off)
	}
	if off := listed(-3); off != -1 {
		t.Fatalf("ListOffsets max timestamp during the fsync: %d, want -1 (that record is past the high watermark)", off)
	}

	// A fetch waiting for data is answered once the fsync returns.
	got := make(chan int, 1)
	parks := fetchParks.Load()
	go func() { _, n := fetch(10_000); got <- n }()
	waitFor(t, 20*time.Second, "the fetch to park", func() bool { return fetchParks.Load() > parks })
	gate.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n == 0 {
			t.Fatal("the waiting fetch returned no records after the fsync")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting fetch was not woken by the fsync")
	}
	if hw, n := fetch(0); hw != 2 || n == 0 {
		t.Fatalf("fetch after the fsync: high watermark %d, %d record bytes; want 2 and the record", hw, n)
	}
	if off := listed(second); off != 1 {
		t.Fatalf("ListOffsets by timestamp after the fsync: %d, want 1", off)
	}
	if off := listed(-3); off != 1 {
		t.Fatalf("ListOffsets max timestamp after the fsync: %d, want 1", off)
	}
}
