package server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHelperBroker is not a test: with STRATA_HELPER_BROKER set it runs a
// broker (in a child process of TestKillRestart) until it is killed.
func TestHelperBroker(t *testing.T) {
	spec := os.Getenv("STRATA_HELPER_BROKER")
	if spec == "" {
		t.Skip("helper process only")
	}
	var dir, addr string
	if _, err := fmt.Sscanf(spec, "%s %s", &dir, &addr); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://" + addr, "log.dirs=" + dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(cfg, &Options{Logger: testLogger()}); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

// TestKillRestart: records acknowledged with acks=1 and acks=-1 survive a
// SIGKILL of the broker (they are in the page cache), and the restarted
// broker (which rescans the logs) serves every one of them.
func TestKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBroker$")
	cmd.Env = append(os.Environ(), "STRATA_HELPER_BROKER="+dir+" "+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child broker not listening: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	const n = 2000
	acked := 0
	for _, acks := range []kgo.Acks{kgo.LeaderAck(), kgo.AllISRAcks()} {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequiredAcks(acks), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("survive")}
		if acks != kgo.AllISRAcks() { // an idempotent producer needs acks=all
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range n / 2 {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%d", acked+i)})
		}
		if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		acked += len(recs)
		cl.Close()
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	s := startServer(t, dir)
	if rep := s.topics.reports[0]; rep.CleanShutdown || rep.Totals.SegmentsScanned == 0 || rep.Totals.Partitions != 1 {
		t.Fatalf("restart after SIGKILL: clean=%v scanned=%d partitions=%d, want an unclean recovery scanning the log",
			rep.CleanShutdown, rep.Totals.SegmentsScanned, rep.Totals.Partitions)
	}
	got := consumeAll(t, s, "survive", []int32{0}, n)
	for i, r := range got {
		if string(r.Value) != fmt.Sprint(i) || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}
