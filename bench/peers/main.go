package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config holds the command line.
type config struct {
	out              string
	charts           string
	runs             int
	base             string
	sizes            []int
	records          map[int]int // records per size for the none and batch policies
	recordsSync      int         // records for fsync every append
	batch            int
	protocol         bool
	storage          bool
	protoRecords     int
	latencyRate      int
	latencyCount     int
	strataBin        string
	engineFilter     string
	repo             string
	protoRecordsSync int
	policies         []string // protocol policies to run
	protoWarmup      int
}

func main() {
	var cfg config
	var sizes string
	var n100, n1k int
	var save, render string
	flag.StringVar(&save, "save", "results.json", "with -out: write every run's raw figures here as JSON")
	flag.StringVar(&render, "render", "", "render -out and the charts from a -save file instead of running")
	flag.StringVar(&cfg.out, "out", "", "write the report (markdown) here; empty: stdout only")
	flag.StringVar(&cfg.charts, "charts", "charts", "directory for the PNG charts")
	flag.IntVar(&cfg.runs, "runs", 3, "repetitions; medians are quoted with min-max")
	flag.StringVar(&cfg.base, "dir", os.TempDir(), "directory on the filesystem under test; each case gets a fresh temp dir in it")
	flag.StringVar(&sizes, "sizes", "100,1024", "record sizes in bytes")
	flag.IntVar(&n100, "records-100", 200000, "records per storage case at 100 B (none and batch policies)")
	flag.IntVar(&n1k, "records-1k", 100000, "records per storage case at 1 KiB and above (none and batch policies)")
	flag.IntVar(&cfg.recordsSync, "records-sync", 4000, "records per storage case under fsync every append")
	flag.IntVar(&cfg.batch, "batch", 100, "records per fsync under the batch policy")
	flag.BoolVar(&cfg.storage, "storage", true, "run the storage table")
	flag.BoolVar(&cfg.protocol, "protocol", true, "run the protocol table")
	flag.IntVar(&cfg.protoRecords, "proto-records", 200000, "records per protocol case")
	flag.IntVar(&cfg.protoRecordsSync, "proto-records-sync", 50000, "records per protocol case when the broker fsyncs before acknowledging (enough for several produce requests of 1 MB at 100 B)")
	flag.IntVar(&cfg.protoWarmup, "proto-warmup", 20000, "records produced and acknowledged before each protocol case's produce clock starts (every broker)")
	flag.StringVar(&cfg.repo, "repo", "../..", "strata's repository root (to build the strata binary)")
	flag.IntVar(&cfg.latencyRate, "latency-rate", 10000, "records/s offered in the latency phase")
	flag.IntVar(&cfg.latencyCount, "latency-records", 50000, "records in the latency phase (at -latency-rate: 5 s, so that a p99 is not one or two disk stalls)")
	flag.StringVar(&cfg.strataBin, "strata", "", "strata binary (default: built from ../.. into a temp dir)")
	flag.StringVar(&cfg.engineFilter, "engines", "", "comma-separated engine names to run (default all)")
	policies := flag.String("policies", strings.Join(protoPolicies, ","), "comma-separated protocol policies to run")
	flag.Parse()
	for _, p := range strings.Split(*policies, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(protoPolicies, p) {
			fatalf("-policies: %q is not one of %s", p, strings.Join(protoPolicies, ", "))
		}
		cfg.policies = append(cfg.policies, p)
	}
	cfg.records = map[int]int{}
	for _, f := range strings.Split(sizes, ",") {
		s, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || s < 8 {
			fatalf("-sizes: %q is not a size of at least 8 bytes", f)
		}
		cfg.sizes = append(cfg.sizes, s)
		cfg.records[s] = n1k
		if s < 1024 {
			cfg.records[s] = n100
		}
	}
	if cfg.protoWarmup < 1 {
		fatalf("-proto-warmup must be at least 1")
	}
	if cfg.runs < 1 || cfg.batch < 1 || cfg.batch >= poolSize || cfg.recordsSync < 1 {
		fatalf("-runs, -batch and -records-sync must be positive and -batch below %d", poolSize)
	}
	if render != "" {
		rep, err := loadReport(render, cfg)
		if err != nil {
			fatalf("-render: %v", err)
		}
		finish(rep, "")
		return
	}
	rep := &report{cfg: cfg, started: time.Now(), load: loadAvg(), machine: describeMachine(cfg.base)}
	for run := 0; run < cfg.runs; run++ {
		logf("run %d of %d: machine limits", run+1, cfg.runs)
		m, err := measureLimits(cfg.base)
		if err != nil {
			fatalf("machine limits: %v", err)
		}
		rep.limits = append(rep.limits, m)
		if cfg.storage {
			if err := runStorageTable(cfg, rep, run); err != nil {
				fatalf("%v", err)
			}
		}
		if cfg.protocol {
			if err := runProtocolTable(&cfg, rep, run); err != nil {
				fatalf("%v", err)
			}
		}
	}
	rep.loadEnd = loadAvg()
	rep.finished = time.Now()
	if rep.bins.dir != "" {
		os.RemoveAll(rep.bins.dir)
	}
	finish(rep, save)
}

