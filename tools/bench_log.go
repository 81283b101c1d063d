package tools

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

func benchLogCommand() *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "append records to a new partition directory, then read them back",
		UsageText: "strata bench log --dir DIR [--records N] [--record-size BYTES] [--batch-records K] [--fsync none|batch|interval] [--flush-ms MS] [--codec none|gzip|snappy|lz4|zstd] [--segment-bytes BYTES] [--keys K] [--tombstones P] [--runs R] [--keep] [--json]",
		Description: `Encodes N records into batches of K (untimed, as a broker receives them), appends
them to a new log in DIR (timed), reopens it and reads everything back through the
read path checking every CRC. Beside it, in the same run and on the same filesystem:
limit_write_mb_per_sec, a plain sequential write of the same bytes with the same
fsync policy, and limit_read_crc_mb_per_sec, a plain sequential read of the log
files with CRC-32C over every byte. Each timed write is preceded by an untimed
write of as many bytes into a scratch file, removed at once: the append and the
plain write both meet memory already faulted in. MB = 10^6 bytes of on-disk
batch bytes.
Figures are medians over --runs.

--fsync none: no application fsync; batch: fdatasync after every append call (one
batch per call); interval: the log's flush.ms policy with --flush-ms.

Examples:
   strata bench log --dir /tmp/b1 --records 1000000 --record-size 100 --batch-records 1000
   strata bench log --dir /dev/shm/b1 --json
   strata bench log --dir /tmp/b2 --batch-records 160 --fsync batch --records 200000
   strata bench log --dir /tmp/b3 --keys 10000 --tombstones 5 --keep   # data for the cleaner`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "partition directory to create (must not exist or be empty)", Required: true},
			&cli.Int64Flag{Name: "records", Value: 1_000_000, Usage: "records to append"},
			&cli.IntFlag{Name: "record-size", Value: 100, Usage: "value bytes per record"},
			&cli.IntFlag{Name: "batch-records", Value: 1000, Usage: "records per batch (one append call each)"},
			&cli.StringFlag{Name: "fsync", Value: "none", Usage: "none, batch or interval"},
			&cli.Int64Flag{Name: "flush-ms", Value: 1000, Usage: "flush.ms for --fsync interval"},
			&cli.StringFlag{Name: "codec", Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
			&cli.Int64Flag{Name: "segment-bytes", Value: segment.DefaultSegmentBytes, Usage: "segment.bytes"},
			&cli.IntFlag{Name: "keys", Usage: "give records keys cycling over K distinct values (0: no keys)"},
			&cli.IntFlag{Name: "tombstones", Usage: "percent of keyed records written as tombstones (null value)"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions; medians are reported"},
			&cli.BoolFlag{Name: "keep", Usage: "keep DIR (the last run's log) instead of removing it"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runBenchLog,
	}
}

type benchLogConfig struct {
	dir          string
	records      int64
	recordSize   int
	batchRecords int
	fsync        string
	flushMs      int64
	codec        record.Codec
	segmentBytes int64
	keys         int
	tombstones   int
	runs         int
}

// BenchLogResult is the --json output of strata bench log.
type BenchLogResult struct {
	Dir                 string  `json:"dir"`
	Records             int64   `json:"records"`
	Bytes               int64   `json:"bytes"`
	Batches             int     `json:"batches"`
	RecordSize          int     `json:"record_size"`
	BatchRecords        int     `json:"batch_records"`
	Fsync               string  `json:"fsync"`
	Codec               string  `json:"codec"`
	Runs                int     `json:"runs"`
	AppendSeconds       float64 `json:"append_seconds"`
	AppendMBps          float64 `json:"append_mb_per_sec"`
	AppendRecordsPerSec float64 `json:"append_records_per_sec"`
	AppendBatchesPerSec float64 `json:"append_batches_per_sec"`
	ReadSeconds         float64 `json:"read_seconds"`
	ReadMBps            float64 `json:"read_mb_per_sec"`
	ReadRecordsPerSec   float64 `json:"read_records_per_sec"`
	LimitWriteMBps      float64 `json:"limit_write_mb_per_sec"`
	LimitWritesPerSec   float64 `json:"limit_writes_per_sec"`
	LimitReadCRCMBps    float64 `json:"limit_read_crc_mb_per_sec"`
	AppendVsLimit       float64 `json:"append_vs_limit"`
	ReadVsLimit         float64 `json:"read_vs_limit"`
}

func runBenchLog(c *cli.Context) error {
	cfg := benchLogConfig{
		dir: c.String("dir"), records: c.Int64("records"), recordSize: c.Int("record-size"),
		batchRecords: c.Int("batch-records"), fsync: c.String("fsync"), flushMs: c.Int64("flush-ms"),
		segmentBytes: c.Int64("segment-bytes"), keys: c.Int("keys"), tombstones: c.Int("tombstones"), runs: c.Int("runs"),
	}
	var err error
	if cfg.codec, err = record.ParseCodec(c.String("codec")); err != nil {
		return usageErr("--codec: %v", err)
	}
	switch {
	case cfg.fsync != "none" && cfg.fsync != "batch" && cfg.fsync != "interval":
		return usageErr("--fsync must be none, batch or interval, not %q", cfg.fsync)
	case cfg.records < 1 || cfg.recordSize < 0 || cfg.batchRecords < 1 || cfg.runs < 1 || cfg.flushMs < 1:
		return usageErr("--records, --batch-records, --runs and --flush-ms must be positive and --record-size not negative")
	case cfg.keys < 0 || cfg.tombstones < 0 || cfg.tombstones > 100:
		return usageErr("--keys must not be negative and --tombstones must be a percentage")
	case cfg.tombstones > 0 && cfg.keys == 0:
		return usageErr("--tombstones needs --keys (a tombstone without a key means nothing)")
	}
	// DIR is created, cleared and removed: never inside a running broker's
	// data directory (its parent's .lock held).
	unlock, err := lockOffline("bench log", filepath.Clean(cfg.dir), true, false)
	if err != nil {
		return err
	}
	defer unlock()
	if err := prepareBenchDir(cfg.dir); err != nil {
		return err
	}
	keep := c.Bool("keep")
	defer func() {
		if !keep {
			os.RemoveAll(cfg.dir)
		}
	}()

	data, ends, err := encodeBenchBatches(cfg)
	if err != nil {
		return failErr(err)
	}
	bar := newProgress(c.App.ErrWriter, int64(len(data))*int64(cfg.runs), "bench log")
	var appendS, appendMB, readS, readMB, limW, limWr, limR []float64
	for run := 0; run < cfg.runs; run++ {
		// Alternate which goes first, so neither always meets a colder cache.
		var lw, as float64
		for k := 0; k < 2; k++ {
			if (run+k)%2 == 0 {
				if lw, err = limitWrite(cfg, data, ends); err != nil {
					return failErr(err)
				}
				continue
			}
			if err := clearDir(cfg.dir); err != nil {
				return failErr(err)
			}
			if as, err = appendRun(cfg, data, ends, bar); err != nil {
				return failErr(err)
			}
		}
		limW = append(limW, mbps(int64(len(data)), lw))
		limWr = append(limWr, float64(len(ends))/lw)
		appendS = append(appendS, as)
		appendMB = append(appendMB, mbps(int64(len(data)), as))
		lr, n, err := limitReadCRC(cfg.dir)
		if err != nil {
			return failErr(err)
		}
		limR = append(limR, mbps(n, lr))
		rs, recs, err := readBack(cfg)
		if err != nil {
			return failErr(err)
		}
		if recs != cfg.records {
			return &exitError{code: ExitProblems, err: fmt.Errorf("read back %d records, appended %d", recs, cfg.records)}
		}
		readS = append(readS, rs)
		readMB = append(readMB, mbps(n, rs))
	}
	bar.done()
	res := BenchLogResult{
		Dir: cfg.dir, Records: cfg.records, Bytes: int64(len(data)), Batches: len(ends),
		RecordSize: cfg.recordSize, BatchRecords: cfg.batchRecords, Fsync: cfg.fsync, Codec: cfg.codec.String(), Runs: cfg.runs,
		AppendSeconds: median(appendS), AppendMBps: median(appendMB), ReadSeconds: median(readS), ReadMBps: median(readMB),
		LimitWriteMBps: median(limW), LimitWritesPerSec: median(limWr), LimitReadCRCMBps: median(limR),
	}
	res.AppendRecordsPerSec = float64(cfg.records) / res.AppendSeconds
	res.AppendBatchesPerSec = float64(len(ends)) / res.AppendSeconds
	res.ReadRecordsPerSec = float64(cfg.records) / res.ReadSeconds
	res.AppendVsLimit = res.AppendMBps / res.LimitWriteMBps
	res.ReadVsLimit = res.ReadMBps / res.LimitReadCRCMBps
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "strata bench log: %d records of %d B in %d batches of %d (%s, fsync %s), %.1f MB on disk, %s, median of %d runs\n",
		res.Records, res.RecordSize, res.Batches, res.BatchRecords, res.Codec, res.Fsync, float64(res.Bytes)/1e6, res.Dir, res.Runs)
	fmt.Fprintf(w, "  append   %9.1f MB/s %12.0f records/s %10.0f appends/s   limit (plain write) %9.1f MB/s %10.0f writes/s   ratio %.2f\n",
		res.AppendMBps, res.AppendRecordsPerSec, res.AppendBatchesPerSec, res.LimitWriteMBps, res.LimitWritesPerSec, res.AppendVsLimit)
	fmt.Fprintf(w, "  read     %9.1f MB/s %12.0f records/s                        limit (read+CRC)    %9.1f MB/s                     ratio %.2f\n",
		res.ReadMBps, res.ReadRecordsPerSec, res.LimitReadCRCMBps, res.ReadVsLimit)
	return nil
}

