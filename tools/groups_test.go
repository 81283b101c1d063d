package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupsBroker is the address of a broker with a group coordinator: the one
// named by $STRATA_GROUPS_BROKER (any Kafka-compatible broker, to check the
// tool against a peer), else a strata broker started in process.
func groupsBroker(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("STRATA_GROUPS_BROKER"); addr != "" {
		return addr
	}
	s := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=50", "group.min.session.timeout.ms=500",
		"offsets.topic.num.partitions=4")
	return s.Addr().String()
}

// groupsOut is one strata groups run.
type groupsOut struct {
	stdout, stderr string
	code           int
}

func runGroupsCmd(t *testing.T, addr string, args ...string) groupsOut {
	t.Helper()
	var o, e bytes.Buffer
	code := Main(append([]string{"strata", "groups", "--bootstrap-server", addr, "--timeout", "20000"}, args...), &o, &e)
	return groupsOut{o.String(), e.String(), code}
}

// mustGroups runs strata groups and fails unless it exits with want.
func mustGroups(t *testing.T, want int, addr string, args ...string) groupsOut {
	t.Helper()
	r := runGroupsCmd(t, addr, args...)
	if r.code != want {
		t.Fatalf("strata groups %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

var nameSeq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), nameSeq.Add(1))
}

func adminFor(t *testing.T, addr string) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func groupsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// makeTopic creates topic with parts partitions and produces counts[p]
// records to partition p, stamped ts[i] when given.
func makeTopic(t *testing.T, addr, topic string, parts int32, counts map[int32]int, ts ...time.Time) {
	t.Helper()
	cl, adm := adminFor(t, addr)
	ctx := groupsCtx(t)
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceTo(t, cl, topic, counts, ts...)
}

