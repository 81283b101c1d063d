package tools

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/server"
)

func benchBrokerCommand() *cli.Command {
	return &cli.Command{
		Name:      "broker",
		Usage:     "produce, consume and measure end-to-end latency against a broker with franz-go",
		UsageText: "strata bench broker [--bootstrap-server HOST:PORT] [--records N] [--warmup-records W] [--record-size BYTES] [--latency-rate R] [--latency-seconds S] [--segment-bytes B] [--retention-bytes B] [--validation full|header|both] [--idempotent] [--transactions N] [--runs K] [--json]",
		Description: `Drives a Kafka-compatible broker with franz-go (kgo) over loopback. With no
--bootstrap-server it starts a strata broker in this process on 127.0.0.1 with its
data in a temporary directory (once per produce-validation mode, see --validation);
with one it drives that broker, so the same driver measures any Kafka broker.

Each run creates a new one-partition topic (CreateTopics) and:
  produce  N records of S value bytes, acks=1, idempotence off, no compression,
           the client's default batching (linger 10ms, 1 MB batches, 1 request
           in flight), timed from the first Produce call to Flush returning;
           W warm-up records (--warmup-records) are produced and acknowledged
           before the clock starts (the client's metadata load, produce
           connection and first requests); --produce-passes times (default 1;
           8 with --metrics both), each pass to the same topic with a fresh
           client and its own warm-up records, timed together;
  consume  the N measured records (after the W) with a fresh client
           (--fetch-max-bytes, --fetch-partition-max-bytes), --consume-passes
           times (default 1; 8 with --metrics both), each pass with a fresh
           client, timed together;
  latency  records at a fixed --latency-rate for --latency-seconds to a second
           topic, a consumer polling it concurrently; each value carries its send
           time; p50/p99/p99.9 of receive minus send, after one unstamped record
           produced and consumed and a 0.5 s warm-up. The
           latency producer does not linger (--latency-linger-ms 0): a 10 ms
           linger alone would put the median near 5 ms.
  idempotent  with --idempotent, next to the produce phase (the order of the
           produces rotates from run to run): the N records again
           with an idempotent producer (acks=all, InitProducerId, sequence
           checks) to a topic of its own, reported beside the plain rate
           (issue 19's floor: 0.9 of it);
  transactions (--transactions N) the same records again to a third topic by a
           transactional producer (acks=all, as transactions need), N records
           per transaction (Begin, N Produce, Flush, commit), after one
           warm-up transaction of the W warm-up records (not timed), next to
           the plain (and idempotent) produce of the run, timed
           from the first Begin to the last commit and compared with the
           run's plain produce (issue 19's floor: 0.7 of it with N = 1000),
           with the producer's requests per transaction and their mean round
           trips; then, after the run's other phases, read twice by new
           consumers, at read_committed and read_uncommitted (which goes
           first alternates from run to run), and compared (floor: 0.9).
The topics are created with segment.bytes=--segment-bytes when given (rolls
during the run: --segment-bytes 1048576 rolls every ~9,000 records of 100 B),
the latency topic also with retention.bytes=--retention-bytes (retention
deletes during the latency phase; the in-process broker then checks retention
every 500 ms).
With --metrics both two in-process brokers, metrics on and off, are measured
in every run, the produce passes and then the consume passes alternating
between them pass by pass in ABBA order (the first alternating from run to
run); the brokers run in two
data directories and swap roles every two runs (restarted with the flag
flipped), so each role runs in each directory and goes first equally often
(exactly with --runs a multiple of 4).
With --bootstrap-server the driver runs with GOGC=400 (its own garbage
collections would otherwise be most of the latency tail).
Beside them, limit_loopback_mb_per_sec: the median of five plain TCP streams over
127.0.0.1 in the same run; every throughput is also printed as a ratio of it.
MB = 10^6 bytes of record values. Figures are medians over --runs.

Examples:
   strata bench broker
   strata bench broker --records 2000000 --runs 5 --json
   strata bench broker --bootstrap-server 127.0.0.1:9092 --validation full`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT of a running broker (default: start one in process)"},
			&cli.Int64Flag{Name: "records", Value: 1_000_000, Usage: "records to produce and consume"},
			&cli.Int64Flag{Name: "warmup-records", Value: 1, Usage: "records produced and acknowledged before the produce clock starts (at least 1)"},
			&cli.IntFlag{Name: "record-size", Value: 100, Usage: "value bytes per record (at least 16 for the latency stamp)"},
			&cli.IntFlag{Name: "latency-rate", Value: 10_000, Usage: "records/s during the latency phase"},
			&cli.Float64Flag{Name: "latency-seconds", Value: 3, Usage: "length of the latency phase (0 skips it)"},
			&cli.IntFlag{Name: "latency-linger-ms", Value: 0, Usage: "producer linger during the latency phase"},
			&cli.Int64Flag{Name: "segment-bytes", Usage: "segment.bytes of the topics created (default: the broker's)"},
			&cli.BoolFlag{Name: "idempotent", Usage: "each run also produces the N records with an idempotent producer (acks=all) to a topic of its own, reported beside the plain rate"},
			&cli.Int64Flag{Name: "retention-bytes", Usage: "retention.bytes of the latency topic (default: the broker's)"},
			&cli.IntFlag{Name: "fetch-max-bytes", Value: 64 << 20, Usage: "consumer fetch.max.bytes"},
			&cli.IntFlag{Name: "fetch-partition-max-bytes", Value: 8 << 20, Usage: "consumer max.partition.fetch.bytes"},
			&cli.StringFlag{Name: "validation", Usage: "in-process broker: strata.produce.validation full, header or both (default both; with --bootstrap-server it is only a label)"},
			&cli.StringFlag{Name: "metrics", Value: "on", Usage: "in-process broker: metrics on, off, or both (two brokers, runs alternating between them, their roles swapped every two runs; prints the on/off ratio)"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions; medians are reported"},
			&cli.IntFlag{Name: "produce-passes", Usage: "times each run's produce phase produces the records to its topic, each pass with a new client after its warm-up records, timed together (default 1; 8 with --metrics both, for a timed section long enough to compare)"},
			&cli.IntFlag{Name: "consume-passes", Usage: "times each run's consume phase reads the produced records, each pass with a new client, timed together (default 1; 8 with --metrics both, for a timed section long enough to compare)"},
			&cli.Int64Flag{Name: "transactions", Usage: "also produce the records in transactions of N records and read them back read_committed and read_uncommitted (bench_broker_txn.go; 0: skip)"},
			&cli.StringFlag{Name: "topic-prefix", Value: "strata-bench", Usage: "prefix of the topics created"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole process (driver and in-process broker) to FILE"},
			&cli.StringFlag{Name: "trace", Usage: "write a runtime execution trace of the whole process to FILE"},
			&cli.StringFlag{Name: "security-protocol", Value: "PLAINTEXT", Usage: "in-process broker: also measure over a listener of this protocol (SSL, SASL_PLAINTEXT, SASL_SSL), each figure beside PLAINTEXT's of the same run"},
			&cli.StringFlag{Name: "sasl-mechanism", Value: "PLAIN", Usage: "with a SASL --security-protocol: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runBenchBroker,
	}
}

// DriverGCPercent is the GOGC a benchmark driver runs with (strata bench
// broker against an external broker, and bench/peers' JetStream driver alike).
// With the default of 100 franz-go's few-MB heap is collected every ~70 ms
// during the latency phase, and most of the 1-4 ms stalls behind its p99 fall
// on those collections: they are the driver's, not the broker's.
const DriverGCPercent = 400

// benchBrokerConfig holds the driver's settings.
type benchBrokerConfig struct {
	bootstrap      string
	records        int64
	warmup         int64 // records produced before the produce clock starts
	recordSize     int
	latencyRate    int
	latencySeconds float64
	latencyLinger  time.Duration
	fetchMaxBytes  int32
	fetchPartBytes int32
	runs           int
	topicPrefix    string
	segmentBytes   int64    // topic segment.bytes, 0: the broker's
	retentionBytes int64    // topic retention.bytes, 0: the broker's
	idempotent     bool     // --idempotent: an idempotent produce phase too
	transactions   int64    // records per transaction of the transactions phase, 0: none
	metrics        []string // in-process brokers: "on", "off"
	consumePasses  int      // --consume-passes: times the consume phase reads the records (0: 1)
	producePasses  int      // --produce-passes: times the produce phase produces the records (0: 1)
	noConsume      bool     // benchBrokerRun leaves the consume phase to its caller
	noProduce      bool     // benchBrokerRun leaves the plain produce phase to its caller
}

// passes is the number of consume passes of a run.
func (c benchBrokerConfig) passes() int { return max(c.consumePasses, 1) }

// consumed is the records one run's consume phase reads.
func (c benchBrokerConfig) consumed() int64 { return c.records * int64(c.passes()) }

// producePassCount is the number of produce passes of a run.
func (c benchBrokerConfig) producePassCount() int { return max(c.producePasses, 1) }

// produced is the records one run's (plain) produce phase produces, timed.
func (c benchBrokerConfig) produced() int64 { return c.records * int64(c.producePassCount()) }

// topicConfigs are the configs a bench topic is created with: retention.bytes
// only for the latency topic, whose consumer reads at the tail (the consume
// phase reads the produce topic from its start).
func (c benchBrokerConfig) topicConfigs(latency bool) [][2]string {
	var kv [][2]string
	if c.segmentBytes > 0 {
		kv = append(kv, [2]string{"segment.bytes", strconv.FormatInt(c.segmentBytes, 10)})
	}
	if c.retentionBytes > 0 && latency {
		kv = append(kv, [2]string{"retention.bytes", strconv.FormatInt(c.retentionBytes, 10)})
	}
	return kv
}

// BenchBrokerResult is the --json output of strata bench broker. Its
// top-level figures are those of the first validation mode measured (full,
// unless --validation header); Modes holds every mode.
type BenchBrokerResult struct {
	Bootstrap              string  `json:"bootstrap"`
	InProcess              bool    `json:"in_process"`
	Records                int64   `json:"records"`
	WarmupRecords          int64   `json:"warmup_records"`
	RecordSize             int     `json:"record_size"`
	Runs                   int     `json:"runs"`
	Acks                   int     `json:"acks"`
	Compression            string  `json:"compression"`
	FetchMaxBytes          int32   `json:"fetch_max_bytes"`
	FetchPartitionMaxBytes int32   `json:"fetch_partition_max_bytes"`
	LatencyRate            int     `json:"latency_rate"`
	LatencySeconds         float64 `json:"latency_seconds"`
	LatencyLingerMs        int64   `json:"latency_linger_ms"`
	SegmentBytes           int64   `json:"segment_bytes,omitempty"`
	RetentionBytes         int64   `json:"retention_bytes,omitempty"`
	ConsumePasses          int     `json:"consume_passes"`
	ProducePasses          int     `json:"produce_passes"`
	LoadAvg1               float64 `json:"loadavg_1m"`
	LoadAvg1End            float64 `json:"loadavg_1m_end"`
	BenchBrokerFigures
	Modes []BenchBrokerFigures `json:"modes"`
	// MetricsOnVsOff (--metrics both): per validation mode, the median
	// records/s with metrics on divided by that with metrics off.
	MetricsOnVsOff []MetricsOverhead `json:"metrics_on_vs_off,omitempty"`
}

// MetricsOverhead compares metrics on with metrics off. Each run produces
// the records to both brokers, then reads them from both, pass by pass in
// ABBA order (a pass is a fraction of a second; the first broker
// alternates from run to run), so that drift in the machine's load falls
// on both alike;
// the two brokers run in two slots and swap roles every two runs
// (bench_broker_slots.go), so that what belongs to one broker instance
// falls on both alike too. A run's ratio compares the two roles' figures
// of that run, and the figures are the median of the runs' ratios with
// their spread.
type MetricsOverhead struct {
	Validation string `json:"validation"`
	// Produce and Consume: median over the runs of records/s with metrics
	// on divided by records/s with metrics off (above 1: on was faster).
	Produce     float64   `json:"produce"`
	Consume     float64   `json:"consume"`
	ProduceMin  float64   `json:"produce_min"`
	ProduceMax  float64   `json:"produce_max"`
	ConsumeMin  float64   `json:"consume_min"`
	ConsumeMax  float64   `json:"consume_max"`
	ProduceRuns []float64 `json:"produce_runs"`
	ConsumeRuns []float64 `json:"consume_runs"`
	// ProduceCPU and ConsumeCPU: median over the runs of the process CPU
	// seconds of the phase with metrics on divided by those with metrics
	// off (the same records: CPU per record; above 1: on cost more).
	ProduceCPU     float64   `json:"produce_cpu"`
	ConsumeCPU     float64   `json:"consume_cpu"`
	ProduceCPURuns []float64 `json:"produce_cpu_runs"`
	ConsumeCPURuns []float64 `json:"consume_cpu_runs"`
	// OnSlotRuns and OnFirstRuns: per run, the slot (0 or 1) of the
	// metrics-on broker and whether its produce went first.
	OnSlotRuns  []int  `json:"on_slot_runs"`
	OnFirstRuns []bool `json:"on_first_runs"`
	// The same runs compared by slot and by position instead of by role:
	// median over the runs of slot 0's records/s divided by slot 1's, and
	// of the first produce's divided by the second's. Far from 1, they are
	// the instance or order bias the layout cancels (with --runs a
	// multiple of 4 it cancels exactly).
	ProduceSlot0VsSlot1  float64 `json:"produce_slot0_vs_slot1"`
	ConsumeSlot0VsSlot1  float64 `json:"consume_slot0_vs_slot1"`
	ProduceFirstVsSecond float64 `json:"produce_first_vs_second"`
}

// metricsOverhead pairs the runs of on (metrics on) and off.
func metricsOverhead(mode string, on, off *BenchBrokerFigures) MetricsOverhead {
	o := MetricsOverhead{Validation: mode}
	ratios := func(a, b []float64) []float64 {
		out := make([]float64, 0, len(a))
		for i := range min(len(a), len(b)) {
			if b[i] > 0 {
				out = append(out, a[i]/b[i])
			}
		}
		return out
	}
	o.ProduceRuns, o.ConsumeRuns = ratios(on.ProduceRecordsPerSecs, off.ProduceRecordsPerSecs), ratios(on.ConsumeRecordsPerSecs, off.ConsumeRecordsPerSecs)
	o.ProduceCPURuns, o.ConsumeCPURuns = ratios(on.ProduceCPUSecondsRuns, off.ProduceCPUSecondsRuns), ratios(on.ConsumeCPUSecondsRuns, off.ConsumeCPUSecondsRuns)
	spread := func(rs []float64) (med, lo, hi float64) {
		if len(rs) == 0 {
			return 0, 0, 0
		}
		return median(append([]float64(nil), rs...)), slices.Min(rs), slices.Max(rs)
	}
	o.Produce, o.ProduceMin, o.ProduceMax = spread(o.ProduceRuns)
	o.Consume, o.ConsumeMin, o.ConsumeMax = spread(o.ConsumeRuns)
	o.ProduceCPU, _, _ = spread(o.ProduceCPURuns)
	o.ConsumeCPU, _, _ = spread(o.ConsumeCPURuns)
	// by turns a run's on/off ratio r into slot 0 / slot 1 or first /
	// second: r itself when on held slot 0 (went first), 1/r otherwise.
	by := func(rs []float64, onIs func(run int) bool) float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			if out[i] = r; !onIs(i) {
				out[i] = 1 / r
			}
		}
		med, _, _ := spread(out)
		return med
	}
	slot0 := func(run int) bool { return onSlot(run) == 0 }
	first := func(run int) bool { return firstSlot(run) == onSlot(run) }
	for run := range o.ProduceRuns {
		o.OnSlotRuns, o.OnFirstRuns = append(o.OnSlotRuns, onSlot(run)), append(o.OnFirstRuns, first(run))
	}
	o.ProduceSlot0VsSlot1, o.ConsumeSlot0VsSlot1 = by(o.ProduceRuns, slot0), by(o.ConsumeRuns, slot0)
	o.ProduceFirstVsSecond = by(o.ProduceRuns, first)
	return o
}

// BenchBrokerFigures are one validation mode's medians.
type BenchBrokerFigures struct {
	Validation            string    `json:"validation"`
	SecurityProtocol      string    `json:"security_protocol"`
	ProduceVsPlaintext    float64   `json:"produce_vs_plaintext,omitempty"`
	ConsumeVsPlaintext    float64   `json:"consume_vs_plaintext,omitempty"`
	Metrics               string    `json:"metrics,omitempty"` // in-process broker: strata.metrics.listener on or off
	ProduceSeconds        float64   `json:"produce_seconds"`
	ProduceRecordsPerSec  float64   `json:"produce_records_per_sec"`
	ProduceMBps           float64   `json:"produce_mb_per_sec"`
	ConsumeSeconds        float64   `json:"consume_seconds"`
	ConsumeRecordsPerSec  float64   `json:"consume_records_per_sec"`
	ConsumeMBps           float64   `json:"consume_mb_per_sec"`
	ProduceCPUSeconds     float64   `json:"produce_cpu_seconds"`
	ConsumeCPUSeconds     float64   `json:"consume_cpu_seconds"`
	LatencyRecords        int       `json:"latency_records"`
	LatencyP50Ms          float64   `json:"latency_p50_ms"`
	LatencyP99Ms          float64   `json:"latency_p99_ms"`
	LatencyP999Ms         float64   `json:"latency_p999_ms"`
	LatencyMaxMs          float64   `json:"latency_max_ms"`
	LimitLoopbackMBps     float64   `json:"limit_loopback_mb_per_sec"`
	ProduceVsLimit        float64   `json:"produce_vs_limit"`
	ConsumeVsLimit        float64   `json:"consume_vs_limit"`
	ProduceRecordsPerSecs []float64 `json:"produce_records_per_sec_runs"`
	ConsumeRecordsPerSecs []float64 `json:"consume_records_per_sec_runs"`
	// Per run, wall and process CPU seconds of the timed phases.
	ProduceSecondsRuns    []float64 `json:"produce_seconds_runs"`
	ConsumeSecondsRuns    []float64 `json:"consume_seconds_runs"`
	ProduceCPUSecondsRuns []float64 `json:"produce_cpu_seconds_runs"`
	ConsumeCPUSecondsRuns []float64 `json:"consume_cpu_seconds_runs"`
	LatencyP99Runs        []float64 `json:"latency_p99_ms_runs"`
	// With --idempotent: the idempotent producer's rate (acks=all), and
	// its ratio to the plain produce rate of the same runs (issue 19's
	// floor: 0.9).
	IdempotentProduceRecordsPerSec  float64   `json:"idempotent_produce_records_per_sec,omitempty"`
	IdempotentVsPlain               float64   `json:"idempotent_vs_plain,omitempty"`
	IdempotentProduceRecordsPerSecs []float64 `json:"idempotent_produce_records_per_sec_runs,omitempty"`
	IdempotentProduceCPUSeconds     float64   `json:"idempotent_produce_cpu_seconds,omitempty"`
	// The transactions phase (--transactions): its produce rate beside the
	// run's non-transactional one, and read_committed beside
	// read_uncommitted over the same records.
	TxnRecordsPerTxn                int64   `json:"txn_records_per_transaction,omitempty"`
	TxnProduceRecordsPerSec         float64 `json:"txn_produce_records_per_sec,omitempty"`
	TxnProduceVsPlain               float64 `json:"txn_produce_vs_plain,omitempty"`
	TxnReadCommittedRecordsPerSec   float64 `json:"txn_read_committed_records_per_sec,omitempty"`
	TxnReadUncommittedRecordsPerSec float64 `json:"txn_read_uncommitted_records_per_sec,omitempty"`
	TxnReadCommittedVsUncommitted   float64 `json:"txn_read_committed_vs_uncommitted,omitempty"`
	TxnProduceCPUSeconds            float64 `json:"txn_produce_cpu_seconds,omitempty"`
	TxnReadCommittedCPUSeconds      float64 `json:"txn_read_committed_cpu_seconds,omitempty"`
	TxnReadUncommittedCPUSeconds    float64 `json:"txn_read_uncommitted_cpu_seconds,omitempty"`
	// Per run, the ratios the medians above are taken of.
	TxnProduceVsPlainRuns             []float64 `json:"txn_produce_vs_plain_runs,omitempty"`
	TxnReadCommittedVsUncommittedRuns []float64 `json:"txn_read_committed_vs_uncommitted_runs,omitempty"`
	// The transactional producer's requests per transaction and their mean
	// round trips, in the run of the median transactional rate.
	TxnRequests []TxnRequestFigures `json:"txn_requests,omitempty"`
}

func runBenchBroker(c *cli.Context) error {
	cfg := benchBrokerConfig{
		bootstrap: c.String("bootstrap-server"), records: c.Int64("records"), warmup: c.Int64("warmup-records"), recordSize: c.Int("record-size"),
		latencyRate: c.Int("latency-rate"), latencySeconds: c.Float64("latency-seconds"),
		latencyLinger: time.Duration(c.Int("latency-linger-ms")) * time.Millisecond,
		fetchMaxBytes: int32(c.Int("fetch-max-bytes")), fetchPartBytes: int32(c.Int("fetch-partition-max-bytes")),
		runs: c.Int("runs"), topicPrefix: c.String("topic-prefix"),
		segmentBytes: c.Int64("segment-bytes"), retentionBytes: c.Int64("retention-bytes"), idempotent: c.Bool("idempotent"),
		transactions: c.Int64("transactions"), consumePasses: c.Int("consume-passes"), producePasses: c.Int("produce-passes"),
	}
	switch {
	case cfg.records < 1 || cfg.runs < 1 || cfg.warmup < 1:
		return usageErr("--records, --warmup-records and --runs must be positive")
	case cfg.recordSize < latencyStampSize:
		return usageErr("--record-size must be at least %d (the latency stamp)", latencyStampSize)
	case cfg.latencySeconds < 0 || (cfg.latencySeconds > 0 && cfg.latencyRate < 1):
		return usageErr("--latency-seconds must not be negative and --latency-rate must be positive")
	case cfg.fetchMaxBytes < 1 || cfg.fetchPartBytes < 1:
		return usageErr("--fetch-max-bytes and --fetch-partition-max-bytes must be positive")
	case c.Int("latency-linger-ms") < 0:
		return usageErr("--latency-linger-ms must not be negative")
	case cfg.consumePasses < 0 || cfg.producePasses < 0:
		return usageErr("--consume-passes and --produce-passes must not be negative")
	case cfg.transactions < 0:
		return usageErr("--transactions must not be negative")
	case cfg.segmentBytes < 0 || cfg.retentionBytes < 0:
		return usageErr("--segment-bytes and --retention-bytes must not be negative")
	}
	modes, err := benchValidationModes(c.String("validation"), cfg.bootstrap != "")
	if err != nil {
		return err
	}
	sec, err := parseBenchSecurity(c.String("security-protocol"), c.String("sasl-mechanism"))
	if err != nil {
		return err
	}
	if sec != nil && cfg.bootstrap != "" {
		return usageErr("--security-protocol needs the in-process broker")
	}
	switch c.String("metrics") {
	case "on", "off":
		cfg.metrics = []string{c.String("metrics")}
	case "both":
		if cfg.bootstrap != "" {
			return usageErr("--metrics both needs the in-process broker")
		}
		cfg.metrics = []string{"on", "off"}
		if cfg.consumePasses == 0 {
			// a 1M-record pass lasts ~0.25 s: too short to compare; with 4
			// passes a quiet machine still gave medians of 0.94-1.02
			cfg.consumePasses = 8
		}
		if cfg.producePasses == 0 {
			cfg.producePasses = 8 // a 1M-record produce lasts ~0.4 s: as short
		}
	default:
		return usageErr("--metrics must be on, off or both, not %q", c.String("metrics"))
	}
	if cfg.bootstrap != "" {
		// Only the driver runs here: see DriverGCPercent.
		defer debug.SetGCPercent(debug.SetGCPercent(DriverGCPercent))
	}
	stopProfile, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return failErr(err)
	}
	defer stopProfile()
	if p := c.String("trace"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return failErr(err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return failErr(err)
		}
		defer trace.Stop()
	}
	res := BenchBrokerResult{
		Bootstrap: cfg.bootstrap, InProcess: cfg.bootstrap == "", Records: cfg.records, WarmupRecords: cfg.warmup, RecordSize: cfg.recordSize,
		Runs: cfg.runs, Acks: 1, Compression: "none", FetchMaxBytes: cfg.fetchMaxBytes, FetchPartitionMaxBytes: cfg.fetchPartBytes,
		LatencyRate: cfg.latencyRate, LatencySeconds: cfg.latencySeconds, LatencyLingerMs: cfg.latencyLinger.Milliseconds(),
		SegmentBytes: cfg.segmentBytes, RetentionBytes: cfg.retentionBytes,
		LoadAvg1: loadAvg1(), ConsumePasses: cfg.passes(), ProducePasses: cfg.producePassCount(),
	}
	// With --metrics both, a run measures both brokers back to back, the
	// first of the pair alternating (ABBA); see MetricsOverhead.
	for _, mode := range modes {
		figs, boot, err := benchBrokerMode(c, cfg, mode, nil)
		if err != nil {
			return err
		}
		if res.InProcess {
			res.Bootstrap = boot
		}
		res.Modes = append(res.Modes, figs...)
		if len(figs) == 2 {
			res.MetricsOnVsOff = append(res.MetricsOnVsOff, metricsOverhead(mode, &figs[0], &figs[1]))
		}
		if sec != nil {
			sf, _, err := benchBrokerMode(c, cfg, mode, sec)
			if err != nil {
				return err
			}
			for i := range sf {
				sf[i].ProduceVsPlaintext, sf[i].ConsumeVsPlaintext = sf[i].ProduceMBps/figs[i].ProduceMBps, sf[i].ConsumeMBps/figs[i].ConsumeMBps
			}
			res.Modes = append(res.Modes, sf...)
		}
	}
	res.BenchBrokerFigures = res.Modes[0]
	res.LoadAvg1End = loadAvg1()
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	printBenchBroker(c.App.Writer, &res)
	return nil
}

