package tools

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/segment"
)

func benchCleanCommand() *cli.Command {
	return &cli.Command{
		Name:      "clean",
		Usage:     "compact a partition directory in place, timed, beside a plain copy of the same bytes",
		UsageText: "strata bench clean --dir DIR [--dedupe-buffer-size BYTES] [--segment-bytes BYTES] [--json]",
		Description: `Runs one full offline compaction pass (the cleaner-offset-checkpoint is ignored:
every segment, the last one included, is dirty) in place on DIR, a partition
directory such as one left by 'strata bench log --keys K --keep'. DIR is changed:
superseded records are gone afterwards. DIR must not belong to a running broker:
when its parent (a data directory) has a .lock held by one, the run is refused
(exit 2), as strata compact refuses it.

Beside it, in the same run and on the same filesystem, before the pass:
limit_copy_mb_per_sec, a plain copy of the same .log bytes into one new file with
one fsync at the end (the cleaner fsyncs what it writes too); the copy without the
fsync is reported as limit_copy_nosync_mb_per_sec. MB/s counts input bytes (the
.log bytes before the pass), MB = 10^6 bytes.

clean_seconds and clean_mb_per_sec time the pass: opening the directory, building
the offset map, recopying, the durable crash-safe swaps and the checkpoint. The
replaced segments' files, renamed .deleted by the swap, are removed after the pass
(a broker defers that by file.delete.delay.ms); total_seconds and
clean_total_mb_per_sec include that removal and closing the log.

map_bytes_per_entry is the offset map's bytes per slot as allocated; map_keys the
distinct keys of the pass.

Examples:
   strata bench log --dir /tmp/c1 --records 200000 --record-size 1024 --keys 20000 --keep --runs 1 --segment-bytes 67108864
   strata bench clean --dir /tmp/c1 --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "partition directory to compact in place", Required: true},
			&cli.Int64Flag{Name: "dedupe-buffer-size", Value: cleaner.DefaultDedupeBufferBytes, Usage: "log.cleaner.dedupe.buffer.size"},
			&cli.Int64Flag{Name: "segment-bytes", Value: segment.DefaultSegmentBytes, Usage: "segment.bytes: cleaned groups up to this size"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runBenchClean,
	}
}

// BenchCleanResult is the --json output of strata bench clean.
type BenchCleanResult struct {
	Dir                  string  `json:"dir"`
	BytesBefore          int64   `json:"bytes_before"`
	BytesAfter           int64   `json:"bytes_after"`
	SegmentsBefore       int     `json:"segments_before"`
	SegmentsAfter        int     `json:"segments_after"`
	RecordsBefore        int64   `json:"records_before"`
	RecordsAfter         int64   `json:"records_after"`
	TombstonesRemoved    int64   `json:"tombstones_removed"`
	BatchesCopied        int     `json:"batches_copied"`
	BatchesRebuilt       int     `json:"batches_rebuilt"`
	BatchesDropped       int     `json:"batches_dropped"`
	CleanSeconds         float64 `json:"clean_seconds"`
	CleanMBps            float64 `json:"clean_mb_per_sec"`
	TotalSeconds         float64 `json:"total_seconds"`
	CleanTotalMBps       float64 `json:"clean_total_mb_per_sec"`
	LimitCopySeconds     float64 `json:"limit_copy_seconds"`
	LimitCopyMBps        float64 `json:"limit_copy_mb_per_sec"`
	LimitCopyNoSyncMBps  float64 `json:"limit_copy_nosync_mb_per_sec"`
	CleanVsLimit         float64 `json:"clean_vs_limit"`
	MapBytesPerEntry     int     `json:"map_bytes_per_entry"`
	MapKeys              int     `json:"map_keys"`
	MapSlots             int     `json:"map_slots"`
	MapBytes             int64   `json:"map_bytes"`
	PartialPass          bool    `json:"partial_pass"`
	CheckpointFileUpdate string  `json:"checkpoint,omitempty"`
}

func runBenchClean(c *cli.Context) error {
	dir := filepath.Clean(c.String("dir"))
	// The pass rewrites DIR in place: keep out of a running broker's data
	// directory as compact and recover do (its parent's .lock; no lock file
	// is created where there is none).
	unlock, err := lockOffline("bench clean", dir, true, false)
	if err != nil {
		return err
	}
	defer unlock()
	logs, total, err := segmentLogFiles(dir)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		return fmt.Errorf("bench clean: no segment .log files in %s", dir)
	}
	copySecs, noSyncSecs, err := limitCopy(dir, logs, total)
	if err != nil {
		return err
	}
	// The cleaner writes up to total bytes into new files: into memory as
	// warm as the copy's (warmPages).
	if err := warmPages(dir, total); err != nil {
		return fmt.Errorf("bench clean: %w", err)
	}
	rep, err := cleaner.CompactDir(dir, &cleaner.CompactOptions{
		DedupeBufferBytes: c.Int64("dedupe-buffer-size"),
		SegmentBytes:      c.Int64("segment-bytes"),
		FromStart:         true,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return fmt.Errorf("bench clean: %w", err)
	}
	res := BenchCleanResult{
		Dir:                  dir,
		BytesBefore:          rep.BytesBefore,
		BytesAfter:           rep.BytesAfter,
		SegmentsBefore:       rep.SegmentsBefore,
		SegmentsAfter:        rep.SegmentsAfter,
		RecordsBefore:        rep.RecordsIn,
		RecordsAfter:         rep.RecordsOut,
		TombstonesRemoved:    rep.TombstonesRemoved,
		BatchesCopied:        rep.BatchesCopied,
		BatchesRebuilt:       rep.BatchesRebuilt,
		BatchesDropped:       rep.BatchesDropped,
		CleanSeconds:         rep.PassDuration.Seconds(),
		CleanMBps:            mbps(total, rep.PassDuration.Seconds()),
		TotalSeconds:         rep.Duration.Seconds(),
		CleanTotalMBps:       mbps(total, rep.Duration.Seconds()),
		LimitCopySeconds:     copySecs,
		LimitCopyMBps:        mbps(total, copySecs),
		LimitCopyNoSyncMBps:  mbps(total, noSyncSecs),
		MapBytesPerEntry:     rep.MapBytesPerEntry,
		MapKeys:              rep.MapKeys,
		MapSlots:             rep.MapSlots,
		MapBytes:             int64(rep.MapSlots) * int64(rep.MapBytesPerEntry),
		PartialPass:          rep.Partial,
		CheckpointFileUpdate: rep.Checkpoint,
	}
	if res.LimitCopyMBps > 0 {
		res.CleanVsLimit = res.CleanMBps / res.LimitCopyMBps
	}
	w := c.App.Writer
	if c.Bool("json") {
		return writeJSON(w, res)
	}
	fmt.Fprintf(w, "strata bench clean: %s, %.1f MB in %d segments -> %.1f MB in %d segments, %d -> %d records (%d keys)\n",
		dir, float64(res.BytesBefore)/1e6, res.SegmentsBefore, float64(res.BytesAfter)/1e6, res.SegmentsAfter,
		res.RecordsBefore, res.RecordsAfter, res.MapKeys)
	fmt.Fprintf(w, "  clean  %9.1f MB/s (%.3f s; %.3f s with removing the replaced files)   limit (copy+fsync) %9.1f MB/s (%.3f s), without fsync %.1f MB/s   ratio %.2f\n",
		res.CleanMBps, res.CleanSeconds, res.TotalSeconds, res.LimitCopyMBps, res.LimitCopySeconds, res.LimitCopyNoSyncMBps, res.CleanVsLimit)
	fmt.Fprintf(w, "  offset map: %d bytes per entry, %d slots (%.1f MB), %d keys; partial pass: %v\n",
		res.MapBytesPerEntry, res.MapSlots, float64(res.MapBytes)/1e6, res.MapKeys, res.PartialPass)
	return nil
}

// segmentLogFiles lists the segment .log files of dir and their total size.
func segmentLogFiles(dir string) ([]string, int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("bench clean: %w", err)
	}
	var out []string
	var total int64
	for _, e := range ents {
		if _, suf, ok := segment.ParseFileName(e.Name()); !ok || suf != segment.LogSuffix {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, 0, fmt.Errorf("bench clean: %w", err)
		}
		out = append(out, filepath.Join(dir, e.Name()))
		total += info.Size()
	}
	return out, total, nil
}

// limitCopy copies the files into one new file beside them, returning the time
// with the final fsync and the time before it; the copy is removed. Like
// the cleaner's pass it is preceded by warmPages.
func limitCopy(dir string, files []string, size int64) (withSync, noSync float64, err error) {
	if err := warmPages(dir, size); err != nil {
		return 0, 0, fmt.Errorf("bench clean: %w", err)
	}
	path := filepath.Join(dir, ".limit-copy")
	out, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("bench clean: %w", err)
	}
	defer os.Remove(path)
	defer out.Close()
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	for _, f := range files {
		in, err := os.Open(f)
		if err != nil {
			return 0, 0, fmt.Errorf("bench clean: %w", err)
		}
		// Plain read and write (no copy_file_range): the bytes pass through
		// memory, as the cleaner's do.
		_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, buf)
		in.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("bench clean: copy %s: %w", f, err)
		}
	}
	noSync = time.Since(t0).Seconds()
	if err := out.Sync(); err != nil {
		return 0, 0, fmt.Errorf("bench clean: %w", err)
	}
	withSync = time.Since(t0).Seconds()
	return withSync, noSync, nil
}