func produceTo(t *testing.T, cl *kgo.Client, topic string, counts map[int32]int, ts ...time.Time) {
	t.Helper()
	var recs []*kgo.Record
	for p, n := range counts {
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))}
			if i < len(ts) {
				r.Timestamp = ts[i]
			}
			recs = append(recs, r)
		}
	}
	if err := cl.ProduceSync(groupsCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// groupConsumer is a franz-go group member that commits only when told.
func groupConsumer(t *testing.T, addr, group, topic, clientID string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		// AtEnd: a member that ignored the group's commits would read nothing.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// pollN polls cl until it has n records.
func pollN(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx := groupsCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// describeJSON runs --describe --json.
func describeJSON(t *testing.T, addr, group string) groupView {
	t.Helper()
	r := mustGroups(t, ExitOK, addr, "--describe", "--group", group, "--json")
	var v groupView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	return v
}

// committedOf returns the committed offsets in v by partition of topic.
func committedOf(v groupView, topic string) map[int32]int64 {
	out := map[int32]int64{}
	for _, p := range v.Partitions {
		if p.Topic == topic && p.CurrentOffset != nil {
			out[p.Partition] = *p.CurrentOffset
		}
	}
	return out
}

// tableRows splits a table's output into rows of fields, header first.
func tableRows(s string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func wantOffsets(t *testing.T, what string, got, want map[int32]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: committed %v, want %v", what, got, want)
	}
}

// TestGroupsDescribeResetDelete drives a group through its life with a real
// franz-go consumer: describe while it runs, resets refused while it runs
// and done after it leaves, a new member resuming at the reset offsets,
// offsets deleted, the group deleted.
func TestGroupsDescribeResetDelete(t *testing.T) {
	addr := groupsBroker(t)
	topic, group := uniqueName("orders"), uniqueName("billing")
	makeTopic(t, addr, topic, 3, map[int32]int{0: 5, 1: 3})

	// The members start at the log end when nothing is committed, so the
	// group (still unknown to the broker) is first reset to the log start.
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic+":0,1", "--to-earliest", "--execute")
	cons := groupConsumer(t, addr, group, topic, "billing-app")
	defer cons.Close()
	pollN(t, cons, 8)
	if err := cons.CommitUncommittedOffsets(groupsCtx(t)); err != nil {
		t.Fatal(err)
	}
	prod, _ := adminFor(t, addr)
	produceTo(t, prod, topic, map[int32]int{0: 2})
	memberID, _ := cons.GroupMetadata()

	// Describe while the member runs.
	r := mustGroups(t, ExitOK, addr, "--describe", "--group", group)
	if r2 := mustGroups(t, ExitOK, addr, "--describe", "--group", group, "--offsets"); r2.stdout != r.stdout {
		t.Errorf("--offsets differs from the default view:\n%s\n%s", r2.stdout, r.stdout)
	}
	rows := tableRows(r.stdout)
	wantHead := "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID"
	if strings.Join(rows[0], " ") != wantHead {
		t.Fatalf("header %q, want %q", rows[0], wantHead)
	}
	want := map[string]string{ // partition → current, end, lag
		"0": "5 7 2", "1": "3 3 0", "2": "- 0 -",
	}
	if len(rows) != 4 {
		t.Fatalf("want 3 partition rows:\n%s", r.stdout)
	}
	for _, row := range rows[1:] {
		if len(row) != 9 || row[0] != group || row[1] != topic {
			t.Fatalf("row %q", row)
		}
		if got := strings.Join(row[3:6], " "); got != want[row[2]] {
			t.Errorf("partition %s: current/end/lag %q, want %q", row[2], got, want[row[2]])
		}
		if row[6] != memberID || row[8] != "billing-app" || row[7] == "-" {
			t.Errorf("partition %s: member %q host %q client %q, want %q billing-app", row[2], row[6], row[7], row[8], memberID)
		}
	}
	v := describeJSON(t, addr, group)
	if v.State != "Stable" || len(v.Members) != 1 || v.Members[0].ConsumerID != memberID || v.ProtocolType != "consumer" {
		t.Fatalf("describe --json: %+v", v)
	}
	r = mustGroups(t, ExitOK, addr, "--describe", "--group", group, "--members", "--verbose")
	if rows := tableRows(r.stdout); len(rows) != 2 || rows[1][1] != memberID || rows[1][4] != "3" || rows[1][5] != topic+"(0,1,2)" {
		t.Errorf("--members --verbose:\n%s", r.stdout)
	}
	r = mustGroups(t, ExitOK, addr, "--describe", "--group", group, "--state")
	if rows := tableRows(r.stdout); len(rows) != 2 || !strings.Contains(r.stdout, " Stable ") || rows[1][len(rows[1])-1] != "1" {
		t.Errorf("--state:\n%s", r.stdout)
	}
	r = mustGroups(t, ExitOK, addr, "--list")
	if !strings.Contains("\n"+r.stdout, "\n"+group+"\n") {
		t.Errorf("--list lacks %s:\n%s", group, r.stdout)
	}

	// Refused while the member runs; nothing changes.
	r = mustGroups(t, ExitProblems, addr, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute")
	if !strings.Contains(r.stderr, "inactive") || !strings.Contains(r.stderr, "Stable") {
		t.Errorf("refusal message: %s", r.stderr)
	}
	r = mustGroups(t, ExitProblems, addr, "--delete", "--group", group)
	if !strings.Contains(r.stderr, "NON_EMPTY_GROUP") {
		t.Errorf("delete refusal: %s", r.stderr)
	}
	r = mustGroups(t, ExitProblems, addr, "--delete-offsets", "--group", group, "--topic", topic+":0")
	if !strings.Contains(r.stdout+r.stderr, "GROUP_SUBSCRIBED_TO_TOPIC") {
		t.Errorf("delete-offsets of a subscribed topic:\n%s%s", r.stdout, r.stderr)
	}
	wantOffsets(t, "after the refusals", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 5, 1: 3})

	cons.Close() // leaves the group
	r = mustGroups(t, ExitOK, addr, "--describe", "--group", group)
	if !strings.Contains(r.stderr, "Consumer group '"+group+"' has no active members.") {
		t.Errorf("empty group stderr: %q", r.stderr)
	}
	for _, row := range tableRows(r.stdout)[1:] {
		if row[6] != "-" || row[7] != "-" || row[8] != "-" {
			t.Errorf("member columns of an empty group: %q", row)
		}
	}

	// A dry run prints the plan and commits nothing.
	r = mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest")
	if got := tableRows(r.stdout); len(got) != 3 || strings.Join(got[1], " ") != group+" "+topic+" 0 0" || strings.Join(got[2], " ") != group+" "+topic+" 1 0" {
		t.Errorf("dry-run plan:\n%s", r.stdout)
	}
	wantOffsets(t, "after a dry run", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 5, 1: 3})

	// Clamped to the log end, with a warning.
	r = mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic+":0", "--to-offset", "100", "--json")
	var plan resetJSON
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Offsets) != 1 || plan.Offsets[0].NewOffset != 7 || !plan.Offsets[0].Clamped || plan.Executed {
		t.Errorf("--to-offset 100: %+v", plan)
	}
	if !strings.Contains(r.stderr, "log end offset 7") {
		t.Errorf("no clamp warning: %s", r.stderr)
	}

	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic+":0,1", "--shift-by", "-2", "--execute")
	wantOffsets(t, "--shift-by -2", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 3, 1: 1})
	r = mustGroups(t, ExitProblems, addr, "--reset-offsets", "--group", group, "--topic", topic, "--shift-by", "1")
	if !strings.Contains(r.stderr, "no committed offset") {
		t.Errorf("shift without a commit on partition 2: %s", r.stderr)
	}
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--all-topics", "--to-offset", "1", "--execute")
	wantOffsets(t, "--to-offset 1", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 1, 1: 1})

	// A new member resumes at the reset offsets.
	cons2 := groupConsumer(t, addr, group, topic, "billing-app-2")
	recs := pollN(t, cons2, 6+2)
	first := map[int32]int64{}
	for _, rec := range recs {
		if o, ok := first[rec.Partition]; !ok || rec.Offset < o {
			first[rec.Partition] = rec.Offset
		}
	}
	wantOffsets(t, "first offsets the new member read", first, map[int32]int64{0: 1, 1: 1})
	cons2.Close()

	r = mustGroups(t, ExitOK, addr, "--delete-offsets", "--group", group, "--topic", topic+":1")
	if !strings.Contains(r.stdout, "Successful") {
		t.Errorf("--delete-offsets:\n%s", r.stdout)
	}
	wantOffsets(t, "after --delete-offsets", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 1})

	mustGroups(t, ExitOK, addr, "--delete", "--group", group)
	if r = mustGroups(t, ExitOK, addr, "--list"); strings.Contains("\n"+r.stdout, "\n"+group+"\n") {
		t.Errorf("deleted group still listed:\n%s", r.stdout)
	}
	r = mustGroups(t, ExitProblems, addr, "--describe", "--group", group)
	if !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("describe of a deleted group: %s", r.stderr)
	}
	mustGroups(t, ExitProblems, addr, "--delete", "--group", group)
}

