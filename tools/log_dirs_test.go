package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLogDirsDescribe: strata log-dirs --describe against a broker with
// two log dirs prints Kafka's two lines and JSON with each dir's replicas
// and sizes; --topic-list filters; a broker not in the cluster is refused.
func TestLogDirsDescribe(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	s := startBroker(t, d1+","+d2, "num.partitions=2")
	addr := s.Addr().String()
	mustTopics(t, ExitOK, addr, "--create", "--topic", "ld", "--partitions", "2")
	mustTopics(t, ExitOK, addr, "--create", "--topic", "other", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("ld"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("value")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := run(t, "log-dirs", "--bootstrap-server", addr, "--describe", "--topic-list", "ld")
	lines := strings.Split(stdout, "\n")
	if code != ExitOK || len(lines) != 4 || lines[0] != "Querying brokers for log directories information" || lines[1] != "Received log directory information from brokers 0" {
		t.Fatalf("exit %d %q %s", code, stdout, stderr)
	}
	var out logDirsJSON
	if err := json.Unmarshal([]byte(lines[2]), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Brokers) != 1 || len(out.Brokers[0].LogDirs) != 2 {
		t.Fatalf("json %s", lines[2])
	}
	var parts []string
	for i, d := range out.Brokers[0].LogDirs {
		if d.LogDir != []string{d1, d2}[i] || d.Error != nil {
			t.Fatalf("dir %d: %+v", i, d)
		}
		for _, p := range d.Partitions {
			if p.Size <= 0 || p.OffsetLag != 0 || p.IsFuture {
				t.Errorf("%+v", p)
			}
			parts = append(parts, p.Partition)
		}
	}
	if strings.Join(parts, ",") != "ld-0,ld-1" && strings.Join(parts, ",") != "ld-1,ld-0" {
		t.Fatalf("partitions %v (other filtered out)", parts)
	}
	if _, stderr, code := run(t, "log-dirs", "--bootstrap-server", addr, "--describe", "--broker-list", "7"); code != ExitUsage || !strings.Contains(stderr, "broker 7 is not in the cluster") {
		t.Fatalf("unknown broker: exit %d %s", code, stderr)
	}
	if _, stderr, code := run(t, "log-dirs", "--bootstrap-server", addr); code != ExitUsage || !strings.Contains(stderr, "--describe is required") {
		t.Fatalf("no action: exit %d %s", code, stderr)
	}
}
