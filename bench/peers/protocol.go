package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// protoPolicies are the protocol table's durability policies: acknowledged
// records in the page cache, or fsynced before the acknowledgement.
var protoPolicies = []string{"none", "fsync"}

type protoKey struct {
	engine string
	size   int
	policy string
}

type protoSample struct {
	produce, consume sample // records/s
	p50, p99, p999   sample // ms
	loopback         sample // MB/s, the driver's own limit (strata and kfake)
}

// protoResult is one run of one protocol case.
type protoResult struct {
	Produce  float64 `json:"produce_records_per_sec"`
	Consume  float64 `json:"consume_records_per_sec"`
	P50      float64 `json:"latency_p50_ms"`
	P99      float64 `json:"latency_p99_ms"`
	P999     float64 `json:"latency_p999_ms"`
	Loopback float64 `json:"limit_loopback_mb_per_sec"`
	// LatencyErr says why the latency phase failed (JetStream only); the
	// latencies are then negative and printed n/a.
	LatencyErr string `json:"-"`
}

type protoFigure struct {
	name        string
	unit        string
	lowerBetter bool
	get         func(*protoSample) sample
}

func protoFigures() []protoFigure {
	return []protoFigure{
		{"produce", "records/s", false, func(s *protoSample) sample { return s.produce }},
		{"consume", "records/s", false, func(s *protoSample) sample { return s.consume }},
		{"latency p50", "ms", true, func(s *protoSample) sample { return s.p50 }},
		{"latency p99", "ms", true, func(s *protoSample) sample { return s.p99 }},
	}
}

func fmtFig(v float64, f protoFigure) string {
	if f.unit == "ms" {
		return fmt.Sprintf("%.2f ms", v)
	}
	return si(v) + "/s"
}

// protoEngines are the brokers, strata first.
var protoEngines = []string{"strata", "kfake", "nats jetstream"}

type binaries struct{ dir, strata, kfake, js string }

func buildBinaries(cfg *config) (binaries, error) {
	dir, err := os.MkdirTemp("", "peers-bin-*")
	if err != nil {
		return binaries{}, err
	}
	b := binaries{dir: dir, strata: cfg.strataBin, kfake: filepath.Join(dir, "kfakebroker"), js: filepath.Join(dir, "jsbroker")}
	if b.strata == "" {
		b.strata = filepath.Join(dir, "strata")
		cmd := exec.Command("go", "build", "-o", b.strata, "github.com/stratalog/strata")
		cmd.Dir = cfg.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("build strata in %s: %v\n%s", cfg.repo, err, out)
		}
	}
	for _, p := range [][2]string{{b.kfake, "./cmd/kfakebroker"}, {b.js, "./cmd/jsbroker"}} {
		if out, err := exec.Command("go", "build", "-o", p[0], p[1]).CombinedOutput(); err != nil {
			return b, fmt.Errorf("build %s: %v\n%s", p[1], err, out)
		}
	}
	return b, nil
}

func runProtocolTable(cfg *config, rep *report, run int) error {
	if rep.bins.strata == "" {
		logf("building strata, kfakebroker and jsbroker")
		b, err := buildBinaries(cfg)
		if err != nil {
			return err
		}
		rep.bins = b
	}
	for _, size := range cfg.sizes {
		for _, pol := range cfg.policies {
			n := cfg.protoRecords
			if pol == "fsync" {
				n = cfg.protoRecordsSync
			}
			for i := range protoEngines {
				e := protoEngines[(i+run)%len(protoEngines)]
				if !wanted(*cfg, e) {
					continue
				}
				t0 := time.Now()
				res, err := runProtoCase(cfg, rep.bins, e, size, pol, n)
				if err != nil {
					logf("  %s %d B %s: %v", e, size, pol, err)
					rep.addProtoErr(e, fmt.Sprintf("%d B %s: %v", size, pol, err))
					continue
				}
				logf("  %-15s %5d B %-6s %7d records  produce %9.0f/s  consume %9.0f/s  p50 %.2f ms  p99 %.2f ms  (%.1f s)",
					e, size, pol, n, res.Produce, res.Consume, res.P50, res.P99, time.Since(t0).Seconds())
				rep.addProto(protoKey{e, size, pol}, res)
				if res.LatencyErr != "" {
					rep.addProtoErr(e, fmt.Sprintf("%d B %s, latency phase: %s", size, pol, res.LatencyErr))
				}
			}
		}
	}
	return nil
}