// TestGroupsResetToDatetime resets a new group by record timestamps.
func TestGroupsResetToDatetime(t *testing.T) {
	addr := groupsBroker(t)
	topic := uniqueName("clicks")
	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	makeTopic(t, addr, topic, 1, map[int32]int{0: 3}, t0, t0.Add(time.Hour), t0.Add(2*time.Hour))
	for _, c := range []struct {
		at   string
		want int64
	}{
		{"2024-03-01T11:00:00.000Z", 0},
		{"2024-03-01T12:00:00.001Z", 1},
		{"2024-03-01T14:00:00+01:00", 1}, // 13:00 UTC
		{"2024-03-01T13:00:00.001Z", 2},
		{"2024-03-01T15:00:00.000Z", 3}, // after every record: the log end
	} {
		group := uniqueName("dt")
		mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic, "--to-datetime", c.at, "--execute")
		wantOffsets(t, c.at, committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: c.want})
	}
}

// TestGroupsResetByDurationAndCurrent: --by-duration counts back from now;
// --to-current keeps committed offsets and takes the log end elsewhere.
func TestGroupsResetByDurationAndCurrent(t *testing.T) {
	addr := groupsBroker(t)
	topic := uniqueName("recent")
	now := time.Now()
	makeTopic(t, addr, topic, 2, map[int32]int{0: 3, 1: 2}, now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-10*time.Minute))
	for _, c := range []struct {
		by   string
		want map[int32]int64
	}{
		{"P1D", map[int32]int64{0: 0, 1: 0}},
		{"PT150M", map[int32]int64{0: 1, 1: 1}},
		{"PT1H", map[int32]int64{0: 2, 1: 2}},
		{"1m", map[int32]int64{0: 3, 1: 2}},
	} {
		group := uniqueName("dur")
		mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic, "--by-duration", c.by, "--execute")
		wantOffsets(t, c.by, committedOf(describeJSON(t, addr, group), topic), c.want)
	}
	group := uniqueName("cur")
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic+":0", "--to-offset", "1", "--execute")
	r := mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic, "--to-current", "--execute")
	if rows := tableRows(r.stdout); len(rows) != 3 || rows[1][3] != "1" || rows[2][3] != "2" {
		t.Errorf("--to-current plan:\n%s", r.stdout)
	}
	wantOffsets(t, "--to-current", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 1, 1: 2})
}