// benchValidationModes resolves --validation.
func benchValidationModes(v string, external bool) ([]string, error) {
	switch {
	case v == "" && external:
		return []string{"external"}, nil
	case v == "" || v == "both":
		if external {
			return nil, usageErr("--validation both needs the in-process broker")
		}
		return []string{"full", "header"}, nil
	case v == "full" || v == "header":
		return []string{v}, nil
	}
	return nil, usageErr("--validation must be full, header or both, not %q", v)
}

// benchBrokerMode runs --runs rounds against one broker (started here for
// the in-process modes) and returns the medians and the bootstrap address.
// With --metrics both it runs two in-process brokers, metrics on and off,
// in two slots whose roles swap every two runs (bench_broker_slots.go),
// and alternates the runs between them (the first of each pair
// alternating too), so drift in the machine's load and what belongs to one
// broker instance fall on both alike. The figures are per role (on, off).
// With sec the clients connect through its secure listener.
func benchBrokerMode(c *cli.Context, cfg benchBrokerConfig, mode string, sec *benchSecurity) ([]BenchBrokerFigures, string, error) {
	boot := cfg.bootstrap
	type target struct {
		metrics string
		tgt     benchTarget
		acc     benchAcc
	}
	var targets []*target
	protocol := "PLAINTEXT"
	if sec != nil {
		protocol = sec.String()
	}
	// With two brokers (--metrics both) they run in slots (restarted
	// with their roles swapped every two runs) and the consume passes are
	// not run inside each broker's run but after both, alternating pass by
	// pass.
	paired := boot == "" && len(cfg.metrics) == 2
	var slots [2]*benchSlot
	switch {
	case paired:
		var cleanup func()
		var err error
		if slots, cleanup, err = newBenchSlots(); err != nil {
			return nil, "", failErr(err)
		}
		defer cleanup()
		for _, m := range cfg.metrics {
			targets = append(targets, &target{metrics: m})
		}
	case boot == "":
		dir, err := os.MkdirTemp("", "strata-bench-broker-")
		if err != nil {
			return nil, "", failErr(err)
		}
		defer os.RemoveAll(dir)
		srv, tgt, err := startBenchTarget(c, cfg, dir, mode, cfg.metrics[0] == "on", sec)
		if err != nil {
			return nil, "", failErr(err)
		}
		defer srv.Close()
		boot = srv.Addr().String()
		targets = []*target{{metrics: cfg.metrics[0], tgt: tgt}}
	default:
		targets = []*target{{tgt: brokerTarget(boot)}}
	}
	phases := int64(cfg.producePassCount() + cfg.passes())
	if cfg.idempotent {
		phases++
	}
	bar := newProgress(c.App.ErrWriter, phases*cfg.records*int64(cfg.runs)*int64(len(targets)), "bench broker ("+mode+")")
	rcfg := cfg
	rcfg.noConsume, rcfg.noProduce = paired, paired
	// role is the target (index into targets) a slot's broker serves in
	// run; without slots, the k-th broker of the run.
	role := func(run, k int) int {
		if paired {
			return slotRole(run, k)
		}
		return k
	}
	for run := 0; run < cfg.runs; run++ {
		if paired && run%2 == 0 { // the roles are (re)assigned: restart both
			for s, sl := range slots {
				r := slotRole(run, s)
				if err := sl.start(c, cfg, mode, targets[r].metrics == "on", sec); err != nil {
					return nil, boot, failErr(err)
				}
				targets[r].tgt = sl.tgt
			}
			if run == 0 {
				boot = slots[onSlot(0)].srv.Addr().String()
			}
		}
		runs := make([]benchRun, len(targets))
		lims := make([]float64, len(targets))
		topics := make([]string, len(targets))
		for i, tg := range targets {
			topics[i] = fmt.Sprintf("%s-%s%s-%d-%d", cfg.topicPrefix, mode, tg.metrics, time.Now().UnixNano(), run)
		}
		var prod []benchRun // paired: the produce passes' sums
		if paired {
			// ABBA pass by pass, as the consume passes below: a pass
			// lasts a fraction of a second.
			prod = make([]benchRun, len(targets))
			for p := 0; p < 2*cfg.producePassCount(); p++ {
				i := role(run, (p/2+run+p%2)%2)
				if p < 2 {
					l, err := loopbackLimit(256 << 20)
					if err != nil {
						return nil, boot, failErr(fmt.Errorf("loopback limit: %w", err))
					}
					lims[i] = l
				}
				cpu := processCPU()
				d, err := benchProduce(cfg, targets[i].tgt, topics[i], bar)
				if err != nil {
					return nil, boot, failErr(fmt.Errorf("produce: %w", err))
				}
				prod[i].produce += d
				prod[i].produceCPU += processCPU() - cpu
			}
		}
		for k := range targets {
			i := role(run, (k+run)%len(targets))
			tg := targets[i]
			if !paired {
				l, err := loopbackLimit(256 << 20)
				if err != nil {
					return nil, boot, failErr(fmt.Errorf("loopback limit: %w", err))
				}
				lims[i] = l
			}
			var err error
			if runs[i], err = benchBrokerRun(rcfg, tg.tgt, topics[i], run, bar); err != nil {
				return nil, boot, err
			}
			if paired {
				runs[i].produce, runs[i].produceCPU = prod[i].produce, prod[i].produceCPU
			}
		}
		if paired {
			// ABBA pass by pass (by slot, as the produces): a pass lasts a
			// fraction of a second, so the two brokers' passes see the
			// same load.
			for p := 0; p < 2*cfg.passes(); p++ {
				i := role(run, (p/2+run+p%2)%2)
				cpu := processCPU()
				d, err := benchConsume(cfg, targets[i].tgt, topics[i], bar)
				if err != nil {
					return nil, boot, failErr(fmt.Errorf("consume: %w", err))
				}
				runs[i].consume += d
				runs[i].consumeCPU += processCPU() - cpu
			}
		}
		for i, tg := range targets {
			r := runs[i]
			tg.acc.add(cfg, r, lims[i])
			if cfg.transactions > 0 {
				if err := benchTxnRead(cfg, tg.tgt, topics[i]+"-txn", run, &r.txn); err != nil {
					return nil, boot, err
				}
				tg.acc.addTxn(cfg, r, r.txn)
			}
		}
		if paired {
			for s, sl := range slots {
				if benchSlotSeen != nil {
					benchSlotSeen(run, s, sl.dir, sl.srv)
				}
				if err := sl.deleteRunTopics(topics[slotRole(run, s)]); err != nil {
					return nil, boot, failErr(err)
				}
			}
		}
	}
	bar.done()
	out := make([]BenchBrokerFigures, len(targets))
	for i, tg := range targets {
		out[i] = tg.acc.figures(mode)
		out[i].Metrics, out[i].SecurityProtocol = tg.metrics, protocol
		if cfg.transactions > 0 {
			out[i].TxnRecordsPerTxn = cfg.transactions
		}
	}
	return out, boot, nil
}

