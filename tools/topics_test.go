package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// topicsStep is one strata topics run of a golden session; the bootstrap
// server is added in front of args.
type topicsStep []string

// runTopicsCmd runs strata topics against addr.
func runTopicsCmd(t *testing.T, addr string, args ...string) groupsOut {
	t.Helper()
	var full []string
	if addr != "" {
		full = append(full, "--bootstrap-server", addr)
	}
	stdout, stderr, code := run(t, append(append([]string{"topics"}, full...), args...)...)
	return groupsOut{stdout, stderr, code}
}

// mustTopics runs strata topics and fails unless it exits with want.
func mustTopics(t *testing.T, want int, addr string, args ...string) groupsOut {
	t.Helper()
	r := runTopicsCmd(t, addr, args...)
	if r.code != want {
		t.Fatalf("strata topics %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

var (
	topicIDText = regexp.MustCompile(`TopicId: [A-Za-z0-9_-]{22}`)
	topicIDJSON = regexp.MustCompile(`"topic_id":"[A-Za-z0-9_-]{22}"`)
)

// maskTopicIDs replaces the topic ids a broker draws at random, after
// checking they have Kafka's form (22 characters of URL-safe base64).
func maskTopicIDs(s string) string {
	s = topicIDText.ReplaceAllString(s, "TopicId: <id>")
	return topicIDJSON.ReplaceAllString(s, `"topic_id":"<id>"`)
}

// checkGolden compares got with testdata/topics/name (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", "topics", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
}

// runSession runs the steps in order against addr and writes each as the
// golden files show it: the command line, stdout, stderr lines prefixed
// "stderr: ", and the exit status.
func runSession(t *testing.T, addr string, steps []topicsStep) string {
	t.Helper()
	var b strings.Builder
	for _, s := range steps {
		r := runTopicsCmd(t, addr, s...)
		fmt.Fprintf(&b, "$ strata topics --bootstrap-server BROKER %s\n", shellJoin(s))
		b.WriteString(maskTopicIDs(r.stdout))
		for _, l := range strings.SplitAfter(r.stderr, "\n") {
			if l != "" {
				b.WriteString("stderr: " + l)
			}
		}
		fmt.Fprintf(&b, "[exit %d]\n", r.code)
	}
	return b.String()
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "*|\\ ") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// TestTopicsSession drives every action of strata topics against a real
// single-node strata broker and compares the whole session with
// testdata/topics/session.txt: Kafka's messages and describe format, the
// exit statuses, the broker's refusals named by Kafka's error.
func TestTopicsSession(t *testing.T) {
	addr := startBroker(t, t.TempDir()).Addr().String()
	got := runSession(t, addr, []topicsStep{
		{"--list"},
		{"--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1"},
		{"--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1"},
		{"--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1", "--if-not-exists"},
		{"--create", "--topic", "billing_v2", "--partitions", "2", "--config", "retention.ms=86400000", "--config", "cleanup.policy = compact"},
		{"--create", "--topic", "rf3", "--partitions", "1", "--replication-factor", "3"},
		{"--create", "--topic", "badconfig", "--partitions", "1", "--config", "no.such.config=1"},
		{"--create", "--topic", "assigned", "--replica-assignment", "0,0"},
		{"--create", "--topic", "elsewhere", "--replica-assignment", "1"},
		{"--create", "--topic", "defaults"},
		{"--list"},
		{"--list", "--topic", "b.*,orders"},
		{"--describe"},
		{"--describe", "--topic", "orders"},
		{"--describe", "--topics-with-overrides"},
		{"--describe", "--under-replicated-partitions"},
		{"--describe", "--unavailable-partitions", "--under-min-isr-partitions", "--at-min-isr-partitions"},
		{"--describe", "--topic", "nope"},
		{"--describe", "--topic", "nope", "--if-exists"},
		{"--describe", "--topic", "order"},
		{"--alter", "--topic", "orders", "--partitions", "5"},
		{"--describe", "--topic", "orders"},
		{"--alter", "--topic", "orders", "--partitions", "4"},
		{"--alter", "--topic", "assigned", "--partitions", "3", "--replica-assignment", "0,0,0"},
		{"--describe", "--topic", "assigned"},
		{"--alter", "--topic", "nope", "--partitions", "2"},
		{"--alter", "--topic", "nope", "--partitions", "2", "--if-exists"},
		{"--delete", "--topic", "billing.*|defaults"},
		{"--delete", "--topic", "billing_v2"},
		{"--delete", "--topic", "billing_v2", "--if-exists"},
		{"--list"},
		{"--list", "--json"},
		{"--describe", "--topic", "orders", "--json"},
		{"--create", "--topic", "j", "--partitions", "2", "--config", "segment.bytes=1048576", "--json"},
		{"--create", "--topic", "j", "--partitions", "2", "--json"},
		{"--alter", "--topic", "j", "--partitions", "3", "--json"},
		{"--delete", "--topic", "j", "--json"},
	})
	checkGolden(t, "session.txt", got)
}

// TestTopicsInternal: __consumer_offsets is listed and described unless
// --exclude-internal, and the broker's refusal to delete it is exit 1 with
// Kafka's error name.
func TestTopicsInternal(t *testing.T) {
	addr := startBroker(t, t.TempDir(), "offsets.topic.num.partitions=2").Addr().String()
	_, adm := adminFor(t, addr)
	makeTopic(t, addr, "plain", 1, map[int32]int{0: 1})
	// Committing an offset makes the coordinator create its topic.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "plain", Partition: 0, At: 1})
	if _, err := adm.CommitOffsets(groupsCtx(t), "g", offs); err != nil {
		t.Fatal(err)
	}
	if r := mustTopics(t, ExitOK, addr, "--list"); r.stdout != "__consumer_offsets\nplain\n" {
		t.Errorf("--list: %q", r.stdout)
	}
	if r := mustTopics(t, ExitOK, addr, "--list", "--exclude-internal"); r.stdout != "plain\n" {
		t.Errorf("--list --exclude-internal: %q", r.stdout)
	}
	r := mustTopics(t, ExitOK, addr, "--describe", "--json")
	var ds []describedTopicJSON
	if err := json.Unmarshal([]byte(r.stdout), &ds); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(ds) != 2 || ds[0].Topic != "__consumer_offsets" || !ds[0].Internal || ds[0].PartitionCount != 2 || ds[1].Internal {
		t.Errorf("--describe --json: %s", r.stdout)
	}
	// An include list with --exclude-internal drops the internal topic too.
	if r := mustTopics(t, ExitProblems, addr, "--describe", "--topic", "__consumer_offsets", "--exclude-internal"); !strings.Contains(r.stderr, "Topic '__consumer_offsets' does not exist as expected") {
		t.Errorf("stderr: %s", r.stderr)
	}
	r = mustTopics(t, ExitProblems, addr, "--delete", "--topic", "__consumer_offsets")
	if !strings.Contains(r.stderr, "INVALID_REQUEST") {
		t.Errorf("deleting __consumer_offsets: %s", r.stderr)
	}
	mustTopics(t, ExitOK, addr, "--describe", "--topic", "__consumer_offsets")
}
