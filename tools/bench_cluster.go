package tools

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// benchClusterBrokers is how many brokers strata bench cluster starts.
const benchClusterBrokers = 3

// benchClusterPhases are the phases --phases may name, in the order they run.
var benchClusterPhases = []string{"throughput", "latency", "catchup", "reassign", "failover"}

func benchClusterCommand() *cli.Command {
	return &cli.Command{
		Name:      "cluster",
		Usage:     "replication: produce with acks=all and acks=1, consume, latency, follower catch-up and leader failover on a three-broker cluster",
		UsageText: "strata bench cluster [--bootstrap-server HOST:PORT,...] [--replication-factor 3] [--min-insync-replicas 2] [--records N] [--catchup-mb M] [--runs K] [--json]",
		Description: `Drives a replicated topic with franz-go (kgo) over loopback, beside the same
run's single-node figures and loopback limit. With no --bootstrap-server it starts
a real ZooKeeper (Debian's zookeeper package, as scripts/zk.sh) and three brokers
(ids 1-3) on 127.0.0.1, each a child process of this binary ("strata broker
--override ...") with its data in a temporary directory; with one, it drives that
cluster (throughput and latency only: it cannot stop brokers it did not start).
A single-node broker (another child process, no ZooKeeper) runs the same
throughput and latency phases in the same invocation.

Each run creates new one-partition topics with --replication-factor replicas and
min.insync.replicas=--min-insync-replicas, and measures (--phases):
  throughput  produce N records of S value bytes with acks=all, then N with
              acks=1 (another topic), each timed from the first Produce call to
              Flush returning after W acknowledged warm-up records; consume the
              acks=all topic's N with a fresh client;
  latency     records at --latency-rate for --latency-seconds with acks=all, a
              consumer polling concurrently: p50/p99/p99.9 of receive minus send
              (consumers read below the high watermark: every replica in the ISR
              has the record), and of the producer's acknowledgement minus send;
  catchup     a follower stopped (SIGTERM), --catchup-mb MB produced (acks=1),
              the follower restarted: MB/s from its first fetched byte to its
              log end reaching the leader's (the partition's .log files on disk,
              polled every 2 ms), and the time from the restart until it is back
              in the ISR. Before the restart, as many bytes are written to a
              scratch file in the follower's data dir and removed, so that its
              appends reuse memory the machine has faulted in (a VM hands out
              memory it has not touched recently slowly, and each run's deleted
              topic frees gigabytes of page cache for it to reclaim); the
              reassign phase does the same on the new replica's broker;
  reassign    a one-replica topic pre-filled with --reassign-mb MB (acks=1) gets a
              replica on another broker (AlterPartitionReassignments, as strata
              reassign --execute): MB/s from the new replica's first byte to its
              log end reaching the leader's (polled every 2 ms), beside the
              loopback limit over as many bytes just before; then the same with
              --reassign-throttle-mb-per-sec x --reassign-throttle-seconds MB
              under that throttle (the configs strata reassign --throttle
              sets): MB/s overall and from the first 20% of the bytes on, and
              the ratio to the throttle. The brokers run with
              replication.quota.window.num=2 (Kafka's 11 lets a fresh throttle
              pass 10 s of its rate at once);
  failover    a steady acks=all producer at --failover-rate: the leader (never
              the controller) is killed with SIGKILL: the time until a record
              sent after the kill is acknowledged (floor: session timeout + 1 s);
              then, on a new topic, the leader gets SIGTERM (controlled
              shutdown): the longest any record waited for its acknowledgement.
              The killed and stopped brokers are restarted and back in the ISR
              before the next phase.
The producer: idempotence off, no compression, linger --linger-ms, batches of up
to --batch-max-bytes, --max-buffered-records, --max-inflight requests per broker
(see the README for why these values). The latency and failover producers do not
linger. The failover producer refreshes metadata at most every 100 ms and retries
every 100 ms (franz-go's defaults, 5 s and up to 2.5 s, would measure the
client's backoff, not the cluster).
Beside them: limit_loopback_mb_per_sec, one plain TCP stream over 127.0.0.1 in
the same run. MB = 10^6 bytes of record values. Figures are medians over --runs;
CPU is the brokers' (from /proc) plus this process's.

Examples:
   strata bench cluster
   strata bench cluster --runs 5 --json
   strata bench cluster --phases throughput,latency --records 2000000
   strata bench cluster --bootstrap-server 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] of a running cluster (default: start ZooKeeper and three brokers)"},
			&cli.IntFlag{Name: "replication-factor", Value: 3, Usage: "replicas of each topic created"},
			&cli.IntFlag{Name: "min-insync-replicas", Value: 2, Usage: "min.insync.replicas of each topic created"},
			&cli.Int64Flag{Name: "records", Value: 1_000_000, Usage: "records to produce (per acks setting) and consume"},
			&cli.Int64Flag{Name: "warmup-records", Value: 1, Usage: "records produced and acknowledged before the produce clock starts (at least 1)"},
			&cli.IntFlag{Name: "record-size", Value: 100, Usage: "value bytes per record (at least 16 for the latency stamp)"},
			&cli.IntFlag{Name: "latency-rate", Value: 10_000, Usage: "records/s during the latency phase"},
			&cli.Float64Flag{Name: "latency-seconds", Value: 3, Usage: "length of the latency phase"},
			&cli.IntFlag{Name: "latency-linger-ms", Value: 0, Usage: "producer linger during the latency phase"},
			&cli.Int64Flag{Name: "catchup-mb", Value: 1000, Usage: "MB (10^6 bytes of values) a stopped follower falls behind"},
			&cli.Int64Flag{Name: "reassign-mb", Value: 500, Usage: "MB (10^6 bytes of values) the reassign phase moves without a throttle"},
			&cli.Float64Flag{Name: "reassign-throttle-mb-per-sec", Value: 20, Usage: "the throttle of the reassign phase's throttled move (MB/s)"},
			&cli.Float64Flag{Name: "reassign-throttle-seconds", Value: 15, Usage: "how long the throttled move should take at the throttle"},
			&cli.IntFlag{Name: "failover-rate", Value: 1000, Usage: "records/s of the producer across the SIGKILL and SIGTERM of the leader"},
			&cli.Int64Flag{Name: "session-timeout-ms", Value: 6000, Usage: "zookeeper.session.timeout.ms of the brokers started"},
			&cli.Float64Flag{Name: "linger-ms", Value: 10, Usage: "producer linger (throughput phase)"},
			&cli.IntFlag{Name: "batch-max-bytes", Value: 1_000_000, Usage: "producer batch size limit (throughput phase)"},
			&cli.IntFlag{Name: "max-buffered-records", Value: 50_000, Usage: "records the producer buffers before Produce blocks (throughput phase)"},
			&cli.IntFlag{Name: "max-inflight", Value: 1, Usage: "produce requests in flight per broker (throughput phase)"},
			&cli.IntFlag{Name: "fetch-max-bytes", Value: 64 << 20, Usage: "consumer fetch.max.bytes"},
			&cli.IntFlag{Name: "fetch-partition-max-bytes", Value: 8 << 20, Usage: "consumer max.partition.fetch.bytes"},
			&cli.StringFlag{Name: "phases", Value: strings.Join(benchClusterPhases, ","), Usage: "comma-separated subset of " + strings.Join(benchClusterPhases, ",")},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions; medians are reported"},
			&cli.StringFlag{Name: "topic-prefix", Value: "strata-bench-cluster", Usage: "prefix of the topics created"},
			&cli.StringFlag{Name: "dir", Usage: "where the temporary directories of ZooKeeper and the brokers go (default: $TMPDIR)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the brokers' and ZooKeeper's directories (logs included)"},
			&cli.GenericFlag{Name: "override", Value: &multiString{}, Usage: "key=value for every broker started, repeatable"},
			&cli.StringFlag{Name: "broker-log-level", Value: "warn", Usage: "--log-level of the brokers started (their logs stay in --dir with --keep)"},
			&cli.StringFlag{Name: "broker-cpuprofile", Usage: "each broker writes a CPU profile to PREFIX.<broker>.<start>.pprof when it stops (not after SIGKILL)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runBenchCluster,
	}
}

// benchClusterConfig is strata bench cluster's settings beyond the driver's.
type benchClusterConfig struct {
	drive      benchBrokerConfig
	rf, minISR int
	catchupMB  int64
	reassignMB int64
	// reassignThrottleMBps and reassignThrottleSeconds size the throttled
	// move of the reassign phase.
	reassignThrottleMBps, reassignThrottleSeconds float64
	failoverRate                                  int
	sessionTimeoutMs                              int64
	linger                                        time.Duration
	batchMaxBytes                                 int32
	maxBuffered                                   int
	maxInflight                                   int
	phases                                        map[string]bool
	overrides                                     []string
	profile, dir                                  string
	logLevel                                      string
	keep, external                                bool
	seeds                                         []string
}

// BenchClusterResult is the --json output of strata bench cluster. The
// top-level figures are the cluster's; SingleNode holds the same phases on
// a single-node broker of the same run.
type BenchClusterResult struct {
	Bootstrap              string   `json:"bootstrap"`
	Started                bool     `json:"started"` // ZooKeeper and the brokers started by the bench
	Brokers                int      `json:"brokers"`
	ReplicationFactor      int      `json:"replication_factor"`
	MinInsyncReplicas      int      `json:"min_insync_replicas"`
	Records                int64    `json:"records"`
	WarmupRecords          int64    `json:"warmup_records"`
	RecordSize             int      `json:"record_size"`
	Runs                   int      `json:"runs"`
	Phases                 []string `json:"phases"`
	Compression            string   `json:"compression"`
	ProducerLingerMs       float64  `json:"producer_linger_ms"`
	ProducerBatchMaxBytes  int32    `json:"producer_batch_max_bytes"`
	ProducerMaxBuffered    int      `json:"producer_max_buffered_records"`
	ProducerMaxInflight    int      `json:"producer_max_inflight_per_broker"`
	FetchMaxBytes          int32    `json:"fetch_max_bytes"`
	FetchPartitionMaxBytes int32    `json:"fetch_partition_max_bytes"`
	LatencyRate            int      `json:"latency_rate"`
	LatencySeconds         float64  `json:"latency_seconds"`
	LatencyLingerMs        int64    `json:"latency_linger_ms"`
	FailoverRate           int      `json:"failover_rate"`
	SessionTimeoutMs       int64    `json:"session_timeout_ms"`
	LoadAvg1               float64  `json:"loadavg_1m"`
	LoadAvg1End            float64  `json:"loadavg_1m_end"`
	// CPUPressure is the share of the last minute in which some runnable
	// task waited for a CPU (Linux PSI, /proc/pressure/cpu "some avg60"),
	// at the start and at the end: above a few percent, the machine's other
	// work is in the figures, latency first.
	CPUPressure    float64 `json:"cpu_pressure_some_avg60_pct"`
	CPUPressureEnd float64 `json:"cpu_pressure_some_avg60_pct_end"`
	BenchClusterFigures
	SingleNode BenchClusterFigures `json:"single_node"`
	// Ratios of the cluster's medians to the single node's.
	ProduceAcksAllVsSingleNode float64 `json:"produce_acks_all_vs_single_node"`
	ProduceAcks1VsSingleNode   float64 `json:"produce_acks_1_vs_single_node"`
	ConsumeVsSingleNode        float64 `json:"consume_vs_single_node"`
	BenchClusterFaults
	LimitLoopbackMBps float64   `json:"limit_loopback_mb_per_sec"`
	LimitLoopbackRuns []float64 `json:"limit_loopback_mb_per_sec_runs"`
}

// BenchClusterFigures are the throughput and latency medians of one target
// (the cluster or the single node), with the brokers' and driver's CPU.
type BenchClusterFigures struct {
	ProduceAcksAllRecordsPerSec float64   `json:"produce_acks_all_records_per_sec"`
	ProduceAcksAllMBps          float64   `json:"produce_acks_all_mb_per_sec"`
	ProduceAcks1RecordsPerSec   float64   `json:"produce_acks_1_records_per_sec"`
	ProduceAcks1MBps            float64   `json:"produce_acks_1_mb_per_sec"`
	ConsumeRecordsPerSec        float64   `json:"consume_records_per_sec"`
	ConsumeMBps                 float64   `json:"consume_mb_per_sec"`
	ProduceAcksAllCPUSeconds    float64   `json:"produce_acks_all_cpu_seconds"`
	ProduceAcks1CPUSeconds      float64   `json:"produce_acks_1_cpu_seconds"`
	ConsumeCPUSeconds           float64   `json:"consume_cpu_seconds"`
	ProduceAcksAllVsLimit       float64   `json:"produce_acks_all_vs_limit"`
	ProduceAcks1VsLimit         float64   `json:"produce_acks_1_vs_limit"`
	ConsumeVsLimit              float64   `json:"consume_vs_limit"`
	LatencyAcks                 string    `json:"latency_acks"`
	LatencyRecords              int       `json:"latency_records"`
	LatencyP50Ms                float64   `json:"latency_p50_ms"`
	LatencyP99Ms                float64   `json:"latency_p99_ms"`
	LatencyP999Ms               float64   `json:"latency_p999_ms"`
	LatencyMaxMs                float64   `json:"latency_max_ms"`
	LatencyAckP50Ms             float64   `json:"latency_ack_p50_ms"`
	LatencyAckP99Ms             float64   `json:"latency_ack_p99_ms"`
	LatencyAckP999Ms            float64   `json:"latency_ack_p999_ms"`
	ProduceAcksAllRuns          []float64 `json:"produce_acks_all_records_per_sec_runs"`
	ProduceAcks1Runs            []float64 `json:"produce_acks_1_records_per_sec_runs"`
	ConsumeRuns                 []float64 `json:"consume_records_per_sec_runs"`
	LatencyP99Runs              []float64 `json:"latency_p99_ms_runs"`
}

// BenchClusterFaults are the medians of the catch-up and failover phases.
type BenchClusterFaults struct {
	CatchupMB               float64   `json:"catchup_mb"` // on disk: record batches, not only values
	CatchupSeconds          float64   `json:"catchup_seconds"`
	CatchupMBps             float64   `json:"catchup_mb_per_sec"`
	CatchupVsLimit          float64   `json:"catchup_vs_limit"` // median of the runs' ratios to their own limit_loopback_catchup
	LimitLoopbackCatchup    float64   `json:"limit_loopback_catchup_mb_per_sec"`
	CatchupToISRSeconds     float64   `json:"catchup_restart_to_isr_seconds"`
	CatchupRuns             []float64 `json:"catchup_mb_per_sec_runs"`
	FailoverSeconds         float64   `json:"failover_seconds"`
	FailoverRuns            []float64 `json:"failover_seconds_runs"`
	ShutdownStallMs         float64   `json:"controlled_shutdown_stall_ms"`
	ShutdownSeconds         float64   `json:"controlled_shutdown_seconds"`
	ShutdownStallRuns       []float64 `json:"controlled_shutdown_stall_ms_runs"`
	FailoverRecordsRetried  int64     `json:"failover_records_failed"`
	FailoverTimeoutExceeded bool      `json:"-"`
	BenchReassign
}

// BenchReassign are the medians of the reassign phase.
type BenchReassign struct {
	ReassignMB               float64   `json:"reassign_mb"` // on disk
	ReassignMBps             float64   `json:"reassign_mb_per_sec"`
	LimitLoopbackReassign    float64   `json:"limit_loopback_reassign_mb_per_sec"`
	ReassignVsLimit          float64   `json:"reassign_vs_limit"` // median of the runs' ratios to their own limit
	ReassignRuns             []float64 `json:"reassign_mb_per_sec_runs"`
	ReassignThrottleMBps     float64   `json:"reassign_throttle_mb_per_sec"`
	ReassignThrottledMB      float64   `json:"reassign_throttled_mb"`
	ReassignThrottledMBps    float64   `json:"reassign_throttled_mb_per_sec"`
	ReassignThrottledSteady  float64   `json:"reassign_throttled_steady_mb_per_sec"`
	ReassignThrottledVs      float64   `json:"reassign_throttled_vs_throttle"`
	ReassignThrottledSteadyV float64   `json:"reassign_throttled_steady_vs_throttle"`
	ReassignThrottledRuns    []float64 `json:"reassign_throttled_mb_per_sec_runs"`
	ReassignSteadyRuns       []float64 `json:"reassign_throttled_steady_mb_per_sec_runs"`
}

func runBenchCluster(c *cli.Context) error {
	cfg := benchClusterConfig{
		drive: benchBrokerConfig{
			records: c.Int64("records"), warmup: c.Int64("warmup-records"), recordSize: c.Int("record-size"),
			latencyRate: c.Int("latency-rate"), latencySeconds: c.Float64("latency-seconds"),
			latencyLinger: time.Duration(c.Int("latency-linger-ms")) * time.Millisecond,
			fetchMaxBytes: int32(c.Int("fetch-max-bytes")), fetchPartBytes: int32(c.Int("fetch-partition-max-bytes")),
			runs: c.Int("runs"), topicPrefix: c.String("topic-prefix"),
		},
		rf: c.Int("replication-factor"), minISR: c.Int("min-insync-replicas"),
		reassignMB: c.Int64("reassign-mb"), reassignThrottleMBps: c.Float64("reassign-throttle-mb-per-sec"), reassignThrottleSeconds: c.Float64("reassign-throttle-seconds"),
		catchupMB: c.Int64("catchup-mb"), failoverRate: c.Int("failover-rate"), sessionTimeoutMs: c.Int64("session-timeout-ms"),
		linger:        time.Duration(c.Float64("linger-ms") * float64(time.Millisecond)),
		batchMaxBytes: int32(c.Int("batch-max-bytes")), maxBuffered: c.Int("max-buffered-records"), maxInflight: c.Int("max-inflight"),
		overrides: overrides(c), profile: c.String("broker-cpuprofile"), logLevel: c.String("broker-log-level"), dir: c.String("dir"), keep: c.Bool("keep"),
		phases: map[string]bool{},
	}
	d := &cfg.drive
	switch {
	case d.records < 1 || d.runs < 1 || d.warmup < 1:
		return usageErr("--records, --warmup-records and --runs must be positive")
	case d.recordSize < latencyStampSize:
		return usageErr("--record-size must be at least %d (the latency stamp)", latencyStampSize)
	case d.latencySeconds <= 0 || d.latencyRate < 1 || cfg.failoverRate < 1:
		return usageErr("--latency-seconds, --latency-rate and --failover-rate must be positive")
	case d.fetchMaxBytes < 1 || d.fetchPartBytes < 1:
		return usageErr("--fetch-max-bytes and --fetch-partition-max-bytes must be positive")
	case c.Int("latency-linger-ms") < 0 || cfg.linger < 0:
		return usageErr("--latency-linger-ms and --linger-ms must not be negative")
	case cfg.rf < 1 || cfg.rf > benchClusterBrokers || cfg.minISR < 1 || cfg.minISR > cfg.rf:
		return usageErr("--replication-factor must be 1-%d and --min-insync-replicas 1 up to it", benchClusterBrokers)
	case cfg.catchupMB < 1 || cfg.sessionTimeoutMs < 1000:
		return usageErr("--catchup-mb must be positive and --session-timeout-ms at least 1000")
	case cfg.reassignMB < 1 || cfg.reassignThrottleMBps <= 0 || cfg.reassignThrottleSeconds <= 0:
		return usageErr("--reassign-mb, --reassign-throttle-mb-per-sec and --reassign-throttle-seconds must be positive")
	case cfg.batchMaxBytes < 1024 || cfg.maxBuffered < 1 || cfg.maxInflight < 1:
		return usageErr("--batch-max-bytes must be at least 1024, --max-buffered-records and --max-inflight positive")
	}
	for _, p := range strings.Split(c.String("phases"), ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(benchClusterPhases, p) {
			return usageErr("--phases: %q is not one of %s", p, strings.Join(benchClusterPhases, ","))
		}
		cfg.phases[p] = true
	}
	if b := c.String("bootstrap-server"); b != "" {
		cfg.external = true
		cfg.seeds = strings.Split(b, ",")
		if cfg.phases["catchup"] || cfg.phases["failover"] || cfg.phases["reassign"] {
			if c.IsSet("phases") {
				return usageErr("--phases catchup, reassign and failover stop brokers or read their disks: they need the cluster this command starts, not --bootstrap-server")
			}
			delete(cfg.phases, "catchup")
			delete(cfg.phases, "reassign")
			delete(cfg.phases, "failover")
		}
	}
	// Only the driver runs in this process: see DriverGCPercent.
	defer debug.SetGCPercent(debug.SetGCPercent(DriverGCPercent))
	res, err := runBenchClusterRuns(c, &cfg)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	printBenchCluster(c.App.Writer, res)
	return nil
}

// brokerOverrides are the settings of the brokers the bench starts, before
// --override's: the session timeout, prompt topic deletion (the catch-up
// topic's gigabyte goes at the end of its phase), and quiet group defaults.
func (cfg *benchClusterConfig) brokerOverrides() []string {
	return append([]string{
		"zookeeper.session.timeout.ms=" + strconv.FormatInt(cfg.sessionTimeoutMs, 10),
		"file.delete.delay.ms=1000",
		"group.initial.rebalance.delay.ms=0",
		"replication.quota.window.num=2",
	}, cfg.overrides...)
}

// brokerOpts are the command-line options of the brokers started.
func (cfg *benchClusterConfig) brokerOpts() benchBrokerOpts {
	return benchBrokerOpts{profile: cfg.profile, logLevel: cfg.logLevel}
}

// targets are the producer targets of the throughput phase for seeds: acks=all
// and acks=1, topics of rf replicas with min.insync.replicas, the tuned
// batching.
func (cfg *benchClusterConfig) targets(seeds []string, rf int) (all, one benchTarget) {
	minISR := strconv.Itoa(min(cfg.minISR, rf))
	all = benchTarget{
		seeds: seeds, acks: kgo.AllISRAcks(), rf: int16(rf),
		configs: map[string]*string{"min.insync.replicas": &minISR},
		tune: []kgo.Opt{
			kgo.ProducerLinger(cfg.linger),
			kgo.ProducerBatchMaxBytes(cfg.batchMaxBytes),
			kgo.MaxBufferedRecords(cfg.maxBuffered),
			kgo.MaxProduceRequestsInflightPerBroker(cfg.maxInflight),
		},
	}
	if cfg.batchMaxBytes > 1_000_000 {
		// The topic must take batches that large (max.message.bytes,
		// default 1,000,012).
		mb := strconv.Itoa(int(cfg.batchMaxBytes) + 12)
		all.configs["max.message.bytes"] = &mb
	}
	one = all
	one.acks = kgo.LeaderAck()
	return all, one
}

// runBenchClusterRuns starts what is needed and runs --runs rounds.
func runBenchClusterRuns(c *cli.Context, cfg *benchClusterConfig) (*BenchClusterResult, error) {
	d := &cfg.drive
	res := &BenchClusterResult{
		Started: !cfg.external, Brokers: benchClusterBrokers, ReplicationFactor: cfg.rf, MinInsyncReplicas: cfg.minISR,
		Records: d.records, WarmupRecords: d.warmup, RecordSize: d.recordSize, Runs: d.runs, Compression: "none",
		ProducerLingerMs: float64(cfg.linger) / 1e6, ProducerBatchMaxBytes: cfg.batchMaxBytes, ProducerMaxBuffered: cfg.maxBuffered,
		ProducerMaxInflight: cfg.maxInflight, FetchMaxBytes: d.fetchMaxBytes, FetchPartitionMaxBytes: d.fetchPartBytes,
		LatencyRate: d.latencyRate, LatencySeconds: d.latencySeconds, LatencyLingerMs: d.latencyLinger.Milliseconds(),
		FailoverRate: cfg.failoverRate, SessionTimeoutMs: cfg.sessionTimeoutMs, LoadAvg1: loadAvg1(), CPUPressure: cpuPressure(),
	}
	for _, p := range benchClusterPhases {
		if cfg.phases[p] {
			res.Phases = append(res.Phases, p)
		}
	}
	if cfg.external {
		res.Brokers = len(cfg.seeds)
	}
	dir, err := os.MkdirTemp(cfg.dir, "strata-bench-cluster-")
	if err != nil {
		return nil, failErr(err)
	}
	if cfg.keep {
		fmt.Fprintf(c.App.ErrWriter, "strata bench cluster: ZooKeeper's and the brokers' directories (logs included) are kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var cl *benchCluster
	seeds := cfg.seeds
	if !cfg.external {
		cl, err = startBenchCluster(filepath.Join(dir, "cluster"), benchClusterBrokers, cfg.brokerOverrides(), cfg.brokerOpts())
		if err != nil {
			return nil, failErr(fmt.Errorf("starting the cluster: %w", err))
		}
		defer cl.stop(cfg.keep || cfg.profile != "")
		seeds = cl.addrs()
	}
	res.Bootstrap = strings.Join(seeds, ",")
	var single *benchBroker
	if cfg.phases["throughput"] || cfg.phases["latency"] {
		single, err = newBenchBroker(filepath.Join(dir, "single"), 0, cfg.overrides, cfg.brokerOpts())
		if err == nil {
			err = single.start()
		}
		if err != nil {
			return nil, failErr(fmt.Errorf("starting the single-node broker: %w", err))
		}
		defer func() {
			if err := single.term(60 * time.Second); err != nil {
				fmt.Fprintln(c.App.ErrWriter, "strata bench cluster:", err)
			}
		}()
	}
	var cRuns, sRuns []clusterThroughputRun
	var faults []clusterFaultRun
	bar := newProgress(c.App.ErrWriter, int64(d.runs)*cfg.progressBytes(), "bench cluster")
	for run := 0; run < d.runs; run++ {
		l, err := loopbackLimit(256 << 20)
		if err != nil {
			return nil, failErr(fmt.Errorf("loopback limit: %w", err))
		}
		res.LimitLoopbackRuns = append(res.LimitLoopbackRuns, l)
		prefix := fmt.Sprintf("%s-%d-%d", d.topicPrefix, time.Now().UnixNano(), run)
		if single != nil {
			all, one := cfg.targets([]string{single.addr}, 1)
			r, err := cfg.throughputRun(all, one, prefix+"-single", single.cpu, bar)
			if err != nil {
				return nil, fmt.Errorf("single node: %w", err)
			}
			sRuns = append(sRuns, r)
		}
		if cfg.phases["throughput"] || cfg.phases["latency"] {
			all, one := cfg.targets(seeds, cfg.rf)
			cpu := func() time.Duration { return 0 }
			if cl != nil {
				cpu = cl.cpu
			}
			r, err := cfg.throughputRun(all, one, prefix+"-rf", cpu, bar)
			if err != nil {
				return nil, fmt.Errorf("cluster: %w", err)
			}
			cRuns = append(cRuns, r)
		}
		if cl != nil && (cfg.phases["catchup"] || cfg.phases["failover"] || cfg.phases["reassign"]) {
			f, err := cfg.faultRun(cl, prefix, bar)
			if err != nil {
				return nil, err
			}
			faults = append(faults, f)
		}
	}
	bar.done()
	res.LoadAvg1End, res.CPUPressureEnd = loadAvg1(), cpuPressure()
	res.LimitLoopbackMBps = median(slices.Clone(res.LimitLoopbackRuns))
	res.BenchClusterFigures = throughputFigures(cRuns, d, res.LimitLoopbackMBps)
	res.SingleNode = throughputFigures(sRuns, d, res.LimitLoopbackMBps)
	res.ProduceAcksAllVsSingleNode = ratio(res.ProduceAcksAllRecordsPerSec, res.SingleNode.ProduceAcksAllRecordsPerSec)
	res.ProduceAcks1VsSingleNode = ratio(res.ProduceAcks1RecordsPerSec, res.SingleNode.ProduceAcks1RecordsPerSec)
	res.ConsumeVsSingleNode = ratio(res.ConsumeRecordsPerSec, res.SingleNode.ConsumeRecordsPerSec)
	res.BenchClusterFaults = faultFigures(faults)
	return res, nil
}

// progressBytes is one run's value bytes, for the progress bar.
func (cfg *benchClusterConfig) progressBytes() int64 {
	var n int64
	if cfg.phases["throughput"] {
		n += 2 * 3 * cfg.drive.records * int64(cfg.drive.recordSize) // acks=all, acks=1, consume; single node too
	}
	if cfg.phases["catchup"] {
		n += cfg.catchupMB * 1e6
	}
	if cfg.phases["reassign"] {
		n += cfg.reassignMB*1e6 + int64(cfg.reassignThrottleMBps*cfg.reassignThrottleSeconds*1e6)
	}
	return n
}

// cpuPressure is Linux's CPU pressure over the last minute ("some avg60"
// of /proc/pressure/cpu, percent), or 0 when unknown.
func cpuPressure() float64 {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, "avg60="); ok {
			p, _ := strconv.ParseFloat(v, 64)
			return p
		}
	}
	return 0
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// throughputFigures are the medians of runs.
func throughputFigures(runs []clusterThroughputRun, d *benchBrokerConfig, limit float64) BenchClusterFigures {
	var f BenchClusterFigures
	if len(runs) == 0 {
		return f
	}
	var allCPU, oneCPU, consCPU, p50, p99, p999, pmax, a50, a99, a999 []float64
	for _, r := range runs {
		f.LatencyAcks, f.LatencyRecords = "all", r.latencyRecords
		if r.produceAll > 0 {
			f.ProduceAcksAllRuns = append(f.ProduceAcksAllRuns, float64(d.records)/r.produceAll.Seconds())
			f.ProduceAcks1Runs = append(f.ProduceAcks1Runs, float64(d.records)/r.produceOne.Seconds())
			f.ConsumeRuns = append(f.ConsumeRuns, float64(d.records)/r.consume.Seconds())
			allCPU, oneCPU, consCPU = append(allCPU, r.produceAllCPU.Seconds()), append(oneCPU, r.produceOneCPU.Seconds()), append(consCPU, r.consumeCPU.Seconds())
		}
		if r.latencyRecords > 0 {
			p50, p99, p999, pmax = append(p50, r.p50), append(p99, r.p99), append(p999, r.p999), append(pmax, r.max)
			a50, a99, a999 = append(a50, r.ackP50), append(a99, r.ackP99), append(a999, r.ackP999)
			f.LatencyP99Runs = append(f.LatencyP99Runs, r.p99)
		}
	}
	bytes := d.records * int64(d.recordSize)
	if len(f.ProduceAcksAllRuns) > 0 {
		f.ProduceAcksAllRecordsPerSec = median(slices.Clone(f.ProduceAcksAllRuns))
		f.ProduceAcks1RecordsPerSec = median(slices.Clone(f.ProduceAcks1Runs))
		f.ConsumeRecordsPerSec = median(slices.Clone(f.ConsumeRuns))
		f.ProduceAcksAllMBps = f.ProduceAcksAllRecordsPerSec * float64(bytes) / float64(d.records) / 1e6
		f.ProduceAcks1MBps = f.ProduceAcks1RecordsPerSec * float64(bytes) / float64(d.records) / 1e6
		f.ConsumeMBps = f.ConsumeRecordsPerSec * float64(bytes) / float64(d.records) / 1e6
		f.ProduceAcksAllCPUSeconds, f.ProduceAcks1CPUSeconds, f.ConsumeCPUSeconds = median(allCPU), median(oneCPU), median(consCPU)
		f.ProduceAcksAllVsLimit = ratio(f.ProduceAcksAllMBps, limit)
		f.ProduceAcks1VsLimit = ratio(f.ProduceAcks1MBps, limit)
		f.ConsumeVsLimit = ratio(f.ConsumeMBps, limit)
	}
	if len(p50) > 0 {
		f.LatencyP50Ms, f.LatencyP99Ms, f.LatencyP999Ms, f.LatencyMaxMs = median(p50), median(p99), median(p999), median(pmax)
		f.LatencyAckP50Ms, f.LatencyAckP99Ms, f.LatencyAckP999Ms = median(a50), median(a99), median(a999)
	}
	return f
}

// faultFigures are the medians of the catch-up and failover runs.
func faultFigures(runs []clusterFaultRun) BenchClusterFaults {
	var f BenchClusterFaults
	var mb, secs, isr, shut, lim, vs []float64
	for _, r := range runs {
		if r.catchupBytes > 0 {
			mb, secs, isr = append(mb, float64(r.catchupBytes)/1e6), append(secs, r.catchup.Seconds()), append(isr, r.restartToISR.Seconds())
			f.CatchupRuns = append(f.CatchupRuns, mbps(r.catchupBytes, r.catchup.Seconds()))
			lim, vs = append(lim, r.catchupLimit), append(vs, ratio(mbps(r.catchupBytes, r.catchup.Seconds()), r.catchupLimit))
		}
		if r.failover > 0 {
			f.FailoverRuns = append(f.FailoverRuns, r.failover.Seconds())
			f.ShutdownStallRuns = append(f.ShutdownStallRuns, float64(r.stall)/1e6)
			shut = append(shut, r.shutdown.Seconds())
			f.FailoverRecordsRetried += r.failed
		}
	}
	if len(mb) > 0 {
		f.CatchupMB, f.CatchupSeconds, f.CatchupToISRSeconds = median(mb), median(secs), median(isr)
		f.CatchupMBps = median(slices.Clone(f.CatchupRuns))
		f.LimitLoopbackCatchup, f.CatchupVsLimit = median(lim), median(vs)
	}
	var rmb, rvs, rlim, tmb []float64
	for _, r := range runs {
		if rr := r.reassign; rr != nil {
			rate := mbps(rr.bytes, rr.took.Seconds())
			rmb, rlim, rvs = append(rmb, float64(rr.bytes)/1e6), append(rlim, rr.limit), append(rvs, ratio(rate, rr.limit))
			f.ReassignRuns = append(f.ReassignRuns, rate)
			tmb = append(tmb, float64(rr.tBytes)/1e6)
			f.ReassignThrottledRuns = append(f.ReassignThrottledRuns, mbps(rr.tBytes, rr.tTook.Seconds()))
			f.ReassignSteadyRuns = append(f.ReassignSteadyRuns, mbps(rr.tSteadyBytes, rr.tSteady.Seconds()))
			f.ReassignThrottleMBps = float64(rr.throttleBytes) / 1e6
		}
	}
	if len(rmb) > 0 {
		f.ReassignMB, f.ReassignMBps = median(rmb), median(slices.Clone(f.ReassignRuns))
		f.LimitLoopbackReassign, f.ReassignVsLimit = median(rlim), median(rvs)
		f.ReassignThrottledMB = median(tmb)
		f.ReassignThrottledMBps = median(slices.Clone(f.ReassignThrottledRuns))
		f.ReassignThrottledSteady = median(slices.Clone(f.ReassignSteadyRuns))
		f.ReassignThrottledVs = ratio(f.ReassignThrottledMBps, f.ReassignThrottleMBps)
		f.ReassignThrottledSteadyV = ratio(f.ReassignThrottledSteady, f.ReassignThrottleMBps)
	}
	if len(shut) > 0 {
		f.FailoverSeconds = median(slices.Clone(f.FailoverRuns))
		f.ShutdownStallMs = median(slices.Clone(f.ShutdownStallRuns))
		f.ShutdownSeconds = median(shut)
	}
	return f
}

func printBenchCluster(w io.Writer, res *BenchClusterResult) {
	where := "a running cluster at " + res.Bootstrap
	if res.Started {
		where = fmt.Sprintf("ZooKeeper and %d brokers started on 127.0.0.1 (zookeeper.session.timeout.ms %d)", res.Brokers, res.SessionTimeoutMs)
	}
	fmt.Fprintf(w, "strata bench cluster: %d records of %d B, one partition, replication factor %d, min.insync.replicas %d, %s, median of %d runs\n",
		res.Records, res.RecordSize, res.ReplicationFactor, res.MinInsyncReplicas, where, res.Runs)
	fmt.Fprintf(w, "  machine: load average %.2f at the start, %.2f at the end; CPU pressure (tasks waiting for a CPU, last minute) %.0f%% and %.0f%%\n",
		res.LoadAvg1, res.LoadAvg1End, res.CPUPressure, res.CPUPressureEnd)
	fmt.Fprintf(w, "  producer: no compression, idempotence off, linger %g ms, batches up to %d B, %d records buffered, %d requests in flight per broker\n",
		res.ProducerLingerMs, res.ProducerBatchMaxBytes, res.ProducerMaxBuffered, res.ProducerMaxInflight)
	fmt.Fprintf(w, "  limit (loopback TCP, one connection, median of %d streams) %.1f MB/s\n", loopbackLimitStreams, res.LimitLoopbackMBps)
	c, s := &res.BenchClusterFigures, &res.SingleNode
	if c.ProduceAcksAllRecordsPerSec > 0 {
		fmt.Fprintf(w, "                     %-36s %-36s %s\n", "cluster", "single node", "cluster/single")
		row := func(name string, cr, cm, sr, sm, cpu, cpuS, secs float64) {
			fmt.Fprintf(w, "  %-17s  %10.0f records/s %8.1f MB/s    %10.0f records/s %8.1f MB/s    %.2f   (CPU %.1f cores; single node %.1f)\n",
				name, cr, cm, sr, sm, ratio(cr, sr), ratio(cpu, secs), ratio(cpuS, float64(res.Records)/sr))
		}
		row("produce acks=all", c.ProduceAcksAllRecordsPerSec, c.ProduceAcksAllMBps, s.ProduceAcksAllRecordsPerSec, s.ProduceAcksAllMBps,
			c.ProduceAcksAllCPUSeconds, s.ProduceAcksAllCPUSeconds, float64(res.Records)/c.ProduceAcksAllRecordsPerSec)
		row("produce acks=1", c.ProduceAcks1RecordsPerSec, c.ProduceAcks1MBps, s.ProduceAcks1RecordsPerSec, s.ProduceAcks1MBps,
			c.ProduceAcks1CPUSeconds, s.ProduceAcks1CPUSeconds, float64(res.Records)/c.ProduceAcks1RecordsPerSec)
		row("consume", c.ConsumeRecordsPerSec, c.ConsumeMBps, s.ConsumeRecordsPerSec, s.ConsumeMBps,
			c.ConsumeCPUSeconds, s.ConsumeCPUSeconds, float64(res.Records)/c.ConsumeRecordsPerSec)
	}
	if c.LatencyRecords > 0 {
		fmt.Fprintf(w, "  latency acks=all at %d records/s: p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms (%d records); single node: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n",
			res.LatencyRate, c.LatencyP50Ms, c.LatencyP99Ms, c.LatencyP999Ms, c.LatencyMaxMs, c.LatencyRecords,
			s.LatencyP50Ms, s.LatencyP99Ms, s.LatencyP999Ms, s.LatencyMaxMs)
		fmt.Fprintf(w, "    of which the producer's acknowledgement: p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms; single node: p50 %.3f  p99 %.3f  p99.9 %.3f ms\n",
			c.LatencyAckP50Ms, c.LatencyAckP99Ms, c.LatencyAckP999Ms, s.LatencyAckP50Ms, s.LatencyAckP99Ms, s.LatencyAckP999Ms)
	}
	f := &res.BenchClusterFaults
	if f.CatchupMB > 0 {
		fmt.Fprintf(w, "  follower catch-up  %.1f MB in %.3f s: %.1f MB/s   limit (loopback TCP, as many bytes, just before) %.1f MB/s   ratio %.3f; restart to back in the ISR %.3f s\n",
			f.CatchupMB, f.CatchupSeconds, f.CatchupMBps, f.LimitLoopbackCatchup, f.CatchupVsLimit, f.CatchupToISRSeconds)
	}
	if f.ReassignMB > 0 {
		fmt.Fprintf(w, "  reassignment      %.1f MB in a new replica: %.1f MB/s   limit (loopback TCP, as many bytes, just before) %.1f MB/s   ratio %.3f (floor 0.5)\n",
			f.ReassignMB, f.ReassignMBps, f.LimitLoopbackReassign, f.ReassignVsLimit)
		fmt.Fprintf(w, "  reassignment --throttle %.1f MB/s: %.1f MB moved at %.2f MB/s overall (%.3f of the throttle), %.2f MB/s past the first 20%% (%.3f; floor within 0.9-1.1)\n",
			f.ReassignThrottleMBps, f.ReassignThrottledMB, f.ReassignThrottledMBps, f.ReassignThrottledVs, f.ReassignThrottledSteady, f.ReassignThrottledSteadyV)
	}
	if f.FailoverSeconds > 0 {
		fmt.Fprintf(w, "  leader SIGKILL: writes acknowledged again after %.3f s (zookeeper.session.timeout.ms %d + 1 s = %.1f s)\n",
			f.FailoverSeconds, res.SessionTimeoutMs, float64(res.SessionTimeoutMs)/1000+1)
		fmt.Fprintf(w, "  leader SIGTERM (controlled shutdown, %.3f s): longest produce stall %.1f ms (acks=all at %d records/s)\n",
			f.ShutdownSeconds, f.ShutdownStallMs, res.FailoverRate)
	}
}
