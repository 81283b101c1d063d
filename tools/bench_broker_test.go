package tools

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestBenchBrokerInProcess runs strata bench broker small against its own
// broker, both validation modes, and checks the JSON figures.
func TestBenchBrokerInProcess(t *testing.T) {
	out, errOut, code := run(t, "bench", "broker", "--records", "3000", "--runs", "1", "--latency-seconds", "0.3", "--latency-rate", "2000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchBrokerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !res.InProcess || len(res.Modes) != 2 || res.Modes[0].Validation != "full" || res.Modes[1].Validation != "header" {
		t.Fatalf("modes: %+v", res)
	}
	for _, m := range res.Modes {
		checkBenchFigures(t, m, 3000)
	}
}

// TestBenchBrokerExternal drives a broker it did not start, as it would
// kfake or Kafka: the topics are created with CreateTopics.
func TestBenchBrokerExternal(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "auto.create.topics.enable=false")
	out, errOut, code := run(t, "bench", "broker", "--bootstrap-server", srv.Addr().String(), "--records", "2000", "--warmup-records", "300", "--record-size", "50", "--runs", "2", "--latency-seconds", "0.3", "--latency-rate", "2000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"validation external", "produce", "consume", "latency  at 2000 records/s", srv.Addr().String()} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Each run's topic holds the 300 warm-up records and the 2000 measured
	// records after them.
	_, adm := adminFor(t, srv.Addr().String())
	ends, err := adm.ListEndOffsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	ends.Each(func(o kadm.ListedOffset) {
		if strings.HasSuffix(o.Topic, "-latency") {
			return
		}
		measured++
		if o.Err != nil || o.Offset != 2300 {
			t.Errorf("topic %s ends at %d (%v), want 2300: 300 warm-up records + 2000", o.Topic, o.Offset, o.Err)
		}
	})
	if measured != 2 {
		t.Errorf("%d produce topics, want 2 (one per run)", measured)
	}
	if _, errOut, code := run(t, "bench", "broker", "--bootstrap-server", srv.Addr().String(), "--validation", "both"); code != ExitUsage {
		t.Errorf("--validation both with --bootstrap-server: exit %d (%s)", code, errOut)
	}
	if _, _, code := run(t, "bench", "broker", "--record-size", "8"); code != ExitUsage {
		t.Errorf("--record-size 8: exit %d", code)
	}
	if _, _, code := run(t, "bench", "broker", "--warmup-records", "0"); code != ExitUsage {
		t.Errorf("--warmup-records 0: exit %d", code)
	}
}

func checkBenchFigures(t *testing.T, m BenchBrokerFigures, records int64) {
	t.Helper()
	switch {
	case m.ProduceRecordsPerSec <= 0 || m.ConsumeRecordsPerSec <= 0 || m.ProduceMBps <= 0 || m.ConsumeMBps <= 0:
		t.Errorf("%s: throughput %+v", m.Validation, m)
	case m.LimitLoopbackMBps <= 0 || m.ProduceVsLimit <= 0:
		t.Errorf("%s: loopback limit %+v", m.Validation, m)
	case m.LatencyRecords != 600 || m.LatencyP50Ms <= 0 || m.LatencyP99Ms < m.LatencyP50Ms || m.LatencyP999Ms < m.LatencyP99Ms:
		t.Errorf("%s: latency %+v", m.Validation, m)
	}
	if got := m.ProduceRecordsPerSec * m.ProduceSeconds; got < float64(records)*0.99 || got > float64(records)*1.01 {
		t.Errorf("%s: rate x seconds = %.0f records, want %d", m.Validation, got, records)
	}
}

