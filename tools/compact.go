package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// topicsFile is where the broker keeps topic definitions and config overrides
// (server.TopicsFile), in the first log dir.
const topicsFile = "strata-topics.json"

func compactCommand() *cli.Command {
	return &cli.Command{
		Name:      "compact",
		Usage:     "compact partitions offline (log compaction: keep the last record of each key)",
		UsageText: "strata compact [--topic T]... [--delete-retention DURATION] [--from-start] [--dry-run] [--json] PATH",
		Description: `PATH is one partition directory (<topic>-<partition>, or any directory holding
.log files), which is compacted whatever its topic's config, or a data directory
(a log.dirs entry), whose partitions are compacted when their topic's
cleanup.policy contains "compact" in the broker's stored topic configs
(strata-topics.json, when present; Kafka keeps topic configs elsewhere) or when
--topic names the topic. The broker must be down: a directory locked by one is
refused (the data directory's .lock, or the parent's for a partition directory),
by a dry run too, since the cleaner opens the logs for writing.

One cleaning pass runs over each partition, the active (last) segment included:
for every key only the latest record is kept, tombstones older than
--delete-retention are removed, each batch's CRC is checked (a corrupt batch
fails that partition: run strata recover first). The dirty section starts at the
partition's entry in the cleaner-offset-checkpoint of the parent directory
(--from-start ignores it), which is updated afterwards.

--delete-retention is a Go duration (24h, 90m, 0s); without it a topic's
delete.retention.ms from strata-topics.json applies, else Kafka's default 24h.
As in Kafka (KIP-534), a pass stamps each batch holding tombstones with a delete
horizon (now + the retention) and a later pass at or past it removes them: with
0s the next pass does (run it with --from-start when nothing new was written).
The topic's min.compaction.lag.ms and segment.bytes apply too when set there.
--dry-run decides everything and reports what would be removed, changing nothing.

Exit status: 0 every selected partition compacted (or, dry, inspected), 1 a
partition could not be compacted, 2 usage or I/O error, or a locked directory.

Examples:
   strata compact /var/lib/strata/data/users-0 --delete-retention 1h
   strata compact /var/lib/strata/data --dry-run
   strata compact /var/lib/kafka/data --topic users --topic sessions --json`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "topic", Usage: "also compact this topic's partitions of a data directory (repeatable)"},
			&cli.DurationFlag{Name: "delete-retention", Value: 24 * time.Hour, Usage: "delete.retention.ms as a duration: how long tombstones are kept"},
			&cli.BoolFlag{Name: "from-start", Usage: "clean the whole log, ignoring the cleaner-offset-checkpoint"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; change nothing"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per partition and a summary, one per line"},
		},
		Action: runCompact,
	}
}

// compactResult is one partition's --json line.
type compactResult struct {
	Type              string  `json:"type"`
	Dir               string  `json:"dir"`
	Topic             string  `json:"topic,omitempty"`
	DryRun            bool    `json:"dry_run"`
	Error             string  `json:"error,omitempty"`
	DeleteRetentionMs int64   `json:"delete_retention_ms"`
	SegmentsBefore    int     `json:"segments_before"`
	SegmentsAfter     int     `json:"segments_after"`
	BytesBefore       int64   `json:"bytes_before"`
	BytesAfter        int64   `json:"bytes_after"`
	FirstDirtyOffset  int64   `json:"first_dirty_offset"`
	EndOffset         int64   `json:"end_offset"`
	Partial           bool    `json:"partial"`
	Keys              int     `json:"keys"`
	RecordsIn         int64   `json:"records_in"`
	RecordsOut        int64   `json:"records_out"`
	TombstonesRemoved int64   `json:"tombstones_removed"`
	UnkeyedRemoved    int64   `json:"unkeyed_removed"`
	BatchesCopied     int     `json:"batches_copied"`
	BatchesRebuilt    int     `json:"batches_rebuilt"`
	BatchesDropped    int     `json:"batches_dropped"`
	Checkpoint        string  `json:"checkpoint,omitempty"`
	Seconds           float64 `json:"seconds"`
}