// benchAcc collects one broker's runs.
type benchAcc struct {
	prodS, prodR, prodMB, consS, consR, consMB, prodCPU, consCPU, p50, p99, p999, pmax, lim, idemR []float64
	txnR, txnVs, rcR, ruR, rcVs, txnCPU, idemCPU, rcCPU, ruCPU                                     []float64
	txnReqs                                                                                        [][]TxnRequestFigures
	latencyRecords                                                                                 int
}

// addTxn adds a transactions phase beside the same run's plain produce r.
func (a *benchAcc) addTxn(cfg benchBrokerConfig, r benchRun, tf txnFigures) {
	rate := float64(cfg.records) / tf.produce.Seconds()
	rc, ru := float64(cfg.records)/tf.readCommitted.Seconds(), float64(cfg.records)/tf.readUncommitted.Seconds()
	a.txnR, a.txnVs = append(a.txnR, rate), append(a.txnVs, rate/(float64(cfg.produced())/r.produce.Seconds()))
	a.rcR, a.ruR, a.rcVs = append(a.rcR, rc), append(a.ruR, ru), append(a.rcVs, rc/ru)
	a.txnCPU, a.txnReqs = append(a.txnCPU, tf.produceCPU.Seconds()), append(a.txnReqs, tf.requests)
	a.rcCPU, a.ruCPU = append(a.rcCPU, tf.readCommittedCPU.Seconds()), append(a.ruCPU, tf.readUncommittedCPU.Seconds())
}