// prepareBenchDir insists that dir does not exist or is empty.
func prepareBenchDir(dir string) error {
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return failErr(err)
		}
		return nil
	}
	if err != nil {
		return failErr(err)
	}
	if len(names) > 0 {
		return usageErr("--dir %s is not empty; give a new or empty directory (it is removed afterwards unless --keep)", dir)
	}
	return nil
}

func clearDir(dir string) error {
	names, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := os.RemoveAll(filepath.Join(dir, n.Name())); err != nil {
			return err
		}
	}
	return nil
}

// encodeBenchBatches builds every batch into one buffer; ends[i] is where batch i
// ends. Values are random letters (compressible like text); keys cycle.
func encodeBenchBatches(cfg benchLogConfig) ([]byte, []int, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, cfg.recordSize)
	opts := record.DefaultBatchOptions()
	opts.Codec = cfg.codec
	b := record.NewBuilder(opts)
	est := cfg.records * int64(cfg.recordSize+30)
	data := make([]byte, 0, est+est/8)
	var ends []int
	ts := time.Now().UnixMilli()
	var key []byte
	for i := int64(0); i < cfg.records; {
		b.Reset(opts)
		for j := 0; j < cfg.batchRecords && i < cfg.records; j, i = j+1, i+1 {
			for k := range value {
				value[k] = 'a' + byte(rng.IntN(26))
			}
			r := record.Record{Timestamp: ts + i/1000, Value: value}
			if cfg.keys > 0 {
				key = fmt.Appendf(key[:0], "key-%09d", i%int64(cfg.keys))
				r.Key = key
				if rng.IntN(100) < cfg.tombstones {
					r.Value = nil
				}
			}
			if err := b.Add(&r); err != nil {
				return nil, nil, err
			}
		}
		batch, err := b.Build()
		if err != nil {
			return nil, nil, err
		}
		data = append(data, batch...)
		ends = append(ends, len(data))
	}
	return data, ends, nil
}

