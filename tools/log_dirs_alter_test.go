package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readPlan checks log_dirs: one per replica, each "any" or an absolute
// path; anything else is a usage error naming the partition. A
// --replica-alter-log-dirs-throttle below 1 or without --execute is a
// usage error too.
func TestReadPlanLogDirs(t *testing.T) {
	bad := []struct{ name, plan, want string }{
		{"relative dir", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["data","any"]}]}`, `log dir "data": want "any" or an absolute path`},
		{"empty dir", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[""]}]}`, `log dir "": want "any" or an absolute path`},
		{"too few", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d"]}]}`, "1 log_dirs for 2 replicas"},
		{"too many", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d","any"]}]}`, "2 log_dirs for 1 replicas"},
		{"not strings", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[7]}]}`, "malformed reassignment JSON"},
	}
	for _, tc := range bad {
		_, err := readPlan(writeFile(t, "plan.json", tc.plan))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	plan, err := readPlan(writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d","any"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if mv := planDirMoves(plan); len(mv) != 1 || mv[0].String() != "t-0 on broker 1 to /d" {
		t.Fatalf("moves %v", mv)
	}
	f := writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d"]}]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--execute", "--replica-alter-log-dirs-throttle", "0"}, "want bytes per second > 0"},
		{[]string{"--verify", "--replica-alter-log-dirs-throttle", "100"}, "goes with --execute"},
	} {
		args := append([]string{"reassign", "--bootstrap-server", "127.0.0.1:1", "--reassignment-json-file", f}, tc.args...)
		if _, stderr, code := run(t, args...); code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %s", tc.args, code, stderr)
		}
	}
}

// strata log-dirs --alter moves a replica of a broker with two log dirs to
// the other one as the plan's log_dirs say; --verify reports it in
// progress, then complete; --describe shows it in the new dir. A dir the
// broker does not have is refused (exit 1) and moves nothing; a topic that
// does not exist gets its dir remembered.
func TestLogDirsAlter(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	s := startBroker(t, d1+","+d2, "file.delete.delay.ms=0")
	addr := s.Addr().String()
	mustTopics(t, ExitOK, addr, "--create", "--topic", "mv", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("mv"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("value-", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	from, to := d1, d2
	if _, err := os.Stat(filepath.Join(d2, "mv-0")); err == nil {
		from, to = d2, d1
	}
	plan := func(dir string) string {
		return writeFile(t, "plan.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[0],"log_dirs":[%q]}]}`, dir))
	}
	nowhere := filepath.Join(base, "nowhere")
	if _, stderr, code := run(t, "log-dirs", "--bootstrap-server", addr, "--alter", "--reassignment-json-file", plan(nowhere)); code != ExitProblems || !strings.Contains(stderr, "mv-0 on broker 0 to "+nowhere) {
		t.Fatalf("dir not configured: exit %d %s", code, stderr)
	}
	if _, stderr, code := run(t, "log-dirs", "--bootstrap-server", addr, "--alter", "--reassignment-json-file", writeFile(t, "p.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[0],"log_dirs":["d2"]}]}`)); code != ExitUsage || !strings.Contains(stderr, "absolute path") {
		t.Fatalf("relative dir: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(from, "mv-0")); err != nil {
		t.Fatalf("the refused moves moved the replica: %v", err)
	}
	stdout, stderr, code := run(t, "log-dirs", "--bootstrap-server", addr, "--alter", "--reassignment-json-file", plan(to))
	if code != ExitOK || stdout != "Successfully started log directory move for: mv-0 on broker 0 to "+to+"\n" {
		t.Fatalf("alter: exit %d %q %s", code, stdout, stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		stdout, stderr, code = run(t, "log-dirs", "--bootstrap-server", addr, "--verify", "--reassignment-json-file", plan(to))
		if code == ExitOK {
			break
		}
		if !strings.Contains(stdout, "is still in progress.") || time.Now().After(deadline) {
			t.Fatalf("verify: exit %d %q %s", code, stdout, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if stdout != "Status of log directory moves:\nReassignment of replica mv-0-0 completed successfully.\n" {
		t.Fatalf("verify: %q", stdout)
	}
	stdout, _, code = run(t, "log-dirs", "--bootstrap-server", addr, "--describe", "--topic-list", "mv")
	var out logDirsJSON
	if lines := strings.Split(stdout, "\n"); code != ExitOK || len(lines) < 3 || json.Unmarshal([]byte(lines[2]), &out) != nil {
		t.Fatalf("describe: exit %d %q", code, stdout)
	}
	for _, d := range out.Brokers[0].LogDirs {
		has := len(d.Partitions) == 1 && d.Partitions[0].Partition == "mv-0" && !d.Partitions[0].IsFuture
		if has != (d.LogDir == to) {
			t.Fatalf("describe after the move: %+v", out.Brokers[0].LogDirs)
		}
	}
	stdout, stderr, code = run(t, "log-dirs", "--bootstrap-server", addr, "--alter", "--reassignment-json-file",
		writeFile(t, "p.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"newtopic","partition":0,"replicas":[0],"log_dirs":[%q]}]}`, to)))
	if code != ExitOK || !strings.Contains(stdout, "Log directory remembered for replicas not created yet: newtopic-0 on broker 0 to "+to) {
		t.Fatalf("topic that does not exist: exit %d %q %s", code, stdout, stderr)
	}
}