func runCompact(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("compact: give exactly one PATH (strata compact [flags] PATH)")
	}
	path := filepath.Clean(c.Args().First())
	dry, asJSON := c.Bool("dry-run"), c.Bool("json")
	if c.Duration("delete-retention") < 0 {
		return usageErr("compact: --delete-retention must not be negative")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return failErr(fmt.Errorf("compact: %w", err))
	}
	if !fi.IsDir() {
		return usageErr("compact: %s is not a directory (give a partition directory or a data directory)", path)
	}
	partMode, err := isPartitionDir(path)
	if err != nil {
		return failErr(fmt.Errorf("compact: %w", err))
	}
	topics := c.StringSlice("topic")
	if partMode && len(topics) > 0 {
		return usageErr("compact: --topic selects partitions of a data directory; %s is a partition directory", path)
	}
	dataDir := path
	if partMode {
		dataDir = filepath.Dir(path)
	}
	configs, err := readTopicConfigs(dataDir)
	if err != nil {
		return failErr(fmt.Errorf("compact: %w", err))
	}
	var parts []string
	if partMode {
		parts = []string{path}
	} else if parts, err = compactedPartitions(path, configs, topics); err != nil {
		return err
	}
	// The cleaner opens logs for writing even in a dry run, so a dry run too
	// keeps out of a broker's directory, taking an existing .lock (it creates
	// no file).
	unlock, err := lockOffline("compact", path, partMode, !dry)
	if err != nil {
		return err
	}
	defer unlock()
	var prog *progress
	if isTerminal(c.App.ErrWriter) && len(parts) > 1 {
		prog = newProgress(c.App.ErrWriter, int64(len(parts)), "compact (partitions)")
	}
	o := newOut(c.App.Writer)
	failed := 0
	var before, after int64
	for _, dir := range parts {
		tp, _ := recovery.ParsePartitionDir(filepath.Base(dir))
		retention := c.Duration("delete-retention").Milliseconds()
		if !c.IsSet("delete-retention") {
			if v, ok := configs[tp.Topic]["delete.retention.ms"]; ok {
				if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
					retention = ms
				}
			}
		}
		copts := &cleaner.CompactOptions{DryRun: dry, DeleteRetentionMs: retention,
			FromStart: c.Bool("from-start"), Logger: quietLogger()}
		topicConfigInts(configs[tp.Topic], map[string]*int64{
			"min.compaction.lag.ms": &copts.MinCompactionLagMs, "segment.bytes": &copts.SegmentBytes})
		rep, cerr := compactOne(dir, copts)
		prog.add(1)
		res := compactResult{Type: "partition", Dir: dir, Topic: tp.Topic, DryRun: dry, DeleteRetentionMs: retention,
			SegmentsBefore: rep.SegmentsBefore, SegmentsAfter: rep.SegmentsAfter, BytesBefore: rep.BytesBefore,
			BytesAfter: rep.BytesAfter, FirstDirtyOffset: rep.FirstDirtyOffset, EndOffset: rep.EndOffset,
			Partial: rep.Partial, Keys: rep.MapKeys, RecordsIn: rep.RecordsIn, RecordsOut: rep.RecordsOut,
			TombstonesRemoved: rep.TombstonesRemoved, UnkeyedRemoved: rep.UnkeyedRemoved,
			BatchesCopied: rep.BatchesCopied, BatchesRebuilt: rep.BatchesRebuilt, BatchesDropped: rep.BatchesDropped,
			Checkpoint: rep.Checkpoint, Seconds: rep.Duration.Seconds()}
		if cerr != nil {
			failed++
			res.Error = cerr.Error()
			fmt.Fprintf(c.App.ErrWriter, "strata: compact: %s: %v\n", dir, cerr)
		} else {
			before += rep.BytesBefore
			after += rep.BytesAfter
		}
		if asJSON {
			b, err := json.Marshal(res)
			if err != nil {
				return failErr(err)
			}
			o.str(string(b)).line()
		} else {
			printCompact(o, &res)
		}
	}
	prog.done()
	if asJSON {
		o.str(`{"type":"summary","partitions":`).int(int64(len(parts))).str(`,"failed":`).int(int64(failed)).
			str(`,"bytes_before":`).int(before).str(`,"bytes_after":`).int(after).str(`,"dry_run":`).bool(dry).str("}").line()
	} else {
		verb := "compacted"
		if dry {
			verb = "would compact"
		}
		o.str(verb).str(" ").str(plural(int64(len(parts)-failed), "partition")).str(": ").int(before).str(" bytes -> ").int(after).str(" bytes")
		if failed > 0 {
			o.str("; ").str(plural(int64(failed), "partition")).str(" failed")
		}
		if len(parts) == 0 {
			o.str(" (no partition of a compacted topic; name topics with --topic)")
		}
		o.line()
	}
	if err := o.flush(); err != nil {
		return failErr(fmt.Errorf("compact: write output: %w", err))
	}
	if failed > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("compact: %s could not be compacted", plural(int64(failed), "partition"))}
	}
	return nil
}

