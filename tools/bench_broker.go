package tools

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/server"
)

func benchBrokerCommand() *cli.Command {
	return &cli.Command{
		Name:      "broker",
		Usage:     "produce, consume and measure end-to-end latency against a broker with franz-go",
		UsageText: "strata bench broker [--bootstrap-server HOST:PORT] [--records N] [--warmup-records W] [--record-size BYTES] [--latency-rate R] [--latency-seconds S] [--segment-bytes B] [--retention-bytes B] [--validation full|header|both] [--runs K] [--json]",
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
           connection and first requests);
  consume  the N measured records (after the W) with a fresh client
           (--fetch-max-bytes, --fetch-partition-max-bytes);
  latency  records at a fixed --latency-rate for --latency-seconds to a second
           topic, a consumer polling it concurrently; each value carries its send
           time; p50/p99/p99.9 of receive minus send, after one unstamped record
           produced and consumed and a 0.5 s warm-up. The
           latency producer does not linger (--latency-linger-ms 0): a 10 ms
           linger alone would put the median near 5 ms.
The topics are created with segment.bytes=--segment-bytes when given (rolls
during the run: --segment-bytes 1048576 rolls every ~9,000 records of 100 B),
the latency topic also with retention.bytes=--retention-bytes (retention
deletes during the latency phase; the in-process broker then checks retention
every 500 ms).
With --bootstrap-server the driver runs with GOGC=400 (its own garbage
collections would otherwise be most of the latency tail).
Beside them, limit_loopback_mb_per_sec: one plain TCP stream over 127.0.0.1 in the
same run; every throughput is also printed as a ratio of it. MB = 10^6 bytes of
record values. Figures are medians over --runs.

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
			&cli.Int64Flag{Name: "retention-bytes", Usage: "retention.bytes of the latency topic (default: the broker's)"},
			&cli.IntFlag{Name: "fetch-max-bytes", Value: 64 << 20, Usage: "consumer fetch.max.bytes"},
			&cli.IntFlag{Name: "fetch-partition-max-bytes", Value: 8 << 20, Usage: "consumer max.partition.fetch.bytes"},
			&cli.StringFlag{Name: "validation", Usage: "in-process broker: strata.produce.validation full, header or both (default both; with --bootstrap-server it is only a label)"},
			&cli.StringFlag{Name: "metrics", Value: "on", Usage: "in-process broker: metrics on, off, or both (two brokers, runs alternating between them; prints the on/off ratio)"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions; medians are reported"},
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
	metrics        []string // in-process brokers: "on", "off"
}

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
	LoadAvg1               float64 `json:"loadavg_1m"`
	BenchBrokerFigures
	Modes []BenchBrokerFigures `json:"modes"`
	// MetricsOnVsOff (--metrics both): per validation mode, the median
	// records/s with metrics on divided by that with metrics off.
	MetricsOnVsOff []MetricsOverhead `json:"metrics_on_vs_off,omitempty"`
}

// MetricsOverhead is the throughput ratio metrics on / metrics off.
type MetricsOverhead struct {
	Validation string  `json:"validation"`
	Produce    float64 `json:"produce"`
	Consume    float64 `json:"consume"`
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
	LatencyP99Runs        []float64 `json:"latency_p99_ms_runs"`
}

