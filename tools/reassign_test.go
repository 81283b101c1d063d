package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/cluster"
)

func runReassignCmd(t *testing.T, addr string, args ...string) groupsOut {
	t.Helper()
	stdout, stderr, code := run(t, append([]string{"reassign", "--bootstrap-server", addr}, args...)...)
	return groupsOut{stdout, stderr, code}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitTopicReplicas polls strata topics --describe until partition 0 of
// topic shows replicas and a full ISR of the same brokers.
func waitTopicReplicas(t *testing.T, addr, topic, replicas string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := runTopicsCmd(t, addr, "--describe", "--topic", topic)
		if m := clusterPartitionLineAny.FindStringSubmatch(r.stdout); m != nil && m[1] == replicas && sameSet(m[1], m[2]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had replicas %s with a full ISR: %q %s", topic, replicas, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sameSet(a, b string) bool {
	x, y := strings.Split(a, ","), strings.Split(b, ",")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestReassignAgainstCluster: strata reassign on four in-process brokers
// and a real ZooKeeper. Bad plans (malformed JSON, an unknown broker, a
// duplicate replica, a partition that does not exist) are refused with a
// clear error and start nothing; --execute moves moving-0 from {1,2,3} to
// {2,3,4} printing the rollback JSON first, --verify reports it complete,
// every record written before is still read; --generate and
// --decommission-broker propose plans in Kafka's JSON.
func TestReassignAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and four brokers")
	}
	bs := startClusterBrokers(t, 4)
	addr := bs[0].Addr().String()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := runTopicsCmd(t, addr, "--create", "--topic", "moving", "--replica-assignment", "1:2:3")
		if r.code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.Addr().String())
	}
	for _, a := range addrs { // every broker knows it: the tool asks any of them
		waitTopicReplicas(t, a, "moving", "1,2,3")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("moving"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 200
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%03d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	bad := []struct{ name, plan, want string }{
		{"malformed", `{"version":1,"partitions":[{"topic":"moving",`, "malformed reassignment JSON"},
		{"unknown broker", `{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[2,3,9]}]}`, "brokers that are not in the cluster: [9]"},
		{"duplicate replica", `{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[2,3,2]}]}`, "contains broker 2 twice"},
		{"unknown partition", `{"version":1,"partitions":[{"topic":"moving","partition":5,"replicas":[2,3,4]}]}`, "partitions that do not exist: moving-5"},
		{"unknown topic", `{"version":1,"partitions":[{"topic":"nope","partition":0,"replicas":[2,3,4]}]}`, "partitions that do not exist: nope-0"},
	}
	for _, tc := range bad {
		r := runReassignCmd(t, addr, "--execute", "--reassignment-json-file", writeFile(t, "plan.json", tc.plan))
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 with %q", tc.name, r.code, r.stdout, r.stderr, tc.want)
		}
	}
	waitTopicReplicas(t, addr, "moving", "1,2,3") // nothing started

	plan := writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[2,3,4]}]}`)
	r := runReassignCmd(t, addr, "--execute", "--reassignment-json-file", plan)
	want := "Current partition replica assignment\n\n" +
		`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}` +
		"\n\nSave this to use as the --reassignment-json-file option during rollback\n" +
		"Successfully started partition reassignments for moving-0\n"
	if r.code != ExitOK || r.stdout != want {
		t.Fatalf("execute: exit %d\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		r = runReassignCmd(t, addr, "--verify", "--reassignment-json-file", plan)
		if r.code == ExitOK && r.stdout == "Status of partition reassignment:\nReassignment of partition moving-0 is complete.\nThrottle was removed.\n" {
			break
		}
		if r.code != ExitOK || !strings.Contains(r.stdout, "is still in progress.") || time.Now().After(deadline) {
			t.Fatalf("verify: exit %d %q %s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitTopicReplicas(t, addr, "moving", "2,3,4")
	r = runReassignCmd(t, addr, "--cancel", "--reassignment-json-file", plan)
	if r.code != ExitOK || r.stdout != "None of the specified partition reassignments are active.\n" {
		t.Fatalf("cancel after completion: exit %d %q %s", r.code, r.stdout, r.stderr)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("moving"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records after the move", len(got), n)
		}
		fs.EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("v%03d", i) {
			t.Fatalf("record %d after the move: %q", i, v)
		}
	}

	// --generate over brokers 1,2 and --decommission-broker 4.
	topics := writeFile(t, "topics.json", `{"version":1,"topics":[{"topic":"moving"}]}`)
	r = runReassignCmd(t, addr, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,2,3")
	lines := strings.Split(r.stdout, "\n")
	if r.code != ExitOK || len(lines) != 6 || lines[0] != "Current partition replica assignment" || lines[3] != "Proposed partition reassignment configuration" {
		t.Fatalf("generate: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	var proposed struct {
		Partitions []planPartition `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(lines[4]), &proposed); err != nil || len(proposed.Partitions) != 1 || !sameSet(fmtList(proposed.Partitions[0].Replicas), "1,2,3") {
		t.Fatalf("generate proposed %q: %v", lines[4], err)
	}
	r = runReassignCmd(t, addr, "--generate", "--decommission-broker", "4")
	if r.code != ExitOK || !strings.Contains(r.stdout, `Proposed partition reassignment configuration`+"\n"+`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[2,3,1],"log_dirs":["any","any","any"]}]}`) {
		t.Fatalf("decommission: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	// Executing the decommission plan empties broker 4.
	decom := writeFile(t, "decom.json", strings.Split(r.stdout, "\n")[4])
	if r = runReassignCmd(t, addr, "--execute", "--reassignment-json-file", decom); r.code != ExitOK {
		t.Fatalf("execute decommission: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	waitVerified(t, addr, decom)
	waitTopicReplicas(t, addr, "moving", "2,3,1")

	// Replication factor 1 -> 3.
	mustTopics(t, ExitOK, addr, "--create", "--topic", "single", "--replica-assignment", "4")
	for _, a := range addrs { // every broker knows it: the tool asks any of them
		waitTopicReplicas(t, a, "single", "4")
	}
	grow := writeFile(t, "grow.json", `{"version":1,"partitions":[{"topic":"single","partition":0,"replicas":[4,1,2]}]}`)
	if r = runReassignCmd(t, addr, "--execute", "--reassignment-json-file", grow); r.code != ExitOK {
		t.Fatalf("execute rf 3: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	waitVerified(t, addr, grow)
	waitTopicReplicas(t, addr, "single", "4,1,2")

	for _, args := range [][]string{{"--execute", "--throttle", "0"}, {"--verify", "--throttle", "1000"}} {
		r = runReassignCmd(t, addr, append(args, "--reassignment-json-file", plan)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "--throttle") {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
		}
	}
}

// waitVerified polls --verify until every partition of plan is complete.
func waitVerified(t *testing.T, addr, plan string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := runReassignCmd(t, addr, "--verify", "--reassignment-json-file", plan)
		if r.code == ExitOK && !strings.Contains(r.stdout, "in progress") {
			return
		}
		if r.code != ExitOK || time.Now().After(deadline) {
			t.Fatalf("verify %s: exit %d %q %s", plan, r.code, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func fmtList(rs []int32) string {
	s := fmtReplicas(rs)
	return s[1 : len(s)-1]
}

// TestDecommissionPlan: every replica leaves the broker, no partition gets
// two replicas on one broker, and the replacements spread (preferred
// leaderships first).
func TestDecommissionPlan(t *testing.T) {
	cur := []planPartition{
		{Topic: "a", Partition: 0, Replicas: []int32{4, 1, 2}},
		{Topic: "a", Partition: 1, Replicas: []int32{1, 4, 3}},
		{Topic: "a", Partition: 2, Replicas: []int32{4, 2, 3}},
		{Topic: "a", Partition: 3, Replicas: []int32{2, 3, 1}},
	}
	plan, err := decommissionPlan(cur, 4, []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(plan)
	want := "[{a 0 [3 1 2] []} {a 1 [1 2 3] []} {a 2 [1 2 3] []}]"
	if got != want {
		t.Fatalf("plan %s, want %s", got, want)
	}
	if _, err := decommissionPlan([]planPartition{{Topic: "a", Replicas: []int32{4, 1, 2}}}, 4, []int32{1, 2}); err == nil {
		t.Fatal("a partition with replicas on every other broker cannot move")
	}
}

var clusterPartitionLineAny = regexp.MustCompile(`Partition: 0\tLeader: (?:-?\d+|none)\tReplicas: ([\d,]+)\tIsr: ([\d,]+)`)

// TestReassignZnodeAgainstCluster: Kafka's legacy way, the JSON written to
// /admin/reassign_partitions in a real ZooKeeper, moves a partition on
// real brokers; the controller deletes the znode when it is done.
func TestReassignZnodeAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and four brokers")
	}
	bs, connect := startClusterBrokersZK(t, 4)
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.Addr().String())
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if r := runTopicsCmd(t, addrs[0], "--create", "--topic", "legacy", "--replica-assignment", "1:2:3"); r.code == ExitOK {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitTopicReplicas(t, addrs[0], "legacy", "1,2,3")
	zk, err := cluster.DialZK(cluster.ZKConfig{Connect: connect, SessionTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	plan := cluster.EncodeReassignPartitions([]cluster.PartitionReplicas{{Topic: "legacy", Partition: 0, Replicas: []int32{4, 3, 2}}})
	if _, err := zk.Create(cluster.ReassignPartitionsPath, plan, cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	waitTopicReplicas(t, addrs[0], "legacy", "4,3,2")
	for deadline := time.Now().Add(60 * time.Second); ; {
		ok, _, err := zk.Exists(cluster.ReassignPartitionsPath)
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there: %v", cluster.ReassignPartitionsPath, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