// finish writes the raw results (when save is set), the report and the charts.
func finish(rep *report, save string) {
	if save != "" && rep.cfg.out != "" {
		if err := rep.save(save); err != nil {
			fatalf("-save: %v", err)
		}
	}
	md := rep.markdown()
	if rep.cfg.out == "" {
		fmt.Print(md)
		return
	}
	if err := rep.writeCharts(); err != nil {
		fatalf("charts: %v", err)
	}
	if err := os.WriteFile(rep.cfg.out, []byte(md), 0o644); err != nil {
		fatalf("%v", err)
	}
	logf("wrote %s and charts in %s", rep.cfg.out, rep.cfg.charts)
}

// runStorageTable runs every storage case once. The engine order rotates with
// the run, so no engine always runs right after the same neighbour or first
// into a cold machine.
func runStorageTable(cfg config, rep *report, run int) error {
	for _, size := range cfg.sizes {
		recs := newRecords(size)
		for _, p := range policies {
			n := cfg.records[size]
			if p == PolicyEvery {
				n = cfg.recordsSync
			}
			all := engines()
			if p != PolicyNone {
				if err := runInterleaved(cfg, rep, all, size, p, n, recs, run); err != nil {
					return err
				}
				continue
			}
			for i := range all {
				e := all[(i+run)%len(all)]
				if !wanted(cfg, e.Name()) || e.Mapping(p) == "" {
					continue
				}
				c := storageCase{engine: e, size: size, policy: p, records: n, batch: cfg.batch}
				t0 := time.Now()
				res, err := runStorage(c, cfg.base, recs)
				if err != nil {
					return err
				}
				logf("  %-22s %5d B  %-20s %8d records  append %10.0f/s  read %10.0f/s  (%.1f s)",
					e.Name(), size, p, n, res.appendPerSec, res.readPerSec, time.Since(t0).Seconds())
				rep.addStorage(e.Name(), size, p, res)
			}
		}
	}
	return nil
}

// runInterleaved runs one fsync policy's cell of one record size for every
// engine that can, interleaved (runStorageInterleaved).
func runInterleaved(cfg config, rep *report, all []Engine, size int, p Policy, n int, recs *records, run int) error {
	var cases []storageCase
	for _, e := range all {
		if wanted(cfg, e.Name()) && e.Mapping(p) != "" {
			cases = append(cases, storageCase{engine: e, size: size, policy: p, records: n, batch: cfg.batch})
		}
	}
	if len(cases) == 0 {
		return nil
	}
	// The column's limit runs in the same slices (loopEngine).
	cases = append(cases, storageCase{engine: loopEngine{reserve: int64(n) * int64(size)}, size: size, policy: p, records: n, batch: cfg.batch})
	t0 := time.Now()
	res, err := runStorageInterleaved(cases, cfg.base, recs, run)
	if err != nil {
		return err
	}
	for i, c := range cases {
		logf("  %-22s %5d B  %-20s %8d records  append %10.0f/s  read %10.0f/s  (interleaved, %.1f s for all)",
			c.engine.Name(), size, p, n, res[i].appendPerSec, res[i].readPerSec, time.Since(t0).Seconds())
		rep.addStorage(c.engine.Name(), size, p, res[i])
	}
	return nil
}

func wanted(cfg config, name string) bool {
	if cfg.engineFilter == "" {
		return true
	}
	for _, f := range strings.Split(cfg.engineFilter, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peers: "+format+"\n", args...)
	os.Exit(1)
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
