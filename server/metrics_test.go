package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metricsServer starts a broker whose metrics listener is on an ephemeral
// loopback port.
func metricsServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	s := startServer(t, t.TempDir(), append([]string{"strata.metrics.listener=127.0.0.1:0"}, extra...)...)
	if s.MetricsAddr() == nil {
		t.Fatal("metrics listener did not start")
	}
	return s
}

// scrape GETs path from the metrics listener.
func scrape(t testing.TB, s *Server, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.MetricsAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b)
}

// sample is the value of one series in a text exposition, the series
// written as Prometheus prints it (labels sorted by name).
func sample(body, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return v, err == nil
		}
	}
	return 0, false
}

func wantSample(t *testing.T, body, series string, want float64) {
	t.Helper()
	got, ok := sample(body, series)
	if !ok {
		t.Errorf("%s: missing from the scrape", series)
		return
	}
	if got != want {
		t.Errorf("%s = %v, want %v", series, got, want)
	}
}

// TestMetricsAfterWorkload produces and fetches a known workload, commits a
// group offset short of the end, and checks what /metrics says: records
// and bytes in and out of the topic, requests by API, log size, partition
// and leader counts, the active controller, and the group's lag.
func TestMetricsAfterWorkload(t *testing.T) {
	s := metricsServer(t)
	r := newTopic(t, s, "wl", 1)
	const batches, perBatch = 5, 4
	var bytesIn int
	for i := range batches {
		batch := makeBatch(t, perBatch, 50)
		bytesIn += len(batch)
		p := r.roundTrip(produceRequest("wl", 0, batch, 9), int32(i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatal(p.ErrorCode)
		}
	}
	// A produce to a partition that does not exist fails.
	if p := r.roundTrip(produceRequest("wl", 7, makeBatch(t, 1, 10), 9), 90).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode == 0 {
		t.Fatal("produce to partition 7 of a 1-partition topic succeeded")
	}
	req := fetchRequest(12, "wl", 0, 0)
	req.MaxWaitMillis = 0
	f := r.roundTrip(req, 100).(*kmsg.FetchResponse)
	if got := len(f.Topics[0].Partitions[0].RecordBatches); got != bytesIn {
		t.Fatalf("fetched %d record bytes, want %d", got, bytesIn)
	}
	adm := kadm.NewClient(newClient(t, s))
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "wl", Partition: 0, At: 3, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(testCtx(t), "lagging", offs); err != nil {
		t.Fatal(err)
	}

	body := scrape(t, s, "/metrics")
	wantSample(t, body, `kafka_server_brokertopicmetrics_messagesin_total{topic="wl"}`, batches*perBatch)
	wantSample(t, body, `kafka_server_brokertopicmetrics_bytesin_total{topic="wl"}`, float64(bytesIn))
	wantSample(t, body, `kafka_server_brokertopicmetrics_bytesout_total{topic="wl"}`, float64(bytesIn))
	wantSample(t, body, `kafka_server_brokertopicmetrics_totalproducerequests_total{topic="wl"}`, batches+1)
	wantSample(t, body, `kafka_server_brokertopicmetrics_failedproducerequests_total{topic="wl"}`, 1)
	wantSample(t, body, `kafka_server_brokertopicmetrics_totalfetchrequests_total{topic="wl"}`, 1)
	wantSample(t, body, `kafka_network_requestmetrics_requests_total{request="Produce",version="9"}`, batches+1)
	wantSample(t, body, `kafka_network_requestmetrics_requests_total{request="FetchConsumer",version="12"}`, 1)
	wantSample(t, body, `kafka_network_requestmetrics_requests_total{request="Fetch",version="12"}`, 1)
	wantSample(t, body, `kafka_network_requestmetrics_totaltimems_count{request="Produce"}`, batches+1)
	wantSample(t, body, `kafka_log_log_size{partition="0",topic="wl"}`, float64(bytesIn))
	wantSample(t, body, `kafka_log_log_logendoffset{partition="0",topic="wl"}`, batches*perBatch)
	wantSample(t, body, `kafka_controller_kafkacontroller_activecontrollercount`, 1)
	wantSample(t, body, `kafka_server_replicamanager_underreplicatedpartitions`, 0)
	wantSample(t, body, `kafka_consumergroup_current_offset{consumergroup="lagging",partition="0",topic="wl"}`, 3)
	wantSample(t, body, `kafka_consumergroup_lag{consumergroup="lagging",partition="0",topic="wl"}`, batches*perBatch-3)
	for _, series := range []string{
		`kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}`,
		`kafka_network_requestmetrics_localtimems{request="Produce",quantile="0.99"}`,
		`kafka_network_requestmetrics_responsesendtimems{request="Produce",quantile="0.99"}`,
		`kafka_server_replicamanager_partitioncount`,
		`kafka_server_replicamanager_leadercount`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if v, ok := sample(body, series); !ok || v != v {
			t.Errorf("%s: missing or NaN (%v)", series, v)
		}
	}
	if v, _ := sample(body, `kafka_server_replicamanager_partitioncount`); v < 1 {
		t.Errorf("partitioncount %v, want at least the topic's partition", v)
	}
}

// TestMetricsPromtool runs Prometheus' own lint (promtool check metrics)
// over a scrape after traffic: HELP and TYPE on every family, counters
// ending in _total, quantiles only on summaries. Under CI=true a missing
// promtool fails the test (scripts/deps.sh installs Debian's prometheus).
func TestMetricsPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found (apt-get install prometheus); CI=true requires it")
		}
		t.Skip("promtool not found (apt-get install prometheus)")
	}
	s := metricsServer(t)
	r := newTopic(t, s, "lint", 1)
	r.roundTrip(produceRequest("lint", 0, makeBatch(t, 3, 20), 9), 1)
	req := fetchRequest(12, "lint", 0, 0)
	req.MaxWaitMillis = 0
	r.roundTrip(req, 2)
	body := scrape(t, s, "/metrics")
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsNoAllocsPerRequest: metrics on must not add an allocation to
// a produce or a fetch request (the counters and histograms are atomics;
// the topic's stats are found without allocating).
func TestMetricsNoAllocsPerRequest(t *testing.T) {
	allocs := func(listener string) (produce, fetch float64) {
		s := startServer(t, t.TempDir(), "strata.metrics.listener="+listener)
		newTopic(t, s, "na", 1)
		c := &conn{s: s, nc: discardConn{}, log: s.log}
		frame := produceFrame(t, "na", 10, 100)
		work := make([]byte, len(frame))
		produceOnce := func() {
			copy(work, frame)
			if err := c.handle(work); err != nil {
				t.Fatal(err)
			}
		}
		fetch1 := fetchFrame(t, "na")
		fetchOnce := func() {
			if err := c.handle(fetch1); err != nil {
				t.Fatal(err)
			}
		}
		produceOnce() // first request of each API: its histograms are made
		fetchOnce()
		return testing.AllocsPerRun(200, produceOnce), testing.AllocsPerRun(200, fetchOnce)
	}
	offP, offF := allocs("")
	onP, onF := allocs("127.0.0.1:0")
	t.Logf("allocations per request, metrics off/on: produce %v/%v, fetch %v/%v", offP, onP, offF, onF)
	if onP > offP || onF > offF {
		t.Fatalf("metrics add allocations: produce %v -> %v, fetch %v -> %v", offP, onP, offF, onF)
	}
}