// --segment-bytes and --retention-bytes create the bench topics with those
// configs: the produce topic rolls segments.
func TestBenchBrokerSegmentBytes(t *testing.T) {
	data := t.TempDir()
	srv := startBroker(t, data)
	out, errOut, code := run(t, "bench", "broker", "--bootstrap-server", srv.Addr().String(), "--records", "30000", "--record-size", "100",
		"--runs", "1", "--latency-seconds", "0.3", "--latency-rate", "2000", "--segment-bytes", "1048576", "--retention-bytes", "100000000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchBrokerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.SegmentBytes != 1048576 || res.RetentionBytes != 100000000 {
		t.Fatalf("result segment.bytes %d, retention.bytes %d", res.SegmentBytes, res.RetentionBytes)
	}
	logs, err := filepath.Glob(filepath.Join(data, "strata-bench-*-0", "*.log"))
	if err != nil || len(logs) < 3 {
		t.Fatalf("%d segments after 30000 records of 100 B with segment.bytes 1048576 (%v)", len(logs), err)
	}
	// retention.bytes goes to the latency topic only (the consume phase reads
	// the produce topic from its start).
	table, err := os.ReadFile(filepath.Join(data, "strata-topics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tt struct {
		Topics []struct {
			Name    string            `json:"name"`
			Configs map[string]string `json:"configs"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(table, &tt); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tp := range tt.Topics {
		if !strings.HasPrefix(tp.Name, "strata-bench") {
			continue
		}
		seen++
		_, hasRet := tp.Configs["retention.bytes"]
		if tp.Configs["segment.bytes"] != "1048576" || hasRet != strings.HasSuffix(tp.Name, "-latency") {
			t.Errorf("topic %s configs %v", tp.Name, tp.Configs)
		}
	}
	if seen != 2 {
		t.Errorf("%d bench topics in the table, want 2", seen)
	}
	if _, _, code := run(t, "bench", "broker", "--segment-bytes", "-1"); code != ExitUsage {
		t.Errorf("--segment-bytes -1: exit %d", code)
	}
}

// TestBenchBrokerMetricsBoth: --metrics both measures two in-process
// brokers, metrics on and off, the runs in ABBA order, each run's consume
// phase reading the records 4 times, and reports the median of the runs'
// on/off ratios with their spread, and the same for process CPU seconds.
func TestBenchBrokerMetricsBoth(t *testing.T) {
	out, errOut, code := run(t, "bench", "broker", "--records", "2000", "--runs", "3", "--latency-seconds", "0", "--validation", "full", "--metrics", "both", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchBrokerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(res.Modes) != 2 || res.Modes[0].Metrics != "on" || res.Modes[1].Metrics != "off" {
		t.Fatalf("modes: %+v", res.Modes)
	}
	if res.ConsumePasses != 8 || res.ProducePasses != 8 {
		t.Errorf("consume_passes %d, produce_passes %d, want 8 (the default with --metrics both)", res.ConsumePasses, res.ProducePasses)
	}
	for _, m := range res.Modes {
		if len(m.ProduceRecordsPerSecs) != 3 || len(m.ConsumeCPUSecondsRuns) != 3 || len(m.ConsumeSecondsRuns) != 3 || len(m.ProduceCPUSecondsRuns) != 3 {
			t.Fatalf("metrics %s: runs %v %v %v %v, want 3 of each", m.Metrics, m.ProduceRecordsPerSecs, m.ConsumeSecondsRuns, m.ProduceCPUSecondsRuns, m.ConsumeCPUSecondsRuns)
		}
		for i, sec := range m.ProduceSecondsRuns {
			if got := m.ProduceRecordsPerSecs[i] * sec; math.Abs(got-8*2000) > 1 {
				t.Errorf("metrics %s run %d: %v records/s over %v s is %v records, want 8 produce passes of 2000", m.Metrics, i, m.ProduceRecordsPerSecs[i], sec, got)
			}
		}
		for i, sec := range m.ConsumeSecondsRuns {
			if got := m.ConsumeRecordsPerSecs[i] * sec; math.Abs(got-8*2000) > 1 {
				t.Errorf("metrics %s run %d: %v records/s over %v s is %v records, want 8 passes of 2000", m.Metrics, i, m.ConsumeRecordsPerSecs[i], sec, got)
			}
		}
	}
	if len(res.MetricsOnVsOff) != 1 {
		t.Fatalf("metrics_on_vs_off: %+v", res.MetricsOnVsOff)
	}
	o := res.MetricsOnVsOff[0]
	on, off := res.Modes[0], res.Modes[1]
	check := func(what string, med, lo, hi float64, runs, a, b []float64) {
		t.Helper()
		if len(runs) != 3 {
			t.Fatalf("%s: runs %v, want 3", what, runs)
		}
		for i := range runs {
			if math.Abs(runs[i]-a[i]/b[i]) > 1e-9 {
				t.Errorf("%s run %d: ratio %v, want %v/%v", what, i, runs[i], a[i], b[i])
			}
		}
		sorted := slices.Sorted(slices.Values(runs))
		if med != sorted[1] || (lo >= 0 && (lo != sorted[0] || hi != sorted[2])) {
			t.Errorf("%s: median %v (%v-%v) of runs %v", what, med, lo, hi, runs)
		}
	}
	check("produce", o.Produce, o.ProduceMin, o.ProduceMax, o.ProduceRuns, on.ProduceRecordsPerSecs, off.ProduceRecordsPerSecs)
	check("consume", o.Consume, o.ConsumeMin, o.ConsumeMax, o.ConsumeRuns, on.ConsumeRecordsPerSecs, off.ConsumeRecordsPerSecs)
	check("produce CPU", o.ProduceCPU, -1, -1, o.ProduceCPURuns, on.ProduceCPUSecondsRuns, off.ProduceCPUSecondsRuns)
	check("consume CPU", o.ConsumeCPU, -1, -1, o.ConsumeCPURuns, on.ConsumeCPUSecondsRuns, off.ConsumeCPUSecondsRuns)
	for _, bad := range [][]string{{"--metrics", "sometimes"}, {"--consume-passes", "-1"}, {"--produce-passes", "-1"}} {
		if _, _, code := run(t, append([]string{"bench", "broker"}, bad...)...); code == 0 {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestBenchBrokerTransactions runs the transactions phase small: 2,500
// records in transactions of 1,000 (the last one of 500) after a warm-up
// transaction, read back at both isolation levels, and its figures in the
// JSON, with the producer's requests per transaction.
func TestBenchBrokerTransactions(t *testing.T) {
	out, errOut, code := run(t, "bench", "broker", "--records", "2500", "--runs", "1", "--latency-seconds", "0",
		"--validation", "header", "--transactions", "1000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchBrokerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := res.Modes[0]
	if m.TxnRecordsPerTxn != 1000 || m.TxnProduceRecordsPerSec <= 0 || m.TxnProduceVsPlain <= 0 ||
		m.TxnReadCommittedRecordsPerSec <= 0 || m.TxnReadUncommittedRecordsPerSec <= 0 || m.TxnReadCommittedVsUncommitted <= 0 {
		t.Fatalf("transactions figures: %+v", m)
	}
	if len(m.TxnProduceVsPlainRuns) != 1 || len(m.TxnReadCommittedVsUncommittedRuns) != 1 || m.TxnProduceCPUSeconds <= 0 {
		t.Fatalf("per-run transactions figures: %+v", m)
	}
	// The three measured transactions (the warm-up one left out) each
	// sent one EndTxn.
	reqs := map[string]float64{}
	for _, r := range m.TxnRequests {
		reqs[r.Request] = r.PerTxn
	}
	if reqs["EndTxn"] != 1 || reqs["AddPartitionsToTxn"] < 1 || reqs["Produce"] < 1 {
		t.Fatalf("requests per transaction: %+v", m.TxnRequests)
	}
}

// TestBenchBrokerProducePasses: --produce-passes times the records produced
// that many times to the run's topic (one broker, metrics on), and the
// consume phase still reads the first N after the warm-up record.
func TestBenchBrokerProducePasses(t *testing.T) {
	out, errOut, code := run(t, "bench", "broker", "--records", "1500", "--runs", "1", "--produce-passes", "3", "--latency-seconds", "0", "--validation", "header", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res BenchBrokerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := res.Modes[0]
	if res.ProducePasses != 3 || res.ConsumePasses != 1 || len(m.ProduceSecondsRuns) != 1 {
		t.Fatalf("produce_passes %d, consume_passes %d, runs %v", res.ProducePasses, res.ConsumePasses, m.ProduceSecondsRuns)
	}
	if got := m.ProduceRecordsPerSecs[0] * m.ProduceSecondsRuns[0]; math.Abs(got-3*1500) > 1 {
		t.Errorf("%v records/s over %v s is %v records, want 3 passes of 1500", m.ProduceRecordsPerSecs[0], m.ProduceSecondsRuns[0], got)
	}
	if got := m.ConsumeRecordsPerSecs[0] * m.ConsumeSecondsRuns[0]; math.Abs(got-1500) > 1 {
		t.Errorf("consumed %v records, want 1500", got)
	}
}