func (a *benchAcc) add(cfg benchBrokerConfig, r benchRun, limit float64) {
	a.lim = append(a.lim, limit)
	a.prodS = append(a.prodS, r.produce.Seconds())
	a.prodR = append(a.prodR, float64(cfg.produced())/r.produce.Seconds())
	a.prodMB = append(a.prodMB, mbps(cfg.produced()*int64(cfg.recordSize), r.produce.Seconds()))
	a.consS = append(a.consS, r.consume.Seconds())
	a.consR = append(a.consR, float64(cfg.consumed())/r.consume.Seconds())
	a.consMB = append(a.consMB, mbps(cfg.consumed()*int64(cfg.recordSize), r.consume.Seconds()))
	a.prodCPU, a.consCPU = append(a.prodCPU, r.produceCPU.Seconds()), append(a.consCPU, r.consumeCPU.Seconds())
	if r.produceIdem > 0 {
		a.idemR = append(a.idemR, float64(cfg.records)/r.produceIdem.Seconds())
		a.idemCPU = append(a.idemCPU, r.produceIdemCPU.Seconds())
	}
	a.p50, a.p99, a.p999, a.pmax = append(a.p50, r.p50), append(a.p99, r.p99), append(a.p999, r.p999), append(a.pmax, r.max)
	a.latencyRecords = r.latencyRecords
}

