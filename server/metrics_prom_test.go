package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// dashboardQueries are the PromQL queries of the reference Kafka dashboard
// kept in internal/metrics/dashboard.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "internal", "metrics", "dashboard", "kafka-queries.promql"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			qs = append(qs, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestMetricsRealPrometheus starts a real Prometheus server (Debian's
// prometheus package) scraping a broker every second, and checks that the
// target is up and that every query of the reference Kafka dashboard
// returns series. Under CI=true a missing prometheus fails the test.
func TestMetricsRealPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus not found (apt-get install prometheus); CI=true requires it")
		}
		t.Skip("prometheus not found (apt-get install prometheus)")
	}
	queries := dashboardQueries(t)
	s := metricsServer(t)
	r := newTopic(t, s, "dash", 2)
	for i := range 4 {
		r.roundTrip(produceRequest("dash", int32(i%2), makeBatch(t, 3, 40), 9), int32(i))
	}
	req := fetchRequest(12, "dash", 0, 0)
	req.MaxWaitMillis = 0
	r.roundTrip(req, 10)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "dash", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := kadm.NewClient(newClient(t, s)).CommitOffsets(testCtx(t), "dash-group", offs); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: strata\n    static_configs:\n      - targets: ['%s']\n", s.MetricsAddr())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	deadline := time.Now().Add(60 * time.Second)
	query := func(q string) (int, error) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var out struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return 0, err
		}
		if out.Status != "success" {
			return 0, fmt.Errorf("query %q: %s", q, out.Error)
		}
		return len(out.Data.Result), nil
	}
	// The target up, and two scrapes at least (irate needs two samples).
	for {
		n, err := query(`count_over_time(up{job="strata"}[1m]) >= 3 and up{job="strata"} == 1`)
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("strata target not up in Prometheus (last: %d series, %v)\n%s", n, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Keep traffic going so the rates have something to show.
	for i := range 3 {
		r.roundTrip(produceRequest("dash", 1, makeBatch(t, 2, 40), 9), int32(20+i))
	}
	for _, q := range queries {
		for {
			n, err := query(q)
			if err != nil && strings.Contains(err.Error(), "parse error") {
				t.Fatalf("dashboard query does not parse: %v", err)
			}
			if err == nil && n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("dashboard query %q: no series (%v)", q, err)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