func runBenchBroker(c *cli.Context) error {
	cfg := benchBrokerConfig{
		bootstrap: c.String("bootstrap-server"), records: c.Int64("records"), warmup: c.Int64("warmup-records"), recordSize: c.Int("record-size"),
		latencyRate: c.Int("latency-rate"), latencySeconds: c.Float64("latency-seconds"),
		latencyLinger: time.Duration(c.Int("latency-linger-ms")) * time.Millisecond,
		fetchMaxBytes: int32(c.Int("fetch-max-bytes")), fetchPartBytes: int32(c.Int("fetch-partition-max-bytes")),
		runs: c.Int("runs"), topicPrefix: c.String("topic-prefix"),
		segmentBytes: c.Int64("segment-bytes"), retentionBytes: c.Int64("retention-bytes"),
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
	default:
		return usageErr("--metrics must be on, off or both, not %q", c.String("metrics"))
	}
	if cfg.bootstrap != "" {
		// Only the driver runs here: see DriverGCPercent.
		defer debug.SetGCPercent(debug.SetGCPercent(DriverGCPercent))
	}
	if p := c.String("cpuprofile"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return failErr(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return failErr(err)
		}
		defer pprof.StopCPUProfile()
	}
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
		LoadAvg1: loadAvg1(),
	}
	for _, mode := range modes {
		figs, boot, err := benchBrokerMode(c, cfg, mode, nil)
		if err != nil {
			return err
		}
		if res.InProcess {
			res.Bootstrap = boot
		}
		res.Modes = append(res.Modes, figs...)
		if len(figs) == 2 && figs[1].ProduceRecordsPerSec > 0 && figs[1].ConsumeRecordsPerSec > 0 {
			res.MetricsOnVsOff = append(res.MetricsOnVsOff, MetricsOverhead{Validation: mode,
				Produce: figs[0].ProduceRecordsPerSec / figs[1].ProduceRecordsPerSec,
				Consume: figs[0].ConsumeRecordsPerSec / figs[1].ConsumeRecordsPerSec,
			})
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
// With --metrics both it starts two in-process brokers, metrics on and
// off, and alternates the runs between them (the first of each pair
// alternating too), so drift in the machine's load falls on both alike.
// With sec the clients connect through its secure listener.
func benchBrokerMode(c *cli.Context, cfg benchBrokerConfig, mode string, sec *benchSecurity) ([]BenchBrokerFigures, string, error) {
	boot := cfg.bootstrap
	type target struct {
		metrics string
		boot    string
		tgt     benchTarget
		acc     benchAcc
	}
	var targets []*target
	protocol := "PLAINTEXT"
	if boot == "" {
		for _, m := range cfg.metrics {
			dir, err := os.MkdirTemp("", "strata-bench-broker-")
			if err != nil {
				return nil, "", failErr(err)
			}
			defer os.RemoveAll(dir)
			var extra []string
			if sec != nil {
				if extra, err = sec.overrides(dir); err != nil {
					return nil, "", failErr(err)
				}
			}
			srv, err := startBenchServer(dir, mode, m == "on", c.App.ErrWriter, cfg.retentionBytes > 0, extra...)
			if err != nil {
				return nil, "", failErr(err)
			}
			defer srv.Close()
			tg := &target{metrics: m, boot: srv.Addr().String()}
			tg.tgt = brokerTarget(tg.boot)
			if sec != nil {
				if err := sec.addUser(tg.boot); err != nil {
					return nil, "", failErr(err)
				}
				protocol = sec.String()
				tg.tgt.seeds, tg.tgt.conn = []string{srv.ListenerAddr(sec.protocol).String()}, sec.clientOpts()
			}
			targets = append(targets, tg)
		}
		boot = targets[0].boot
	} else {
		targets = []*target{{boot: boot, tgt: brokerTarget(boot)}}
	}
	bar := newProgress(c.App.ErrWriter, 2*cfg.records*int64(cfg.runs)*int64(len(targets)), "bench broker ("+mode+")")
	for run := 0; run < cfg.runs; run++ {
		for k := range targets {
			tg := targets[(k+run)%len(targets)]
			l, err := loopbackLimit(256 << 20)
			if err != nil {
				return nil, boot, failErr(fmt.Errorf("loopback limit: %w", err))
			}
			r, err := benchBrokerRun(cfg, brokerTarget(tg.boot), fmt.Sprintf("%s-%s%s-%d-%d", cfg.topicPrefix, mode, tg.metrics, time.Now().UnixNano(), run), bar)
			if err != nil {
				return nil, boot, err
			}
			tg.acc.add(cfg, r, l)
		}
	}
	bar.done()
	out := make([]BenchBrokerFigures, len(targets))
	for i, tg := range targets {
		out[i] = tg.acc.figures(mode)
		out[i].Metrics, out[i].SecurityProtocol = tg.metrics, protocol
	}
	return out, boot, nil
}

// benchAcc collects one broker's runs.
type benchAcc struct {
	prodS, prodR, prodMB, consS, consR, consMB, prodCPU, consCPU, p50, p99, p999, pmax, lim []float64
	latencyRecords                                                                          int
}

func (a *benchAcc) add(cfg benchBrokerConfig, r benchRun, limit float64) {
	a.lim = append(a.lim, limit)
	a.prodS = append(a.prodS, r.produce.Seconds())
	a.prodR = append(a.prodR, float64(cfg.records)/r.produce.Seconds())
	a.prodMB = append(a.prodMB, mbps(cfg.records*int64(cfg.recordSize), r.produce.Seconds()))
	a.consS = append(a.consS, r.consume.Seconds())
	a.consR = append(a.consR, float64(cfg.records)/r.consume.Seconds())
	a.consMB = append(a.consMB, mbps(cfg.records*int64(cfg.recordSize), r.consume.Seconds()))
	a.prodCPU, a.consCPU = append(a.prodCPU, r.produceCPU.Seconds()), append(a.consCPU, r.consumeCPU.Seconds())
	a.p50, a.p99, a.p999, a.pmax = append(a.p50, r.p50), append(a.p99, r.p99), append(a.p999, r.p999), append(a.pmax, r.max)
	a.latencyRecords = r.latencyRecords
}

func (a *benchAcc) figures(mode string) BenchBrokerFigures {
	figs := BenchBrokerFigures{Validation: mode, LatencyRecords: a.latencyRecords}
	figs.ProduceRecordsPerSecs = append([]float64(nil), a.prodR...)
	figs.ConsumeRecordsPerSecs = append([]float64(nil), a.consR...)
	figs.LatencyP99Runs = append([]float64(nil), a.p99...)
	figs.ProduceSeconds, figs.ProduceRecordsPerSec, figs.ProduceMBps = median(a.prodS), median(a.prodR), median(a.prodMB)
	figs.ConsumeSeconds, figs.ConsumeRecordsPerSec, figs.ConsumeMBps = median(a.consS), median(a.consR), median(a.consMB)
	figs.LatencyP50Ms, figs.LatencyP99Ms, figs.LatencyP999Ms, figs.LatencyMaxMs = median(a.p50), median(a.p99), median(a.p999), median(a.pmax)
	figs.ProduceCPUSeconds, figs.ConsumeCPUSeconds = median(a.prodCPU), median(a.consCPU)
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
// or off; extra overrides come last (--security-protocol's listeners).
func startBenchServer(dir, validation string, metrics bool, w io.Writer, retention bool, extra ...string) (*server.Server, error) {
	ov := []string{
		"listeners=PLAINTEXT://127.0.0.1:0",
		"log.dirs=" + dir,
		"strata.produce.validation=" + validation,
		"strata.metrics.listener=",
	}
	if metrics {
		ov[len(ov)-1] += "127.0.0.1:0"
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
	fmt.Fprintf(w, "strata bench broker: %d records of %d B, one partition, acks=1, no compression, %s, median of %d runs (load average %.2f)\n",
		res.Records, res.RecordSize, where, res.Runs, res.LoadAvg1)
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
		fmt.Fprintf(w, "    consume  %12.0f records/s %9.1f MB/s   limit (loopback TCP) %9.1f MB/s   ratio %.3f\n",
			m.ConsumeRecordsPerSec, m.ConsumeMBps, m.LimitLoopbackMBps, m.ConsumeVsLimit)
		fmt.Fprintf(w, "    process CPU: produce %.2f s (%.2f cores), consume %.2f s (%.2f cores)\n",
			m.ProduceCPUSeconds, m.ProduceCPUSeconds/m.ProduceSeconds, m.ConsumeCPUSeconds, m.ConsumeCPUSeconds/m.ConsumeSeconds)
		if m.LatencyRecords > 0 {
			fmt.Fprintf(w, "    latency  at %d records/s: p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms (%d records)\n",
				res.LatencyRate, m.LatencyP50Ms, m.LatencyP99Ms, m.LatencyP999Ms, m.LatencyMaxMs, m.LatencyRecords)
		}
	}
	for _, o := range res.MetricsOnVsOff {
		fmt.Fprintf(w, "  metrics on / off (validation %s): produce %.3f, consume %.3f (median records/s, runs alternating)\n", o.Validation, o.Produce, o.Consume)
	}
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
