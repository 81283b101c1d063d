package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/zkproc"
)

// needZooKeeper skips without java and Debian's ZooKeeper, except under
// CI=true, and makes this test binary the strata binary of the child
// processes (TestMain).
func needZooKeeper(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ZooKeeper and broker processes")
	}
	if _, err := zkproc.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Setenv("STRATA_TOOLS_MAIN", "1")
}

// TestBenchClusterStarted runs every phase of strata bench cluster, small,
// on the ZooKeeper and brokers it starts, and checks the JSON figures.
func TestBenchClusterStarted(t *testing.T) {
	needZooKeeper(t)
	dir := t.TempDir()
	out, errOut, code := run(t, "bench", "cluster", "--records", "3000", "--runs", "1", "--latency-seconds", "0.5", "--latency-rate", "2000",
		"--catchup-mb", "3", "--reassign-mb", "3", "--reassign-throttle-mb-per-sec", "2", "--reassign-throttle-seconds", "2",
		"--failover-rate", "200", "--session-timeout-ms", "2000", "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchClusterResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !res.Started || res.ReplicationFactor != 3 || res.MinInsyncReplicas != 2 || len(res.Phases) != 5 {
		t.Errorf("settings: %+v", res)
	}
	for name, f := range map[string]BenchClusterFigures{"cluster": res.BenchClusterFigures, "single node": res.SingleNode} {
		if f.ProduceAcksAllRecordsPerSec <= 0 || f.ProduceAcks1RecordsPerSec <= 0 || f.ConsumeRecordsPerSec <= 0 || f.ProduceAcksAllCPUSeconds <= 0 {
			t.Errorf("%s throughput: %+v", name, f)
		}
		if f.LatencyRecords != 1000 || f.LatencyP50Ms <= 0 || f.LatencyP99Ms < f.LatencyP50Ms || f.LatencyP999Ms < f.LatencyP99Ms {
			t.Errorf("%s latency: %+v", name, f)
		}
		if f.LatencyAckP50Ms <= 0 || f.LatencyAckP99Ms < f.LatencyAckP50Ms || f.LatencyAckP999Ms < f.LatencyAckP99Ms {
			t.Errorf("%s acknowledgement latency: %+v", name, f)
		}
	}
	if res.LimitLoopbackMBps <= 0 || res.ProduceAcksAllVsSingleNode <= 0 || res.ProduceAcks1VsSingleNode <= 0 {
		t.Errorf("limit and ratios: %+v", res)
	}
	f := res.BenchClusterFaults
	// 3 MB of values in batches of 3,000-odd 100-byte records: a little
	// more on disk.
	if f.CatchupMB < 3 || f.CatchupMB > 4 || f.CatchupMBps <= 0 || f.CatchupToISRSeconds <= 0 || f.CatchupVsLimit <= 0 {
		t.Errorf("catch-up: %+v", f)
	}
	// The unthrottled move beside its limit; the throttled one about at
	// its throttle (a correctness check, not the bench's precision: the
	// machine may be loaded).
	if f.ReassignMB < 3 || f.ReassignMB > 4 || f.ReassignMBps <= 0 || f.LimitLoopbackReassign <= 0 || f.ReassignVsLimit <= 0 {
		t.Errorf("reassign: %+v", f.BenchReassign)
	}
	if f.ReassignThrottleMBps != 2 || f.ReassignThrottledMB < 4 || f.ReassignThrottledMBps <= 0 || f.ReassignThrottledMBps > 8 || f.ReassignThrottledSteady <= 0 {
		t.Errorf("throttled reassign: %+v", f.BenchReassign)
	}
	// Writes resume only after the killed leader's session expires.
	if f.FailoverSeconds < 1.3 || f.FailoverSeconds > 60 || f.ShutdownStallMs <= 0 || f.ShutdownSeconds <= 0 {
		t.Errorf("failover: %+v", f)
	}
	// The temporary directories are gone.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in --dir: %v", ents)
	}
}