// TestGroupsAllGroups describes and deletes every group.
func TestGroupsAllGroups(t *testing.T) {
	if os.Getenv("STRATA_GROUPS_BROKER") != "" {
		t.Skip("deletes every group of the broker: only on a broker of its own")
	}
	addr := groupsBroker(t)
	topic := uniqueName("t")
	makeTopic(t, addr, topic, 2, map[int32]int{0: 4, 1: 6})
	ga, gb := "a-"+uniqueName("g"), "b-"+uniqueName("g")
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", ga, "--topic", topic, "--to-offset", "3", "--execute")
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", gb, "--topic", topic+":1", "--to-latest", "--execute")

	r := mustGroups(t, ExitOK, addr, "--describe", "--all-groups", "--json")
	var vs []groupView
	if err := json.Unmarshal([]byte(r.stdout), &vs); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(vs) != 2 || vs[0].Group != ga || vs[1].Group != gb {
		t.Fatalf("--all-groups --json: %+v", vs)
	}
	wantOffsets(t, ga, committedOf(vs[0], topic), map[int32]int64{0: 3, 1: 3})
	wantOffsets(t, gb, committedOf(vs[1], topic), map[int32]int64{1: 6})
	r = mustGroups(t, ExitOK, addr, "--describe", "--all-groups")
	if tables := strings.Split(strings.TrimSpace(r.stdout), "\n\n"); len(tables) != 2 ||
		!strings.Contains(tables[0], ga) || !strings.Contains(tables[1], gb) {
		t.Errorf("two tables, a blank line between:\n%s", r.stdout)
	}
	if strings.Count(r.stderr, "has no active members") != 2 {
		t.Errorf("stderr: %s", r.stderr)
	}

	r = mustGroups(t, ExitOK, addr, "--delete", "--all-groups")
	if !strings.Contains(r.stdout, "Deleted consumer group '"+ga+"'.") || !strings.Contains(r.stdout, "Deleted consumer group '"+gb+"'.") {
		t.Errorf("--delete --all-groups:\n%s", r.stdout)
	}
	if r = mustGroups(t, ExitOK, addr, "--list"); r.stdout != "" {
		t.Errorf("groups left:\n%s", r.stdout)
	}
	r = mustGroups(t, ExitOK, addr, "--describe", "--all-groups", "--json")
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("no groups: %s", r.stdout)
	}
}