// limitWrite writes the same bytes to a new file in the same directory with the
// same call sizes and fsync policy, and returns the seconds taken. Like the
// append it is compared with, it is preceded by warmPages: both write into
// memory already faulted in.
func limitWrite(cfg benchLogConfig, data []byte, ends []int) (float64, error) {
	if err := warmPages(cfg.dir, int64(len(data))); err != nil {
		return 0, err
	}
	path := filepath.Join(cfg.dir, ".limit-write")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	t0 := time.Now()
	lastSync := t0
	start := 0
	for _, e := range ends {
		if _, err := f.Write(data[start:e]); err != nil {
			return 0, err
		}
		start = e
		switch cfg.fsync {
		case "batch":
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return 0, err
			}
		case "interval":
			if time.Since(lastSync) >= time.Duration(cfg.flushMs)*time.Millisecond {
				if err := unix.Fdatasync(int(f.Fd())); err != nil {
					return 0, err
				}
				lastSync = time.Now()
			}
		}
	}
	return time.Since(t0).Seconds(), nil
}

func appendRun(cfg benchLogConfig, data []byte, ends []int, bar *progress) (float64, error) {
	if err := warmPages(cfg.dir, int64(len(data))); err != nil { // as limitWrite's
		return 0, err
	}
	o := &segment.Options{SegmentBytes: cfg.segmentBytes}
	if cfg.fsync == "interval" {
		o.FlushMs = cfg.flushMs
	}
	l, err := segment.Open(cfg.dir, o)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	start := 0
	for i, e := range ends {
		if _, err := l.Append(data[start:e]); err != nil {
			l.Close()
			return 0, err
		}
		if cfg.fsync == "batch" {
			if err := l.Flush(); err != nil {
				l.Close()
				return 0, err
			}
		}
		if i%64 == 63 {
			bar.add(int64(e - start))
		}
		start = e
	}
	secs := time.Since(t0).Seconds()
	return secs, l.Close()
}