func runProtoCase(cfg *config, bins binaries, engine string, size int, pol string, n int) (protoResult, error) {
	dir, err := os.MkdirTemp(cfg.base, "peers-broker-*")
	if err != nil {
		return protoResult{}, err
	}
	defer os.RemoveAll(dir)
	// As for the storage cases: no broker pays for the writeback its
	// predecessor left (the none cell leaves hundreds of MB dirty).
	if err := syncFS(dir); err != nil {
		return protoResult{}, err
	}
	fsync := pol == "fsync"
	var b *brokerProc
	switch engine {
	case "strata":
		port, err := freePort()
		if err != nil {
			return protoResult{}, err
		}
		args := []string{"broker", "--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port), "--override", "log.dirs=" + dir}
		if fsync {
			// Kafka's log.preallocate: the fdatasync after each produced
			// batch then writes inside the file instead of growing it.
			args = append(args, "--override", "log.flush.interval.messages=1", "--override", "log.preallocate=true")
		}
		b, err = startBroker(bins.strata, args, fmt.Sprintf("127.0.0.1:%d", port))
	case "kfake":
		args := []string{"-data-dir", dir}
		if fsync {
			args = append(args, "-sync-writes")
		}
		b, err = startBroker(bins.kfake, args, "")
	case "nats jetstream":
		args := []string{"-store-dir", dir}
		if fsync {
			args = append(args, "-sync-always")
		}
		b, err = startBroker(bins.js, args, "")
	}
	if err != nil {
		return protoResult{}, err
	}
	defer b.stop()
	latSecs := float64(cfg.latencyCount) / float64(cfg.latencyRate)
	if engine == "nats jetstream" {
		return runJetStream(b.addr, cfg.protoWarmup, n, size, cfg.latencyRate, latSecs)
	}
	out, err := exec.Command(bins.strata, "bench", "broker", "--bootstrap-server", b.addr,
		"--records", strconv.Itoa(n), "--warmup-records", strconv.Itoa(cfg.protoWarmup), "--record-size", strconv.Itoa(size), "--runs", "1",
		"--latency-rate", strconv.Itoa(cfg.latencyRate), "--latency-seconds", strconv.FormatFloat(latSecs, 'f', -1, 64),
		"--json").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return protoResult{}, fmt.Errorf("strata bench broker: %v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return protoResult{}, err
	}
	var res protoResult
	if err := json.Unmarshal(out, &res); err != nil {
		return protoResult{}, fmt.Errorf("strata bench broker --json: %v", err)
	}
	return res, nil
}

// brokerProc is a broker running as a child process.
type brokerProc struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// startBroker starts bin with args. With addr set it waits until addr
// accepts connections; otherwise it waits for the child to print
// "listening HOST:PORT".
func startBroker(bin string, args []string, addr string) (*brokerProc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = nil
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &brokerProc{cmd: cmd, addr: addr, done: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		first := true
		for s.Scan() {
			if first && strings.HasPrefix(s.Text(), "listening ") {
				lines <- strings.TrimPrefix(s.Text(), "listening ")
				first = false
			}
		}
	}()
	go func() { b.done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	if addr == "" {
		select {
		case b.addr = <-lines:
			return b, nil
		case err := <-b.done:
			return nil, fmt.Errorf("%s exited before listening: %v", filepath.Base(bin), err)
		case <-deadline:
			b.stop()
			return nil, fmt.Errorf("%s did not listen within 60 s", filepath.Base(bin))
		}
	}
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return b, nil
		}
		select {
		case err := <-b.done:
			return nil, fmt.Errorf("%s exited before listening: %v", filepath.Base(bin), err)
		case <-deadline:
			b.stop()
			return nil, fmt.Errorf("%s did not listen on %s within 60 s", filepath.Base(bin), addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits up to 30 s before killing the child.
func (b *brokerProc) stop() {
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (r *report) addProto(k protoKey, res protoResult) {
	if r.protocol == nil {
		r.protocol = map[protoKey]*protoSample{}
	}
	s := r.protocol[k]
	if s == nil {
		s = &protoSample{}
		r.protocol[k] = s
	}
	s.produce = append(s.produce, res.Produce)
	s.consume = append(s.consume, res.Consume)
	if res.P50 >= 0 { // negative: the latency phase failed in this run
		s.p50 = append(s.p50, res.P50)
		s.p99 = append(s.p99, res.P99)
		s.p999 = append(s.p999, res.P999)
	}
	if res.Loopback > 0 {
		s.loopback = append(s.loopback, res.Loopback)
	}
}

func (r *report) addProtoErr(engine, msg string) {
	if r.protoErr == nil {
		r.protoErr = map[string]string{}
	}
	if old := r.protoErr[engine]; old != "" {
		msg = old + "; " + msg
	}
	r.protoErr[engine] = msg
}

func (r *report) protoKeys() []protoKey {
	var ks []protoKey
	for k := range r.protocol {
		ks = append(ks, k)
	}
	order := map[string]int{}
	for i, e := range protoEngines {
		order[e] = i
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.size != b.size {
			return a.size < b.size
		}
		if a.policy != b.policy {
			return a.policy < b.policy
		}
		return order[a.engine] < order[b.engine]
	})
	return ks
}