// TestGroupsExportFromFile saves a group's offsets with --export, resets
// them, and puts them back with --from-file.
func TestGroupsExportFromFile(t *testing.T) {
	addr := groupsBroker(t)
	topic, group := uniqueName("t"), uniqueName("g")
	makeTopic(t, addr, topic, 3, map[int32]int{0: 5, 1: 7, 2: 2})
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic+":0,1", "--to-offset", "4", "--execute")
	r := mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--all-topics", "--to-current", "--export")
	want := fmt.Sprintf("%s,0,4\n%s,1,4\n", topic, topic)
	if r.stdout != want {
		t.Fatalf("--export: %q, want %q", r.stdout, want)
	}
	file := t.TempDir() + "/offsets.csv"
	if err := os.WriteFile(file, []byte("# saved\n"+r.stdout+fmt.Sprintf("other-group,%s,2,1\n", topic)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute")
	wantOffsets(t, "--to-latest", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 5, 1: 7, 2: 2})
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--from-file", file, "--execute")
	wantOffsets(t, "--from-file", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 4, 1: 4, 2: 2})

	// A file naming a partition the topic lacks is refused; nothing changes.
	if err := os.WriteFile(file, []byte(topic+",0,1\n"+topic+",9,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustGroups(t, ExitProblems, addr, "--reset-offsets", "--group", group, "--from-file", file, "--execute")
	if !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("stderr: %s", r.stderr)
	}
	wantOffsets(t, "after a refused --from-file", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 4, 1: 4, 2: 2})
}

// TestGroupsListJSON lists groups with their states.
func TestGroupsListJSON(t *testing.T) {
	addr := groupsBroker(t)
	topic, group := uniqueName("t"), uniqueName("g")
	makeTopic(t, addr, topic, 1, map[int32]int{0: 1})
	mustGroups(t, ExitOK, addr, "--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute")
	r := mustGroups(t, ExitOK, addr, "--list", "--json")
	var gs []listedGroupJSON
	if err := json.Unmarshal([]byte(r.stdout), &gs); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	found := false
	for _, g := range gs {
		if g.Group == group {
			found = true
			if g.State != "Empty" {
				t.Errorf("state %q, want Empty", g.State)
			}
		}
	}
	if !found {
		t.Errorf("%s not in %s", group, r.stdout)
	}
	r = mustGroups(t, ExitOK, addr, "--list", "--state")
	if !strings.Contains(r.stdout, "GROUP") || !strings.Contains(r.stdout, group) {
		t.Errorf("--list --state:\n%s", r.stdout)
	}
}

// TestGroupsMissingTopic: a reset of an unknown topic names Kafka's error.
func TestGroupsMissingTopic(t *testing.T) {
	addr := groupsBroker(t)
	r := mustGroups(t, ExitProblems, addr, "--reset-offsets", "--group", uniqueName("g"), "--topic", uniqueName("nosuch"), "--to-earliest")
	if !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("stderr: %s", r.stderr)
	}
	topic := uniqueName("t")
	makeTopic(t, addr, topic, 2, nil)
	r = mustGroups(t, ExitProblems, addr, "--reset-offsets", "--group", uniqueName("g"), "--topic", topic+":5", "--to-earliest")
	if !strings.Contains(r.stderr, "partition 5") || !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// TestGroupsUsage: bad command lines exit 2 before any connection.
func TestGroupsUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--list"}, // no --bootstrap-server
		{"--bootstrap-server", "x:1"},
		{"--bootstrap-server", "x:1", "--list", "--describe"},
		{"--bootstrap-server", "x:1", "--describe"},
		{"--bootstrap-server", "x:1", "--list", "--group", "g"},
		{"--bootstrap-server", "x:1", "--delete"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--to-earliest"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--members", "--state"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--offsets", "--members"},
		{"--bootstrap-server", "x:1", "--list", "--offsets"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--verbose"},
		{"--bootstrap-server", "x:1", "--delete", "--group", "g", "--topic", "t"},
		{"--bootstrap-server", "x:1", "--delete-offsets", "--group", "g"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--to-earliest"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--all-topics", "--to-earliest"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--execute", "--dry-run"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t:x", "--to-earliest"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", ":1", "--to-earliest"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "yesterday"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "ten"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "an hour"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-current", "--by-duration", "PT1H"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--to-current"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--all-groups"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--all-groups", "--topic", "t", "--to-earliest"},
		{"--bootstrap-server", "x:1", "--list", "--all-groups"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--from-file", "/nonexistent/x.csv"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--from-file", "/dev/null", "--topic", "t"},
		{"--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--export", "--json"},
		{"--bootstrap-server", "x:1", "--describe", "--group", "g", "--export"},
		{"--bootstrap-server", "x:1", "--list", "--timeout", "0"},
		{"--bootstrap-server", "x:1", "--list", "extra"},
	} {
		var o, e bytes.Buffer
		code := Main(append([]string{"strata", "groups"}, args...), &o, &e)
		if code != ExitUsage || e.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with a message", args, code, e.String())
		}
	}
}

