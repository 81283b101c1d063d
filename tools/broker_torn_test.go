package tools

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/server"
)

// syncBuffer is a bytes.Buffer safe for the broker's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBrokerStartKeepsSegmentsAfterTornMiddle: a broker shut down cleanly,
// then one of its partition's middle segments torn mid-batch; the next start
// cuts only that segment's tail (ERROR, with the offsets and bytes, the bytes
// kept in the partition's recovery-backup directory) and serves every record
// of the later segments. Before, start deleted every later segment
// (segments_removed at WARN, no backup).
func TestBrokerStartKeepsSegmentsAfterTornMiddle(t *testing.T) {
	root := t.TempDir()
	start := func(logs *syncBuffer) *server.Server {
		cfg, err := server.LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "strata.metrics.listener=127.0.0.1:0", "log.dirs=" + root, "log.segment.bytes=4096"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.Start(cfg, &server.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	var logs1 syncBuffer
	s := start(&logs1)
	_, adm := adminFor(t, s.Addr().String())
	ctx := groupsCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "torn"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	const rounds, per = 60, 5
	for i := 0; i < rounds; i++ {
		var recs []*kgo.Record
		for j := 0; j < per; j++ {
			recs = append(recs, &kgo.Record{Topic: "torn", Partition: 0, Value: []byte(fmt.Sprintf("record-%03d-%s", i*per+j, strings.Repeat("v", 50)))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(root, "torn-0")
	segs, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	if len(segs) < 4 {
		t.Fatalf("want at least 4 segments, have %d", len(segs))
	}
	// Tear the second segment in the middle of its second batch.
	torn := segs[1]
	data, err := os.ReadFile(torn)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseEntryHeader(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	pos := h.TotalSize()
	if err := os.Truncate(torn, pos+20); err != nil {
		t.Fatal(err)
	}
	var nextBase int64
	fmt.Sscanf(filepath.Base(segs[2]), "%d.log", &nextBase)
	lostFrom := h.LastOffset + 1

	var logs2 syncBuffer
	s = start(&logs2)
	got := franzConsume(t, s.Addr().String(), "torn", rounds*per-int(nextBase-lostFrom))
	for i, r := range got {
		want := int64(i)
		if want >= lostFrom {
			want += nextBase - lostFrom
		}
		if r.Offset != want || !strings.HasPrefix(string(r.Value), fmt.Sprintf("record-%03d-", want)) {
			t.Fatalf("record %d: offset %d %q, want offset %d", i, r.Offset, r.Value, want)
		}
	}
	if last := got[len(got)-1].Offset; last != rounds*per-1 {
		t.Fatalf("last record served %d, want %d", last, rounds*per-1)
	}
	for _, p := range segs {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("segment %s gone: %v", p, err)
		}
	}
	out := logs2.String()
	for _, want := range []string{"level=ERROR", "below the recovery point", fmt.Sprintf("position=%d", pos), "bytes=20",
		fmt.Sprintf("first_offset_lost=%d", lostFrom), filepath.Join(pdir, recovery.BackupDirName)} {
		if !strings.Contains(out, want) {
			t.Fatalf("broker log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "segments_removed=1") || strings.Contains(out, "removed segment after a cut") {
		t.Fatalf("broker log reports removed segments:\n%s", out)
	}
	saved, _ := filepath.Glob(filepath.Join(pdir, recovery.BackupDirName, "*", "torn-0", filepath.Base(torn)+"@*"))
	if len(saved) != 1 {
		t.Fatalf("backup files %v", saved)
	}
	if b, err := os.ReadFile(saved[0]); err != nil || !bytes.Equal(b, data[pos:pos+20]) {
		t.Fatalf("backup %s holds %d bytes (%v), want the 20 cut", saved[0], len(b), err)
	}
}