// TestBenchClusterExternal drives a cluster it did not start: the
// throughput and latency phases only, on topics of three replicas with
// min.insync.replicas=2; the phases that stop brokers are refused.
func TestBenchClusterExternal(t *testing.T) {
	needZooKeeper(t)
	cl, err := startBenchCluster(t.TempDir(), 3, []string{"zookeeper.session.timeout.ms=6000"}, benchBrokerOpts{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.stop(false)
	boot := strings.Join(cl.addrs(), ",")
	out, errOut, code := run(t, "bench", "cluster", "--bootstrap-server", boot, "--records", "2000", "--warmup-records", "100", "--runs", "1",
		"--latency-seconds", "0.3", "--latency-rate", "1000", "--topic-prefix", "ext", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"a running cluster at " + boot, "produce acks=all", "produce acks=1", "consume", "latency acks=all at 1000 records/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "catch-up") || strings.Contains(out, "SIGKILL") {
		t.Errorf("fault phases ran on a cluster the bench did not start:\n%s", out)
	}
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(cl.addrs()...)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, td.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range td.Sorted() {
		if !strings.HasPrefix(d.Topic, "ext-") {
			continue
		}
		seen++
		p := d.Partitions[0]
		if len(d.Partitions) != 1 || len(p.Replicas) != 3 {
			t.Errorf("%s: %d partitions, replicas %v", d.Topic, len(d.Partitions), p.Replicas)
		}
		rc, err := adm.DescribeTopicConfigs(ctx, d.Topic)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := rc.On(d.Topic, nil); err != nil || !hasConfig(v.Configs, "min.insync.replicas", "2") {
			t.Errorf("%s: configs %+v %v", d.Topic, v.Configs, err)
		}
		if !strings.HasSuffix(d.Topic, "-latency") {
			// The end offset is the high watermark: with acks=1 the
			// followers may still be fetching the last records when the
			// bench returns, so wait for it (and for an answer without
			// an error) rather than read it once.
			var o kadm.ListedOffset
			waitFor(t, 30*time.Second, d.Topic+" ends at 2100 (100 warm-up records + 2000)", func() bool {
				if o, _ = ends.Lookup(d.Topic, 0); o.Err == nil && o.Offset == 2100 {
					return true
				}
				if e, err := adm.ListEndOffsets(ctx, d.Topic); err == nil {
					ends = e
				}
				return false
			}, func() string { return fmt.Sprintf("last: offset %d, error %v", o.Offset, o.Err) })
		}
	}
	if seen != 3 {
		t.Errorf("%d bench topics, want 3 (acks=all, acks=1, latency)", seen)
	}
	for _, args := range [][]string{
		{"--bootstrap-server", boot, "--phases", "catchup"},
		{"--replication-factor", "4"},
		{"--min-insync-replicas", "3", "--replication-factor", "2"},
		{"--phases", "throughput,bogus"},
	} {
		if _, errOut, code := run(t, append([]string{"bench", "cluster"}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d (%s)", args, code, errOut)
		}
	}
}

func mustClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func hasConfig(cs []kadm.Config, name, value string) bool {
	for _, c := range cs {
		if c.Key == name && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// TestBenchMirror runs strata bench mirror small: two broker processes, an
// untimed warm-up run and two timed runs (the brokers swap roles), and checks the JSON figures and that every
// record reached the target.
func TestBenchMirror(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	t.Setenv("STRATA_TOOLS_MAIN", "1")
	dir := t.TempDir()
	out, errOut, code := run(t, "bench", "mirror", "--records", "20000", "--warmup-records", "10", "--runs", "2", "--warmup-runs", "1", "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchMirrorResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Records != 20000 || res.WarmupRecords != 10 || res.RecordSize != 100 || res.Runs != 2 || res.WarmupRuns != 1 || res.Streams != 1 || res.MaxPoll != 0 {
		t.Errorf("settings: %+v", res)
	}
	if res.ProduceRecordsPerSec <= 0 || res.ProduceMBps <= 0 || res.ProduceCPUSeconds <= 0 {
		t.Errorf("produce: %+v", res)
	}
	if res.MirrorRecordsPerSec <= 0 || res.MirrorMBps <= 0 || res.MirrorSeconds <= 0 || res.MirrorFirstSeconds <= 0 ||
		res.MirrorFirstSeconds > res.MirrorSeconds || res.MirrorCPUSeconds <= 0 {
		t.Errorf("mirror: %+v", res)
	}
	if len(res.ProduceRuns) != 2 || len(res.MirrorRuns) != 2 || len(res.RatioRuns) != 2 || res.MirrorVsProduce <= 0 {
		t.Errorf("runs and ratio: %+v", res)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in --dir: %v", ents)
	}
	for _, args := range [][]string{{"--records", "0"}, {"--num.streams", "0"}, {"--record-size", "0"}} {
		if _, errOut, code := run(t, append([]string{"bench", "mirror"}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d (%s)", args, code, errOut)
		}
	}
}
