package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func benchMirrorCommand() *cli.Command {
	return &cli.Command{
		Name:      "mirror",
		Usage:     "strata mirror between two single-node brokers, beside strata bench broker's produce rate",
		UsageText: "strata bench mirror [--records N] [--record-size BYTES] [--runs K] [--num.streams N] [--json]",
		Description: `Starts two single-node strata brokers on 127.0.0.1, each a child process of this
binary ("strata broker --override ...", no ZooKeeper) with its data in a
temporary directory, has each create its offsets topic (the group
coordinator's one-time start, about 0.15 s on a fresh broker, as any broker
that has served a group has done), and in each run:
  produce  N records of S value bytes to a new one-partition topic on the
           source with strata bench broker's producer (acks=1, idempotence off,
           no compression, linger 10 ms, 1 MB batches, 1 request in flight),
           timed from the first Produce call to Flush returning, after W
           acknowledged warm-up records: the reference;
  mirror   the topic to the other broker with strata mirror's code path and
           default options (in this process: one stream, group
           strata-bench-mirror-<run>, acks=all on the target, offsets
           committed after the target's acknowledgement, every buffered
           record per poll, the producer not lingering), timed from the
           mirror's start
           (consumer group join and target topic creation included) until
           the target's end offset equals the source's (W + N).
Before each timed phase this process collects its garbage, so that neither
phase pays for the other's heap.
The first --warmup-runs runs are untimed: memory the machine has not touched
lately is slow to fault in. The two brokers swap the source and target roles
from run to run. Reported:
the medians over --runs of both rates, and the ratio mirror / produce
(issue 20's floor: 0.5), with the brokers' and this process's CPU seconds.
MB = 10^6 bytes of record values.

Examples:
   strata bench mirror
   strata bench mirror --runs 5 --json
   strata bench mirror --cpuprofile mirror.pprof --broker-cpuprofile broker`,
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "records", Value: 1_000_000, Usage: "records to produce, then mirror"},
			&cli.Int64Flag{Name: "warmup-records", Value: 1, Usage: "records produced and acknowledged before the produce clock starts (at least 1; mirrored too)"},
			&cli.IntFlag{Name: "record-size", Value: 100, Usage: "value bytes per record"},
			&cli.IntFlag{Name: "num.streams", Value: 1, Usage: "strata mirror's --num.streams"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions; medians are reported"},
			&cli.IntFlag{Name: "warmup-runs", Value: 4, Usage: "untimed runs first (each broker is source and target twice)"},
			&cli.StringFlag{Name: "topic-prefix", Value: "strata-bench-mirror", Usage: "prefix of the topics created"},
			&cli.StringFlag{Name: "dir", Usage: "where the brokers' temporary directories go (default: $TMPDIR)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the brokers' directories (logs included)"},
			&cli.GenericFlag{Name: "override", Value: &multiString{}, Usage: "key=value for both brokers, repeatable"},
			&cli.StringFlag{Name: "broker-log-level", Value: "warn", Usage: "--log-level of the brokers started"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of this process (the mirror and the producer) to FILE"},
			&cli.StringFlag{Name: "broker-cpuprofile", Usage: "each broker writes a CPU profile to PREFIX.<broker>.<start>.pprof when it stops"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runBenchMirror,
	}
}

// BenchMirrorResult is the --json output of strata bench mirror.
type BenchMirrorResult struct {
	Records       int64   `json:"records"`
	WarmupRecords int64   `json:"warmup_records"`
	WarmupRuns    int     `json:"warmup_runs"`
	RecordSize    int     `json:"record_size"`
	Runs          int     `json:"runs"`
	Streams       int     `json:"num_streams"`
	MaxPoll       int     `json:"mirror_max_poll_records"` // 0: every buffered record
	LoadAvg1      float64 `json:"loadavg_1m"`
	LoadAvg1End   float64 `json:"loadavg_1m_end"`
	// The reference: strata bench broker's producer to the source broker.
	ProduceRecordsPerSec float64 `json:"produce_records_per_sec"`
	ProduceMBps          float64 `json:"produce_mb_per_sec"`
	ProduceCPUSeconds    float64 `json:"produce_cpu_seconds"`
	// The mirror: from its start until the target holds every record.
	MirrorRecordsPerSec float64 `json:"mirror_records_per_sec"`
	MirrorMBps          float64 `json:"mirror_mb_per_sec"`
	MirrorSeconds       float64 `json:"mirror_seconds"`
	MirrorFirstSeconds  float64 `json:"mirror_first_record_seconds"` // until the target held a first record
	MirrorCPUSeconds    float64 `json:"mirror_cpu_seconds"`
	MirrorVsProduce     float64 `json:"mirror_vs_produce"`
	// Per run, in run order.
	ProduceRuns []float64 `json:"produce_records_per_sec_runs"`
	MirrorRuns  []float64 `json:"mirror_records_per_sec_runs"`
	RatioRuns   []float64 `json:"mirror_vs_produce_runs"`
}

// benchMirrorRun is one run's measurements; CPU is both brokers' and this
// process's.
type benchMirrorRun struct {
	produce, produceCPU      time.Duration
	mirror, first, mirrorCPU time.Duration
}

func runBenchMirror(c *cli.Context) error {
	cfg := benchBrokerConfig{
		records: c.Int64("records"), warmup: c.Int64("warmup-records"), recordSize: c.Int("record-size"),
		runs: c.Int("runs"), topicPrefix: c.String("topic-prefix"),
	}
	streams := c.Int("num.streams")
	switch {
	case c.Int("warmup-runs") < 0:
		return usageErr("--warmup-runs must not be negative")
	case cfg.records < 1 || cfg.runs < 1 || cfg.warmup < 1:
		return usageErr("--records, --warmup-records and --runs must be positive")
	case cfg.recordSize < 1:
		return usageErr("--record-size must be positive")
	case streams < 1:
		return usageErr("--num.streams must be positive")
	}
	// The mirror runs in this process as strata mirror runs (its GOGC);
	// the produce reference's driver runs with it too.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(mirrorGCPercent))
	}
	stopProfile, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return failErr(err)
	}
	defer stopProfile()
	dir, err := os.MkdirTemp(c.String("dir"), "strata-bench-mirror-")
	if err != nil {
		return failErr(err)
	}
	keep := c.Bool("keep")
	if keep {
		fmt.Fprintf(c.App.ErrWriter, "strata bench mirror: the brokers' directories (logs included) are kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	// Groups join at once (Kafka's 3 s initial rebalance delay would be
	// most of a small run).
	ov := append([]string{"group.initial.rebalance.delay.ms=0"}, c.Generic("override").(*multiString).vals...)
	bopts := benchBrokerOpts{profile: c.String("broker-cpuprofile"), logLevel: c.String("broker-log-level")}
	var brokers [2]*benchBroker
	for i := range brokers {
		b, err := newBenchBroker(filepath.Join(dir, fmt.Sprintf("broker-%d", i+1)), int32(i+1), ov, bopts)
		if err == nil {
			err = b.start()
		}
		if err != nil {
			return failErr(fmt.Errorf("starting a broker: %w", err))
		}
		defer func() {
			if err := b.term(60 * time.Second); err != nil {
				fmt.Fprintln(c.App.ErrWriter, "strata bench mirror:", err)
			}
		}()
		brokers[i] = b
		if err := warmGroupCoordinator(b.addr); err != nil {
			return failErr(fmt.Errorf("broker %d: %w", i+1, err))
		}
	}
	res := &BenchMirrorResult{Records: cfg.records, WarmupRecords: cfg.warmup, WarmupRuns: c.Int("warmup-runs"), RecordSize: cfg.recordSize, Runs: cfg.runs,
		Streams: streams, MaxPoll: defaultMirrorOptions().maxPoll, LoadAvg1: loadAvg1()}
	cpu := func() time.Duration { return brokers[0].cpu() + brokers[1].cpu() + processCPU() }
	warmRuns := c.Int("warmup-runs")
	bar := newProgress(c.App.ErrWriter, int64(warmRuns+cfg.runs)*2*cfg.records*int64(cfg.recordSize), "bench mirror")
	var runs []benchMirrorRun
	// Runs -warmRuns..-1 are untimed: they fault in the memory of the
	// brokers and of this process. A first run here took up to twice as
	// long, and the mirror kept speeding up until its fifth run; with 4
	// warm-up runs the timed runs' ratios stay within 0.55-0.67, with 2
	// they ranged 0.45-0.73 (strata bench mirror --runs 5, 3 x each).
	for run := -warmRuns; run < cfg.runs; run++ {
		src, dst := brokers[(run+warmRuns)%2], brokers[(run+warmRuns+1)%2]
		topic := fmt.Sprintf("%s-%d-%d", cfg.topicPrefix, time.Now().UnixNano(), run)
		var r benchMirrorRun
		runtime.GC()
		cpu0 := cpu()
		if r.produce, err = benchProduce(cfg, brokerTarget(src.addr), topic, bar); err != nil {
			return failErr(fmt.Errorf("%s: produce: %w", benchRunName(run, warmRuns), err))
		}
		r.produceCPU = cpu() - cpu0
		runtime.GC()
		cpu0 = cpu()
		if r.mirror, r.first, err = benchMirrorOnce(src.addr, dst.addr, topic, streams, cfg.warmup+cfg.records); err != nil {
			return failErr(fmt.Errorf("%s: mirror: %w", benchRunName(run, warmRuns), err))
		}
		r.mirrorCPU = cpu() - cpu0
		bar.add(cfg.records * int64(cfg.recordSize))
		if run >= 0 {
			runs = append(runs, r)
		}
	}
	bar.done()
	res.LoadAvg1End = loadAvg1()
	res.benchMirrorFigures(runs)
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	printBenchMirror(c.App.Writer, res)
	return nil
}

// benchRunName names run in errors (negative: one of the warm warm-up runs).
func benchRunName(run, warm int) string {
	if run < 0 {
		return fmt.Sprintf("warm-up run %d", warm+run+1)
	}
	return fmt.Sprintf("run %d", run+1)
}

// warmGroupCoordinator has the broker at addr create its offsets topic, as
// a broker that has served a consumer group has: the first FindCoordinator
// of a fresh broker creates offsets.topic.num.partitions partitions (about
// 0.15 s here), a one-time cost of the broker, not of the mirror.
func warmGroupCoordinator(addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kadm.NewClient(cl).FindGroupCoordinators(ctx, "strata-bench-mirror-warmup").Error(); err != nil {
		return fmt.Errorf("creating the offsets topic (FindCoordinator): %w", err)
	}
	return nil
}

// benchMirrorOnce mirrors topic from src to dst with strata mirror's default
// options and returns the time from the start until dst's end offset of
// the topic is want, and until it held a first record.
func benchMirrorOnce(src, dst, topic string, streams int, want int64) (took, first time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := defaultMirrorOptions()
	opts.source, opts.target, opts.streams, opts.progress = []string{src}, []string{dst}, streams, 0
	opts.group = topic + "-mirror"
	opts.include = regexp.MustCompile("^" + regexp.QuoteMeta(topic) + "$")
	// The watcher asks for the topic before the mirror creates it: with
	// franz-go's default 5 s between metadata refreshes it would see the
	// new topic's records up to 5 s late.
	watch, err := kgo.NewClient(kgo.SeedBrokers(dst), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return 0, 0, err
	}
	defer watch.Close()
	adm := kadm.NewClient(watch)
	t0 := time.Now()
	m, err := newMirror(opts, io.Discard)
	if err != nil {
		return 0, 0, err
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.run(mctx) }()
	var end int64
	err = waitUntil(ctx, fmt.Sprintf("the target's end offset of %s to reach %d", topic, want), func() bool {
		select {
		case err := <-done:
			// The mirror stopped on its own: report it below.
			done <- fmt.Errorf("the mirror stopped before the target held every record: %v", err)
			return true
		default:
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
			end = o.Offset
		}
		if end > 0 && first == 0 {
			first = time.Since(t0)
		}
		return end >= want
	})
	took = time.Since(t0)
	stop()
	rerr := <-done
	if err != nil {
		return 0, 0, err
	}
	if end < want {
		return 0, 0, rerr
	}
	if rerr != nil {
		return 0, 0, fmt.Errorf("the mirror stopped with: %w", rerr)
	}
	if end != want {
		return 0, 0, fmt.Errorf("the target's end offset of %s is %d, the source's %d", topic, end, want)
	}
	return took, first, nil
}

// benchMirrorFigures fills the medians of runs.
func (res *BenchMirrorResult) benchMirrorFigures(runs []benchMirrorRun) {
	n := float64(res.Records)
	var pcpu, mcpu, msecs, first []float64
	for _, r := range runs {
		p, m := n/r.produce.Seconds(), n/r.mirror.Seconds()
		res.ProduceRuns, res.MirrorRuns = append(res.ProduceRuns, p), append(res.MirrorRuns, m)
		res.RatioRuns = append(res.RatioRuns, ratio(m, p))
		pcpu, mcpu = append(pcpu, r.produceCPU.Seconds()), append(mcpu, r.mirrorCPU.Seconds())
		msecs, first = append(msecs, r.mirror.Seconds()), append(first, r.first.Seconds())
	}
	mb := float64(res.RecordSize) / 1e6
	res.ProduceRecordsPerSec, res.MirrorRecordsPerSec = median(slices.Clone(res.ProduceRuns)), median(slices.Clone(res.MirrorRuns))
	res.ProduceMBps, res.MirrorMBps = res.ProduceRecordsPerSec*mb, res.MirrorRecordsPerSec*mb
	res.ProduceCPUSeconds, res.MirrorCPUSeconds = median(pcpu), median(mcpu)
	res.MirrorSeconds, res.MirrorFirstSeconds = median(msecs), median(first)
	res.MirrorVsProduce = median(slices.Clone(res.RatioRuns))
}

func printBenchMirror(w io.Writer, res *BenchMirrorResult) {
	fmt.Fprintf(w, "strata bench mirror: %d records of %d B, one partition, two single-node brokers (child processes) on 127.0.0.1, median of %d runs (load average %.2f at the start, %.2f at the end)\n",
		res.Records, res.RecordSize, res.Runs, res.LoadAvg1, res.LoadAvg1End)
	fmt.Fprintf(w, "  produce (strata bench broker's producer, acks=1)   %10.0f records/s %8.1f MB/s   CPU %.2f s\n",
		res.ProduceRecordsPerSec, res.ProduceMBps, res.ProduceCPUSeconds)
	fmt.Fprintf(w, "  mirror  (strata mirror, %d stream(s), acks=all)      %10.0f records/s %8.1f MB/s   CPU %.2f s   (%.3f s, first record on the target after %.3f s)\n",
		res.Streams, res.MirrorRecordsPerSec, res.MirrorMBps, res.MirrorCPUSeconds, res.MirrorSeconds, res.MirrorFirstSeconds)
	fmt.Fprintf(w, "  mirror / produce %.3f (median of the runs' ratios; floor 0.5); runs %s\n", res.MirrorVsProduce, fmtRatios(res.RatioRuns))
}
