package tools

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/zktest"
	"github.com/stratalog/strata/server"
)

// TestReassignLogDirsAgainstCluster: a real ZooKeeper and two in-process
// brokers with two log dirs each. A plan whose log_dirs names a dir broker
// 2 does not have is refused before anything starts; a plan adding broker
// 2 with log_dirs naming its second dir (not the one it would pick, the
// emptiest first) creates the new replica there: --execute says the dir is
// remembered and sets --replica-alter-log-dirs-throttle, --verify reports the partition and the replica complete,
// and the replica's log in that dir holds the records (nothing in the
// other dir); --verify removed the throttle.
func TestReassignLogDirsAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and two brokers")
	}
	zk := zktest.Start(t)
	connect := zk.Addr() + "/logdirs-test"
	dirs := map[int][2]string{}
	var bs []*server.Server
	for id := 1; id <= 2; id++ {
		base := t.TempDir()
		d := [2]string{filepath.Join(base, "a"), filepath.Join(base, "b")}
		dirs[id] = d
		cfg, err := server.LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "strata.metrics.listener=127.0.0.1:0", "log.dirs=" + d[0] + "," + d[1],
			"zookeeper.connect=" + connect, fmt.Sprintf("broker.id=%d", id),
			"zookeeper.session.timeout.ms=4000", "controlled.shutdown.enable=false"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.Start(cfg, &server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		bs = append(bs, s)
	}
	addr := bs[0].Addr().String()
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := runTopicsCmd(t, addr, "--create", "--topic", "moving", "--replica-assignment", "1")
		if r.code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitTopicReplicasN(t, addr, "moving", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("moving"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 100
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%03d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	nowhere := filepath.Join(t.TempDir(), "nowhere")
	r := runReassignCmd(t, addr, "--execute", "--reassignment-json-file", writeFile(t, "plan.json",
		fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1,2],"log_dirs":["any",%q]}]}`, nowhere)))
	if r.code != ExitProblems || !strings.Contains(r.stderr, "log dirs refused, nothing started: moving-0 on broker 2 to "+nowhere) {
		t.Fatalf("dir the broker lacks: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	waitTopicReplicasN(t, addr, "moving", "1") // nothing started
	want := dirs[2][1]
	plan := writeFile(t, "plan.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1,2],"log_dirs":["any",%q]}]}`, want))
	r = runReassignCmd(t, addr, "--execute", "--reassignment-json-file", plan, "--replica-alter-log-dirs-throttle", "10000000")
	if r.code != ExitOK || !strings.Contains(r.stdout, "The replica-alter-dir throttle limit was set to 10000000 B/s\n") ||
		!strings.Contains(r.stdout, "Log directory remembered for replicas not created yet: moving-0 on broker 2 to "+want+"\n") ||
		!strings.Contains(r.stdout, "Successfully started partition reassignments for moving-0\n") {
		t.Fatalf("execute: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		r = runReassignCmd(t, addr, "--verify", "--reassignment-json-file", plan)
		if r.code == ExitOK && strings.Contains(r.stdout, "Reassignment of replica moving-0-2 completed successfully.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("verify: exit %d %q %s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(r.stdout, "Reassignment of partition moving-0 is complete.") || !strings.HasSuffix(r.stdout, "Throttle was removed.\n") {
		t.Fatalf("verify: %q", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(want, "moving-0")); err != nil {
		t.Fatalf("broker 2's replica is not in the dir the plan named: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[2][0], "moving-0")); err == nil {
		t.Fatal("broker 2's replica is in its other dir too")
	}
	// The replica joined the ISR (the reassignment completed): its log
	// in the named dir holds the records.
	size := int64(0)
	for deadline := time.Now().Add(30 * time.Second); size == 0; {
		ents, _ := os.ReadDir(filepath.Join(want, "moving-0"))
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".log") {
				if fi, err := e.Info(); err == nil {
					size += fi.Size()
				}
			}
		}
		if size == 0 && time.Now().After(deadline) {
			t.Fatal("broker 2's replica in the named dir holds no records")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitTopicReplicasN polls strata topics --describe until partition 0 of
// topic shows replicas (any count) and the same ISR.
func waitTopicReplicasN(t *testing.T, addr, topic, replicas string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := runTopicsCmd(t, addr, "--describe", "--topic", topic)
		if strings.Contains(r.stdout, "Replicas: "+replicas+"\tIsr: ") {
			line := r.stdout[strings.Index(r.stdout, "Replicas: "+replicas+"\tIsr: "):]
			isr := strings.Fields(strings.TrimPrefix(line[strings.Index(line, "Isr: "):], "Isr: "))[0]
			if sameSet(isr, replicas) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had replicas %s with a full ISR: %q %s", topic, replicas, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
