package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestKcatBalancedConsumer: kcat -G (librdkafka's balanced consumer:
// FindCoordinator v2, JoinGroup v5 with MEMBER_ID_REQUIRED, SyncGroup v3,
// OffsetFetch v7, OffsetCommit v7, LeaveGroup v1) consumes and commits; a
// second run resumes from the committed offsets.
func TestKcatBalancedConsumer(t *testing.T) {
	kcatBin(t)
	s := startGroupServer(t, t.TempDir())
	const topic = "kcat-group"
	createTopic(t, s, topic, 3)
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	kcat(t, s, in.String(), "-P", "-t", topic, "-K", ":")

	consume := func(n int) []kcatRecord {
		out := kcat(t, s, "", "-G", "kcat-g", topic, "-c", fmt.Sprint(n), "-f", kcatFormat,
			"-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100")
		return parseKcat(t, out)
	}
	first := consume(12)
	if len(first) != 12 {
		t.Fatalf("first run consumed %d records, want 12", len(first))
	}
	committed := fetchCommitted(t, newClient(t, s), "kcat-g", topic)
	var sum int64
	for _, o := range committed {
		sum += o
	}
	if sum != 12 {
		t.Fatalf("committed %v (sum %d), want the 12 consumed records committed", committed, sum)
	}
	second := consume(18)
	seen := map[string]bool{}
	for _, r := range append(first, second...) {
		k := fmt.Sprintf("%d@%d", r.Partition, r.Offset)
		if seen[k] {
			t.Fatalf("record %s consumed twice: the second run did not resume from the commits %v", k, committed)
		}
		seen[k] = true
	}
	if len(seen) != 30 {
		t.Fatalf("%d distinct records over both runs, want 30", len(seen))
	}
	for _, r := range second {
		if r.Offset < committed[r.Partition] {
			t.Fatalf("second run got %d@%d below the committed %d", r.Partition, r.Offset, committed[r.Partition])
		}
	}
}