func (a *benchAcc) figures(mode string) BenchBrokerFigures {
	figs := BenchBrokerFigures{Validation: mode, LatencyRecords: a.latencyRecords}
	figs.ProduceRecordsPerSecs = append([]float64(nil), a.prodR...)
	figs.ConsumeRecordsPerSecs = append([]float64(nil), a.consR...)
	figs.ProduceSecondsRuns, figs.ConsumeSecondsRuns = append([]float64(nil), a.prodS...), append([]float64(nil), a.consS...)
	figs.ProduceCPUSecondsRuns, figs.ConsumeCPUSecondsRuns = append([]float64(nil), a.prodCPU...), append([]float64(nil), a.consCPU...)
	figs.LatencyP99Runs = append([]float64(nil), a.p99...)
	figs.ProduceSeconds, figs.ProduceRecordsPerSec, figs.ProduceMBps = median(a.prodS), median(a.prodR), median(a.prodMB)
	figs.ConsumeSeconds, figs.ConsumeRecordsPerSec, figs.ConsumeMBps = median(a.consS), median(a.consR), median(a.consMB)
	figs.LatencyP50Ms, figs.LatencyP99Ms, figs.LatencyP999Ms, figs.LatencyMaxMs = median(a.p50), median(a.p99), median(a.p999), median(a.pmax)
	figs.ProduceCPUSeconds, figs.ConsumeCPUSeconds = median(a.prodCPU), median(a.consCPU)
	if len(a.idemR) > 0 {
		figs.IdempotentProduceRecordsPerSecs = append([]float64(nil), a.idemR...)
		figs.IdempotentProduceRecordsPerSec = median(a.idemR)
		figs.IdempotentVsPlain = figs.IdempotentProduceRecordsPerSec / figs.ProduceRecordsPerSec
		figs.IdempotentProduceCPUSeconds = median(a.idemCPU)
	}
	if len(a.txnR) > 0 {
		// Before the medians, which sort their input.
		figs.TxnProduceVsPlainRuns, figs.TxnReadCommittedVsUncommittedRuns = append([]float64(nil), a.txnVs...), append([]float64(nil), a.rcVs...)
		figs.TxnRequests = a.txnReqs[medianIndex(a.txnR)]
		figs.TxnProduceRecordsPerSec, figs.TxnProduceVsPlain = median(a.txnR), median(a.txnVs)
		figs.TxnReadCommittedRecordsPerSec, figs.TxnReadUncommittedRecordsPerSec = median(a.rcR), median(a.ruR)
		figs.TxnReadCommittedVsUncommitted = median(a.rcVs)
		figs.TxnProduceCPUSeconds = median(a.txnCPU)
		figs.TxnReadCommittedCPUSeconds, figs.TxnReadUncommittedCPUSeconds = median(a.rcCPU), median(a.ruCPU)
	}
	figs.LimitLoopbackMBps = median(a.lim)
	if figs.LimitLoopbackMBps > 0 {
		figs.ProduceVsLimit = figs.ProduceMBps / figs.LimitLoopbackMBps
		figs.ConsumeVsLimit = figs.ConsumeMBps / figs.LimitLoopbackMBps
	}
	return figs
}

