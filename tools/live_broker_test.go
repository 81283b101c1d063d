package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// leafCommands lists every runnable subcommand path ("bench clean").
func leafCommands(prefix string, cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		name := strings.TrimSpace(prefix + " " + c.Name)
		if len(c.Subcommands) > 0 {
			out = append(out, leafCommands(name, c.Subcommands)...)
			continue
		}
		out = append(out, name)
	}
	return out
}

// liveData fills a running broker: topic "live" (2 partitions, 150 records
// each) and the compacted topic "kv" (100 keyed records over 10 keys).
func liveData(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "live"); err != nil {
		t.Fatal(err)
	}
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "kv"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 300 {
		recs = append(recs, &kgo.Record{Topic: "live", Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)})
	}
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: "kv", Key: fmt.Appendf(nil, "k%d", i%10), Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// countRecords consumes every partition of topic from the start.
func countRecords(t *testing.T, addr, topic string, want int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	for n < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(*kgo.Record) { n++ })
	}
	return n
}

// TestToolsAgainstLiveBroker is the audit of every subcommand against the
// data directory of a running broker: each one that writes a data or
// partition directory refuses it (exit 2, "locked"), as recover and compact
// do, and leaves its records alone; each one that only reads works and
// says the directory is in use where that matters. The table must name
// every subcommand, so a new one cannot skip the audit.
func TestToolsAgainstLiveBroker(t *testing.T) {
	data := t.TempDir()
	s := startBroker(t, data)
	addr := s.Addr().String()
	liveData(t, addr)
	part, kv := filepath.Join(data, "live-0"), filepath.Join(data, "kv-0")
	seg := filepath.Join(part, seg0+".log")

	writers := map[string][][]string{
		"recover":     {{data}, {part}},
		"compact":     {{data}, {kv}, {"--from-start", kv}, {"--dry-run", data}},
		"bench clean": {{"--dir", part}, {"--dir", kv}},
		// A new partition-named directory inside a live data directory.
		"bench log": {{"--dir", filepath.Join(data, "bench-0"), "--records", "10", "--runs", "1", "--keep"}},
	}
	readers := map[string][][]string{
		"dumplog":       {{seg}, {"--deep-iteration", seg}},
		"verify":        {{data}, {part}, {seg}},
		"bench recover": {{"--dir", part, "--runs", "1"}},
		"recover":       {{"--dry-run", data}},
	}
	// Subcommands that never open a data directory: they talk to a broker
	// over the network, start one (which takes the lock itself: checked
	// below), or print.
	other := map[string]string{
		"groups":        "Kafka protocol only",
		"mirror":        "Kafka protocol only (a consumer group on the source, a producer on the target)",
		"acls":          "Kafka protocol only",
		"configs":       "Kafka protocol only",
		"topics":        "Kafka protocol (or ZooKeeper) only",
		"reassign":      "Kafka protocol only (AlterPartitionReassignments, ListPartitionReassignments, Metadata)",
		"elect-leaders": "Kafka protocol only (ElectLeaders)",
		"log-dirs":      "Kafka protocol only (DescribeLogDirs: the broker reads its own dirs)",
		"bench broker":  "its own temporary data directory",
		"bench cluster": "its own temporary directories (MkdirTemp under --dir) for ZooKeeper and the brokers it starts",
		"bench mirror":  "its own temporary directories (MkdirTemp under --dir) for the two brokers it starts",
		"broker":        "takes the lock itself (a second broker is tried below)",
		"version":       "prints",
	}
	var missing []string
	for _, name := range leafCommands("", NewApp(nil, nil).Commands) {
		_, w := writers[name]
		_, r := readers[name]
		_, o := other[name]
		if !w && !r && !o {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("subcommands not covered by the live-broker audit: %v", missing)
	}

	for name, runs := range writers {
		for _, args := range runs {
			full := append(strings.Fields(name), args...)
			stdout, stderr, code := run(t, full...)
			if code != ExitUsage || !strings.Contains(stderr, "locked") || !strings.Contains(stderr, data) {
				t.Errorf("%v on a live broker's directory: exit %d, want %d with \"locked\"\n%s%s", full, code, ExitUsage, stdout, stderr)
			}
		}
	}
	for name, runs := range readers {
		for _, args := range runs {
			full := append(strings.Fields(name), args...)
			stdout, stderr, code := run(t, full...)
			if code != ExitOK {
				t.Errorf("%v on a live broker's directory: exit %d, want 0\n%s%s", full, code, stdout, stderr)
			}
			if name == "verify" && (!strings.Contains(stderr, "is in use by a running broker") || !strings.Contains(stdout, "no problems")) {
				t.Errorf("%v does not say the directory is in use, or reports problems:\n%s%s", full, stdout, stderr)
			}
		}
	}
	// A second broker on the same directory is refused too.
	done := make(chan int, 1)
	go func() {
		_, _, code := run(t, "broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs="+data)
		done <- code
	}()
	select {
	case code := <-done:
		if code != ExitUsage {
			t.Errorf("second broker on a live directory: exit %d, want %d", code, ExitUsage)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a second broker started on a live directory")
	}

	// Nothing was lost, neither now nor after a restart.
	if n := countRecords(t, addr, "live", 300); n != 300 {
		t.Errorf("live broker serves %d records of live, want 300", n)
	}
	if n := countRecords(t, addr, "kv", 100); n != 100 {
		t.Errorf("live broker serves %d records of kv, want 100", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Stopped: nothing to note, and the closed segments' indexes are trimmed.
	if stdout, stderr, code := run(t, "verify", data); code != ExitOK || strings.Contains(stderr, "in use") {
		t.Errorf("verify after the broker stopped: exit %d\n%s%s", code, stdout, stderr)
	}
	s2 := startBroker(t, data)
	if n := countRecords(t, s2.Addr().String(), "live", 300); n != 300 {
		t.Errorf("after a restart: %d records of live, want 300", n)
	}
	if n := countRecords(t, s2.Addr().String(), "kv", 100); n != 100 {
		t.Errorf("after a restart: %d records of kv, want 100", n)
	}
}