// TestGroupsUnreachable: no broker at the address exits 2 and says so.
func TestGroupsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{
		{"--list"},
		{"--describe", "--group", "g"},
		{"--reset-offsets", "--group", "g", "--all-topics", "--to-earliest"},
		{"--delete", "--group", "g"},
	} {
		var o, e bytes.Buffer
		start := time.Now()
		code := Main(append([]string{"strata", "groups", "--bootstrap-server", addr, "--timeout", "3000"}, args...), &o, &e)
		if code != ExitUsage || !strings.Contains(e.String(), "cannot reach a broker at "+addr) {
			t.Errorf("%q: exit %d, stderr %q", args, code, e.String())
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%q: took %v", args, d)
		}
	}
}

// TestGroupsNotAKafkaPort: something that is not a Kafka broker (here a
// server that closes every connection at once) exits 2.
func TestGroupsNotAKafkaPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var o, e bytes.Buffer
	code := Main([]string{"strata", "groups", "--bootstrap-server", ln.Addr().String(), "--timeout", "3000", "--list"}, &o, &e)
	if code != ExitUsage || e.Len() == 0 {
		t.Errorf("exit %d, stderr %q", code, e.String())
	}
}

// TestGroupsDescribeKcatMember describes a librdkafka member (kcat -G):
// its assignment and committed offsets as the broker reports them. (It
// found the coordinator keeping JoinGroup/SyncGroup bytes aliased to the
// connection's reused read buffer: an empty assignment, 4 runs of 4.)
func TestGroupsDescribeKcatMember(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not installed (make test installs it: scripts/deps.sh)")
		}
		t.Skip("kcat not installed")
	}
	addr := groupsBroker(t)
	topic, group := uniqueName("rd"), uniqueName("rdgroup")
	makeTopic(t, addr, topic, 3, map[int32]int{0: 4, 1: 2, 2: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-G", group, topic, "-q", "-o", "beginning",
		"-X", "client.id=rd-app", "-X", "auto.commit.interval.ms=100", "-X", "topic.metadata.refresh.interval.ms=100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v groupView
		if r := runGroupsCmd(t, addr, "--describe", "--group", group, "--json"); r.code == ExitOK {
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
				t.Fatal(err)
			}
		}
		got := committedOf(v, topic)
		if v.State == "Stable" && len(v.Members) == 1 && fmt.Sprint(got) == fmt.Sprint(map[int32]int64{0: 4, 1: 2, 2: 3}) {
			m := v.Members[0]
			if m.ClientID != "rd-app" || fmt.Sprint(m.Assignment) != fmt.Sprintf("map[%s:[0 1 2]]", topic) {
				t.Fatalf("member %+v, want client rd-app assigned %s [0 1 2]", m, topic)
			}
			for _, p := range v.Partitions {
				if p.ConsumerID != m.ConsumerID || p.Lag == nil || *p.Lag != 0 {
					t.Fatalf("partition %+v", p)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kcat member never showed up with its commits: %+v", v)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGroupsRequireAPIs: an action whose request the broker does not list
// in ApiVersions is refused up front (exit 2), naming the request.
// strata's broker has the group APIs but not CreateDelegationToken (key 38).
func TestGroupsRequireAPIs(t *testing.T) {
	if os.Getenv("STRATA_GROUPS_BROKER") != "" {
		t.Skip("relies on strata's ApiVersions table")
	}
	addr := groupsBroker(t)
	cl, _ := adminFor(t, addr)
	if err := requireAPIs(groupsCtx(t), cl, groupsAPIs["reset-offsets"]); err != nil {
		t.Fatalf("strata's broker lacks a group API: %v", err)
	}
	err := requireAPIs(groupsCtx(t), cl, []int16{16, 38})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), "(key 38)") || strings.Contains(err.Error(), "ListGroups") {
		t.Fatalf("got %v", err)
	}
}