// fetchFrame is a Fetch v12 request frame (no size prefix) for partition 0
// of topic from offset 0, not waiting.
func fetchFrame(t testing.TB, topic string) []byte {
	t.Helper()
	req := fetchRequest(12, topic, 0, 0)
	req.MaxWaitMillis = 0
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint16(b, 5)
	b = append(b, "bench"...)
	b = append(b, 0) // header tags
	return req.AppendTo(b)
}

// TestMetricsListenerTaken: a metrics port already in use is logged and the
// broker serves Kafka without the endpoint.
func TestMetricsListenerTaken(t *testing.T) {
	a := metricsServer(t)
	b := startServer(t, t.TempDir(), "strata.metrics.listener="+a.MetricsAddr().String())
	if b.MetricsAddr() != nil {
		t.Fatalf("second broker bound %s too", b.MetricsAddr())
	}
	r := newTopic(t, b, "still", 1)
	if p := r.roundTrip(produceRequest("still", 0, makeBatch(t, 1, 10), 9), 1).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce without the metrics listener: code %d", p.ErrorCode)
	}
}

// TestMetricsListenerConfig: strata.metrics.listener takes host:port or
// empty, and refuses anything else at load.
func TestMetricsListenerConfig(t *testing.T) {
	if DefaultConfig().MetricsListener != "127.0.0.1:9644" {
		t.Fatalf("default %q", DefaultConfig().MetricsListener)
	}
	for _, v := range []string{"", "127.0.0.1:0", "[::1]:9644", ":9644"} {
		if _, err := LoadConfig("", []string{"strata.metrics.listener=" + v}, nil); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"9644", "host", "127.0.0.1:http", "127.0.0.1:70000"} {
		if _, err := LoadConfig("", []string{"strata.metrics.listener=" + v}, nil); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

// TestStatusPage: the status page lists a created topic's partitions with
// leader, ISR and size, and the group with its lag.
func TestStatusPage(t *testing.T) {
	s := metricsServer(t)
	r := newTopic(t, s, "page-topic", 2)
	r.roundTrip(produceRequest("page-topic", 1, makeBatch(t, 5, 30), 9), 1)
	s.Metrics().Tick(time.Now())
	page := scrape(t, s, "/")
	for _, want := range []string{"<td>page-topic</td><td>0</td>", "<td>page-topic</td><td>1</td>", `id="controller">` + fmt.Sprint(s.NodeID()), "messages in", "<svg"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, "<script") {
		t.Error("status page refers to external assets or runs a script")
	}
}

// TestMetricsNoSeriesForUnknownTopics: produces and fetches naming topics
// that do not exist make no per-topic series (a client could otherwise
// grow the scrape without bound).
func TestMetricsNoSeriesForUnknownTopics(t *testing.T) {
	s := metricsServer(t, "auto.create.topics.enable=false")
	r := newTopic(t, s, "real", 1)
	for i := range 5 {
		name := fmt.Sprintf("made-up-%d", i)
		r.roundTrip(produceRequest(name, 0, makeBatch(t, 1, 10), 9), int32(2*i))
		req := fetchRequest(12, name, 0, 0)
		req.MaxWaitMillis = 0
		r.roundTrip(req, int32(2*i+1))
	}
	body := scrape(t, s, "/metrics")
	if strings.Contains(body, "made-up-") {
		t.Fatal("series for topics that do not exist")
	}
}

// TestMetricsLogFlush: with log.flush.interval.messages=1 every append is
// fsynced, and LogFlushRateAndTimeMs and strata's fsync and append
// histograms count them.
func TestMetricsLogFlush(t *testing.T) {
	s := metricsServer(t, "log.flush.interval.messages=1")
	r := newTopic(t, s, "flushed", 1)
	for i := range 3 {
		r.roundTrip(produceRequest("flushed", 0, makeBatch(t, 2, 10), 9), int32(i))
	}
	body := scrape(t, s, "/metrics")
	for _, series := range []string{"kafka_log_logflushstats_logflushrateandtimems_count", "strata_log_fsync_seconds_count"} {
		if v, ok := sample(body, series); !ok || v < 3 {
			t.Errorf("%s = %v, want at least 3 (one per append)", series, v)
		}
	}
	wantSample(t, body, "strata_log_append_seconds_count", 3)
	if v, _ := sample(body, `strata_log_append_seconds_bucket{le="+Inf"}`); v != 3 {
		t.Errorf("append histogram +Inf bucket %v, want 3", v)
	}
}