// compactOne compacts one partition directory. Opening a log for cleaning
// repairs what it finds (cuts torn tails, rebuilds indexes) even for a dry
// run, so a partition the read-only inspection finds in need of repair is
// refused: strata recover, with --backup, is the tool that cuts data. A dry
// run restores the modification times that opening the active segment's
// indexes moves (their bytes stay the same).
func compactOne(dir string, opts *cleaner.CompactOptions) (cleaner.Report, error) {
	lr, err := recovery.InspectPartition(dir, &segment.Options{CleanShutdown: true, Logger: quietLogger()})
	if err != nil {
		return cleaner.Report{Dir: dir, DryRun: opts.DryRun}, err
	}
	if lr.BytesTruncated > 0 || lr.SegmentsRemoved > 0 || lr.IndexesRebuilt > 0 || len(lr.TempFilesRemoved) > 0 || len(lr.SwapsCompleted) > 0 {
		return cleaner.Report{Dir: dir, DryRun: opts.DryRun}, fmt.Errorf("needs recovery first (%d bytes to cut, %d segments to remove, %d indexes to rebuild, %d leftover files): run strata recover %s",
			lr.BytesTruncated, lr.SegmentsRemoved, lr.IndexesRebuilt, len(lr.TempFilesRemoved)+len(lr.SwapsCompleted), dir)
	}
	if !opts.DryRun {
		return cleaner.CompactDir(dir, opts)
	}
	times := map[string]os.FileInfo{}
	if des, err := os.ReadDir(dir); err == nil {
		for _, d := range des {
			if fi, err := d.Info(); err == nil {
				times[d.Name()] = fi
			}
		}
	}
	rep, cerr := cleaner.CompactDir(dir, opts)
	for name, fi := range times {
		p := filepath.Join(dir, name)
		if now, err := os.Stat(p); err == nil && !now.ModTime().Equal(fi.ModTime()) && now.Size() == fi.Size() {
			_ = os.Chtimes(p, time.Time{}, fi.ModTime())
		}
	}
	return rep, cerr
}

func printCompact(o *out, r *compactResult) {
	if r.Error != "" {
		o.str("FAILED ").str(r.Dir).str(": ").str(r.Error).line()
		return
	}
	if r.DryRun {
		o.str("would compact ")
	} else {
		o.str("compacted ")
	}
	o.str(r.Dir).str(": offsets [").int(r.FirstDirtyOffset).str(", ").int(r.EndOffset).str(") cleaned, ").
		int(int64(r.Keys)).str(" keys; records ").int(r.RecordsIn).str(" -> ").int(r.RecordsOut).
		str(", tombstones removed ").int(r.TombstonesRemoved).str(", segments ").int(int64(r.SegmentsBefore)).
		str(" -> ").int(int64(r.SegmentsAfter)).str(", bytes ").int(r.BytesBefore).str(" -> ").int(r.BytesAfter)
	if r.Partial {
		o.str(" (partial: the offset map filled up; run again)")
	}
	o.line()
}

// topicConfigInts sets each target from the topic config of its name when
// that is a non-negative integer.
func topicConfigInts(cfg map[string]string, targets map[string]*int64) {
	for name, p := range targets {
		if v, err := strconv.ParseInt(cfg[name], 10, 64); err == nil && v >= 0 {
			*p = v
		}
	}
}

// readTopicConfigs reads the config overrides of every topic in the broker's
// strata-topics.json in dir (none when the file is absent).
func readTopicConfigs(dir string) (map[string]map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, topicsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var d struct {
		Version int `json:"version"`
		Topics  []struct {
			Name    string            `json:"name"`
			Configs map[string]string `json:"configs"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, topicsFile), err)
	}
	m := map[string]map[string]string{}
	for _, t := range d.Topics {
		m[t.Name] = t.Configs
	}
	return m, nil
}

// isCompactPolicy: a cleanup.policy list containing compact.
func isCompactPolicy(v string) bool {
	for _, p := range strings.Split(v, ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

// compactedPartitions lists the partition directories of dataDir whose topic
// is compacted by its config or named in topics.
func compactedPartitions(dataDir string, configs map[string]map[string]string, topics []string) ([]string, error) {
	want := map[string]bool{}
	for t, cfg := range configs {
		if isCompactPolicy(cfg["cleanup.policy"]) {
			want[t] = true
		}
	}
	named := map[string]bool{}
	for _, t := range topics {
		want[t] = true
		named[t] = false
	}
	names, err := readDirNames(dataDir)
	if err != nil {
		return nil, failErr(fmt.Errorf("compact: %w", err))
	}
	var parts []string
	for _, n := range names {
		tp, ok := recovery.ParsePartitionDir(n)
		if !ok || !want[tp.Topic] {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dataDir, n)); err != nil || !fi.IsDir() {
			continue
		}
		if _, ok := named[tp.Topic]; ok {
			named[tp.Topic] = true
		}
		parts = append(parts, filepath.Join(dataDir, n))
	}
	var missing []string
	for t, found := range named {
		if !found {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, usageErr("compact: no partition directory of topic %s in %s", strings.Join(missing, ", "), dataDir)
	}
	return parts, nil
}