// limitReadCRC reads the log files sequentially with CRC-32C over every byte.
func limitReadCRC(dir string) (float64, int64, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n.Name(), segment.LogSuffix) {
			logs = append(logs, filepath.Join(dir, n.Name()))
		}
	}
	sort.Strings(logs)
	buf := make([]byte, 1<<20)
	tab := crc32.MakeTable(crc32.Castagnoli)
	var total int64
	var crc uint32
	t0 := time.Now()
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			return 0, 0, err
		}
		for {
			n, err := f.Read(buf)
			crc = crc32.Update(crc, tab, buf[:n])
			total += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return 0, 0, err
			}
		}
		f.Close()
	}
	_ = crc
	return time.Since(t0).Seconds(), total, nil
}

// readBack reopens the log (cleanly shut down) and reads every batch through
// Log.Read in 1 MiB regions, checking each batch's CRC; it returns the seconds
// and the records seen.
func readBack(cfg benchLogConfig) (float64, int64, error) {
	l, err := segment.Open(cfg.dir, &segment.Options{SegmentBytes: cfg.segmentBytes, CleanShutdown: true})
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	buf := make([]byte, 0, 2<<20)
	var recs int64
	t0 := time.Now()
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			return 0, 0, err
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			return 0, 0, err
		}
		next := off
		for p := 0; p < len(buf); {
			h, err := record.ParseEntryHeader(buf[p:], r.Pos+int64(p))
			if err != nil || h.TotalSize() > int64(len(buf)-p) {
				break // the region's partial last batch: read again next time
			}
			b := record.Batch(buf[p : p+int(h.TotalSize())])
			if err := b.Validate(r.Pos + int64(p)); err != nil {
				return 0, 0, err
			}
			recs += int64(b.NumRecords())
			next = h.LastOffset + 1
			p += int(h.TotalSize())
		}
		if next == off {
			return 0, 0, fmt.Errorf("read made no progress at offset %d", off)
		}
		off = next
	}
	return time.Since(t0).Seconds(), recs, nil
}
