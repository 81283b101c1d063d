package tools

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/segment"
)

func benchRecoverCommand() *cli.Command {
	return &cli.Command{
		Name:      "recover",
		Usage:     "time a full read-only recovery scan of a partition directory",
		UsageText: "strata bench recover --dir DIR [--runs R] [--json]",
		Description: `Times what startup recovery does to a partition directory after an unclean
shutdown with no recovery point (every segment scanned: framing, magic, size,
CRC-32C, offset order; indexes checked), read-only (segment.Inspect: nothing is
written, truncated or rebuilt). Beside it, in the same run: limit_read_crc_mb_per_sec,
a plain sequential read of the same .log files with CRC-32C over every byte. The
two alternate which goes first. MB = 10^6 bytes; figures are medians over --runs.

Example:
   strata bench log --dir /tmp/r1 --records 2000000 --keep --runs 1
   strata bench recover --dir /tmp/r1`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "partition directory (e.g. left by strata bench log --keep)", Required: true},
			&cli.IntFlag{Name: "runs", Value: 5, Usage: "repetitions; medians are reported"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runBenchRecover,
	}
}

// BenchRecoverResult is the --json output of strata bench recover.
type BenchRecoverResult struct {
	Dir              string  `json:"dir"`
	Runs             int     `json:"runs"`
	Segments         int     `json:"segments"`
	BytesScanned     int64   `json:"bytes_scanned"`
	BatchesScanned   int     `json:"batches_scanned"`
	BytesTruncated   int64   `json:"bytes_truncated"`
	RecoverSeconds   float64 `json:"recover_seconds"`
	RecoverMBps      float64 `json:"recover_mb_per_sec"`
	RecoverBatchesPS float64 `json:"recover_batches_per_sec"`
	LimitReadCRCMBps float64 `json:"limit_read_crc_mb_per_sec"`
	RecoverVsLimit   float64 `json:"recover_vs_limit"`
}

func runBenchRecover(c *cli.Context) error {
	dir, runs := c.String("dir"), c.Int("runs")
	if runs < 1 {
		return usageErr("--runs must be positive")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageErr("--dir %s is not a directory", dir)
	}
	opts := &segment.Options{Logger: slog.New(slog.DiscardHandler)}
	var res BenchRecoverResult
	var recS, recMB, limMB []float64
	for run := 0; run < runs; run++ {
		for k := 0; k < 2; k++ {
			if (run+k)%2 == 0 {
				secs, n, err := limitReadCRC(dir)
				if err != nil {
					return failErr(err)
				}
				limMB = append(limMB, mbps(n, secs))
				continue
			}
			t0 := time.Now()
			rep, err := segment.Inspect(dir, opts)
			secs := time.Since(t0).Seconds()
			if err != nil {
				return failErr(err)
			}
			res.Segments, res.BytesScanned, res.BatchesScanned, res.BytesTruncated = rep.Segments, rep.BytesScanned, rep.BatchesScanned, rep.BytesTruncated
			recS = append(recS, secs)
			recMB = append(recMB, mbps(rep.BytesScanned, secs))
		}
	}
	res.Dir, res.Runs = dir, runs
	res.RecoverSeconds, res.RecoverMBps, res.LimitReadCRCMBps = median(recS), median(recMB), median(limMB)
	if res.RecoverSeconds > 0 {
		res.RecoverBatchesPS = float64(res.BatchesScanned) / res.RecoverSeconds
	}
	if res.LimitReadCRCMBps > 0 {
		res.RecoverVsLimit = res.RecoverMBps / res.LimitReadCRCMBps
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "strata bench recover: %s, %d segments, %.1f MB in %d batches scanned, %d bytes would be cut, median of %d runs\n",
		res.Dir, res.Segments, float64(res.BytesScanned)/1e6, res.BatchesScanned, res.BytesTruncated, res.Runs)
	fmt.Fprintf(w, "  recover  %9.1f MB/s %12.0f batches/s   limit (read+CRC) %9.1f MB/s   ratio %.2f\n",
		res.RecoverMBps, res.RecoverBatchesPS, res.LimitReadCRCMBps, res.RecoverVsLimit)
	return nil
}