// startBenchServer starts a broker on an ephemeral loopback port; its logs
// go to w at warn level and above.
// metrics turns strata.metrics.listener on (an ephemeral loopback port)
// with the slow-request log at its default, or both off (requests are then
// not timed at all: the baseline of --metrics both); extra overrides come
// last (--security-protocol's listeners).
func startBenchServer(dir, validation string, metrics bool, w io.Writer, retention bool, extra ...string) (*server.Server, error) {
	ov := []string{
		"listeners=PLAINTEXT://127.0.0.1:0",
		"log.dirs=" + dir,
		"strata.produce.validation=" + validation,
		"strata.metrics.listener=",
	}
	if metrics {
		ov[len(ov)-1] += "127.0.0.1:0"
	} else {
		ov = append(ov, "strata.request.slow.ms=-1")
	}
	if retention {
		ov = append(ov, "log.retention.check.interval.ms=500")
	}
	ov = append(ov, extra...) // later wins: --security-protocol's listeners
	cfg, err := server.LoadConfig("", ov, nil)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return server.Start(cfg, &server.Options{Logger: log})
}

func printBenchBroker(w io.Writer, res *BenchBrokerResult) {
	where := res.Bootstrap
	if res.InProcess {
		where = "in-process strata broker at " + where
	}
	fmt.Fprintf(w, "strata bench broker: %d records of %d B, one partition, acks=1, no compression, %s, median of %d runs (load average %.2f at the start, %.2f at the end)\n",
		res.Records, res.RecordSize, where, res.Runs, res.LoadAvg1, res.LoadAvg1End)
	if res.ConsumePasses > 1 {
		fmt.Fprintf(w, "  each run's consume phase reads the records %d times\n", res.ConsumePasses)
	}
	if res.ProducePasses > 1 {
		fmt.Fprintf(w, "  each run's produce phase produces the records %d times (to the same topic; the consume reads the first)\n", res.ProducePasses)
	}
	if res.SegmentBytes > 0 || res.RetentionBytes > 0 {
		fmt.Fprintf(w, "  topics created with segment.bytes %d, retention.bytes %d (0: the broker's)\n", res.SegmentBytes, res.RetentionBytes)
	}
	for _, m := range res.Modes {
		head := "  validation " + m.Validation + ", " + m.SecurityProtocol
		if m.Metrics != "" {
			head += ", metrics " + m.Metrics
		}
		fmt.Fprintln(w, head)
		if m.ProduceVsPlaintext > 0 {
			fmt.Fprintf(w, "    vs PLAINTEXT of the same run: produce %.3f, consume %.3f\n", m.ProduceVsPlaintext, m.ConsumeVsPlaintext)
		}
		fmt.Fprintf(w, "    produce  %12.0f records/s %9.1f MB/s   limit (loopback TCP) %9.1f MB/s   ratio %.3f\n",
			m.ProduceRecordsPerSec, m.ProduceMBps, m.LimitLoopbackMBps, m.ProduceVsLimit)
		if m.IdempotentProduceRecordsPerSec > 0 {
			fmt.Fprintf(w, "    produce  %12.0f records/s idempotent (acks=all)   ratio to plain %.3f   process CPU %.2f s (plain %.2f s)\n",
				m.IdempotentProduceRecordsPerSec, m.IdempotentVsPlain, m.IdempotentProduceCPUSeconds, m.ProduceCPUSeconds)
		}
		fmt.Fprintf(w, "    consume  %12.0f records/s %9.1f MB/s   limit (loopback TCP) %9.1f MB/s   ratio %.3f\n",
			m.ConsumeRecordsPerSec, m.ConsumeMBps, m.LimitLoopbackMBps, m.ConsumeVsLimit)
		fmt.Fprintf(w, "    process CPU: produce %.2f s (%.2f cores), consume %.2f s (%.2f cores)\n",
			m.ProduceCPUSeconds, m.ProduceCPUSeconds/m.ProduceSeconds, m.ConsumeCPUSeconds, m.ConsumeCPUSeconds/m.ConsumeSeconds)
		if m.LatencyRecords > 0 {
			fmt.Fprintf(w, "    latency  at %d records/s: p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms (%d records)\n",
				res.LatencyRate, m.LatencyP50Ms, m.LatencyP99Ms, m.LatencyP999Ms, m.LatencyMaxMs, m.LatencyRecords)
		}
		if m.TxnRecordsPerTxn > 0 {
			fmt.Fprintf(w, "    transactions of %d records (acks=all): produce %12.0f records/s   ratio to the plain produce %.3f\n",
				m.TxnRecordsPerTxn, m.TxnProduceRecordsPerSec, m.TxnProduceVsPlain)
			fmt.Fprintf(w, "      consume read_committed %12.0f records/s   read_uncommitted %12.0f records/s   ratio %.3f\n",
				m.TxnReadCommittedRecordsPerSec, m.TxnReadUncommittedRecordsPerSec, m.TxnReadCommittedVsUncommitted)
			fmt.Fprintf(w, "      runs: produce ratio %s, read_committed ratio %s\n",
				fmtRatios(m.TxnProduceVsPlainRuns), fmtRatios(m.TxnReadCommittedVsUncommittedRuns))
			fmt.Fprintf(w, "      process CPU: produce %.2f s (plain %.2f s), read_committed %.2f s, read_uncommitted %.2f s\n",
				m.TxnProduceCPUSeconds, m.ProduceCPUSeconds, m.TxnReadCommittedCPUSeconds, m.TxnReadUncommittedCPUSeconds)
			if len(m.TxnRequests) > 0 {
				fmt.Fprintf(w, "      per transaction:")
				for _, r := range m.TxnRequests {
					fmt.Fprintf(w, " %s %.2f x %.3f ms;", r.Request, r.PerTxn, r.MsPerRequest)
				}
				fmt.Fprintln(w)
			}
		}
	}
	for _, o := range res.MetricsOnVsOff {
		fmt.Fprintf(w, "  metrics on / off (validation %s), median of the runs' ratios, runs in ABBA order:\n", o.Validation)
		fmt.Fprintf(w, "    records/s: produce %.3f (%.3f-%.3f), consume %.3f (%.3f-%.3f)\n", o.Produce, o.ProduceMin, o.ProduceMax, o.Consume, o.ConsumeMin, o.ConsumeMax)
		fmt.Fprintf(w, "      runs: produce %s, consume %s\n", fmtRatios(o.ProduceRuns), fmtRatios(o.ConsumeRuns))
		fmt.Fprintf(w, "    process CPU seconds: produce %.3f, consume %.3f\n", o.ProduceCPU, o.ConsumeCPU)
		fmt.Fprintf(w, "      runs: produce %s, consume %s\n", fmtRatios(o.ProduceCPURuns), fmtRatios(o.ConsumeCPURuns))
		fmt.Fprintf(w, "    the same runs by broker slot (roles swap every 2 runs), slot 0 / slot 1: produce %.3f, consume %.3f; by order, first / second produce: %.3f\n",
			o.ProduceSlot0VsSlot1, o.ConsumeSlot0VsSlot1, o.ProduceFirstVsSecond)
	}
}

// fmtRatios formats per-run ratios.
func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.FormatFloat(r, 'f', 3, 64)
	}
	return strings.Join(parts, " ")
}

// loadAvg1 is the 1-minute load average, or 0 when unknown.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return 0
	}
	return l
}
