package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

func recoverCommand() *cli.Command {
	return &cli.Command{
		Name:      "recover",
		Usage:     "repair a data directory or partition directory offline, as broker start-up does",
		UsageText: "strata recover [--dry-run] [--backup DIR] [--json] PATH",
		Description: `PATH is a data directory (a log.dirs entry) or one partition directory
(<topic>-<partition>, or any directory holding .log files). The broker must be down.

A data directory is recovered exactly as broker start-up recovers it: under its
.lock, honouring the recovery-point and log-start checkpoints and the clean-shutdown
marker. Segments below a partition's recovery point (all of them after a clean
shutdown) are trusted, their tails and indexes checked: a torn or garbage tail
there is cut from that segment alone and the later segments are kept (the log
then has a gap in its offsets). From the recovery point on, torn, garbage or
zeroed tails are cut at the first invalid entry and the segments after the cut
are removed, as Kafka does. Bad or missing indexes are rebuilt, leftover
.swap/.cleaned/.deleted files finished or removed, producer snapshots, aborted
transactions and leader epochs past the new log end trimmed. Then it is closed
as a clean shutdown does: the checkpoints are rewritten to match the repaired
logs and the clean-shutdown marker is written, so a second run finds nothing to
do. An unreadable recovery-point checkpoint makes every partition scanned in
full. To rescan one partition in full, give its directory.

(Broker start cuts the same way and keeps every byte it cuts in
<partition>/recovery-backup/<UTC time>/, laid out as --backup below.)

A partition directory is scanned from its first segment (every entry's framing
and CRC), as from a recovery point of 0: the segments after a cut are removed. If its parent has a .lock file, that lock is taken to keep a broker out.
Its entries in the parent's offset checkpoints (recovery point, log start,
replication, cleaner) above the new log end are lowered to it, leader epochs
starting at or past it are dropped and producer snapshots above it removed.
Aborted transactions in .txnindex files are not trimmed in this mode (recover
the data directory for that).

--dry-run prints exactly what would be truncated, removed, rebuilt or renamed and
changes nothing: no file is written, created (not even .lock) or touched.

--backup DIR saves every byte recovery cuts before cutting it:
   DIR/MANIFEST.json               one entry per saved file: original path,
                                   position, length, sha256, kind
   DIR/<partition-dir>/<file>@<P>  the bytes [P, old end) of <file>: a truncated
                                   tail (kind "tail"), or a whole removed segment
                                   file (@0; kind "segment", with its .index,
                                   .timeindex and .txnindex when present), or a
                                   removed producer snapshot (@0; "snapshot")
DIR must not lie inside PATH and must not hold an earlier MANIFEST.json. The tool
checks afterwards that each truncated file ends exactly at P and each removed
file is gone, so the backup holds exactly the bytes that were cut.

To restore (broker down), put the bytes back where they were:
   dd if=DIR/orders-0/00000000000000000000.log@4096 \
      of=/data/orders-0/00000000000000000000.log \
      bs=1M seek=4096 oflag=seek_bytes conv=notrunc
   cp DIR/orders-0/00000000000000000060.log@0 /data/orders-0/00000000000000000060.log
(and the same for a removed segment's index files), then delete the data
directory's .kafka_cleanshutdown marker so the next start rescans.

--preallocated is for logs written with preallocate=true (log.preallocate): a crash
leaves the active segment's file longer than its data, the rest zeros. With it, such
a zero-filled tail is cut and counted as preallocated bytes trimmed, not as a
truncation (and segments after it are kept); without it, it is cut as a zeroed tail.

Exit status: 0 the directory is consistent afterwards (the report says what was
cut; with --dry-run: the inspection ran), 1 it could not be made consistent, 2
usage or I/O error, the directory is locked by a running broker, or it holds no
partition directories and no segment files (nothing is written into it).

Examples:
   strata recover --dry-run /var/lib/kafka/data
   strata recover --backup /root/cut-bytes /var/lib/kafka/data
   strata recover /var/lib/kafka/data/orders-0 --json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be cut, rebuilt or removed; change nothing"},
			&cli.BoolFlag{Name: "preallocated", Usage: "the logs were written with preallocate=true (log.preallocate): cut a zero-filled segment tail as the unwritten reserve (bytes_preallocated_trimmed), not as a truncation"},
			&cli.StringFlag{Name: "backup", Usage: "save every byte that is cut into `DIR` first (see the layout above)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object per line"},
		},
		Action: runRecover,
	}
}

// recoverResult is the --json line of a recover run: the recovery report with
// what the tool added.
type recoverResult struct {
	Type string `json:"type"`
	Path string `json:"path"`
	// Mode is "data_dir" or "partition".
	Mode string `json:"mode"`
	*recovery.Report
	// Changed: something was (dry run: would be) cut, rebuilt or removed.
	Changed bool `json:"changed"`
	// Consistent: a read-only inspection after the run finds nothing to do
	// (always false for a dry run, which does not repair).
	Consistent bool                     `json:"consistent"`
	Backup     *recovery.BackupManifest `json:"backup,omitempty"`
}

// quietLogger drops the storage layers' log lines: the report says it all.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func runRecover(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("recover: give exactly one PATH (strata recover [--dry-run] [--backup DIR] PATH)")
	}
	path := filepath.Clean(c.Args().First())
	dry, backupDir, asJSON := c.Bool("dry-run"), c.String("backup"), c.Bool("json")
	if dry && backupDir != "" {
		return usageErr("recover: --backup with --dry-run: a dry run cuts nothing")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return failErr(fmt.Errorf("recover: %w", err))
	}
	if !fi.IsDir() {
		return usageErr("recover: %s is not a directory (give a data directory or a partition directory)", path)
	}
	if backupDir != "" {
		if inside(backupDir, path) {
			return usageErr("recover: --backup %s lies inside %s; give a directory elsewhere", backupDir, path)
		}
	}
	partMode, err := isPartitionDir(path)
	if err != nil {
		return failErr(fmt.Errorf("recover: %w", err))
	}
	if !partMode {
		// Recovering a directory without partitions would only write a
		// .lock, empty checkpoints and a clean-shutdown marker into it: most
		// likely a wrong path (a parent of the data directory, an empty one).
		has, err := hasPartitionDirs(path)
		if err != nil {
			return failErr(fmt.Errorf("recover: %w", err))
		}
		if !has {
			return usageErr("recover: %s holds no partition directories (<topic>-<partition>) and no segment files: not a data directory or a partition directory; nothing was changed", path)
		}
	}
	res := &recoverResult{Type: "recover", Path: path, Mode: "data_dir"}
	if partMode {
		res.Mode = "partition"
	}
	rr := &recoverRun{path: path, part: partMode, prealloc: c.Bool("preallocated")}
	var runErr error
	if dry {
		warnIfLocked(c.App.ErrWriter, path, partMode)
		res.Report, runErr = rr.inspect()
	} else {
		res.Report, res.Backup, res.Consistent, runErr = rr.recover(backupDir)
	}
	if res.Report != nil {
		res.Changed = res.Report.Changed()
		o := newOut(c.App.Writer)
		if asJSON {
			b, err := json.Marshal(res)
			if err != nil {
				return failErr(err)
			}
			o.str(string(b)).line()
		} else {
			printRecover(o, res, dry)
		}
		if err := o.flush(); err != nil {
			return failErr(fmt.Errorf("recover: write output: %w", err))
		}
	}
	if runErr != nil {
		return runErr
	}
	if !dry && !res.Consistent {
		return &exitError{code: ExitProblems, err: fmt.Errorf("recover: %s is still not consistent after recovery", path)}
	}
	return nil
}

// inside reports whether p is dir or lies under it.
func inside(p, dir string) bool {
	ap, err1 := filepath.Abs(p)
	ad, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(ad, ap)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// isPartitionDir: a directory holding segment files, or named <topic>-<n>.
func isPartitionDir(dir string) (bool, error) {
	names, err := readDirNames(dir)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if _, suf, ok := segment.ParseFileName(n); ok && strings.HasPrefix(suf, segment.LogSuffix) {
			return true, nil
		}
	}
	return isPartitionDirName(filepath.Base(dir)), nil
}

// hasPartitionDirs reports whether dir holds a partition directory, live or
// waiting for deletion (<topic>-<n>.<id>-delete, -stray).
func hasPartitionDirs(dir string) (bool, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, d := range des {
		if !d.IsDir() {
			continue
		}
		n := strings.TrimSuffix(strings.TrimSuffix(d.Name(), "-delete"), "-stray")
		if isPartitionDirName(n) {
			return true, nil
		}
	}
	return false, nil
}

// recoverRun is one recover invocation.
type recoverRun struct {
	path string
	part bool
	// prealloc: --preallocated (segment.Options.Preallocate).
	prealloc bool
	// missing is how many kept segments lacked an index at the last
	// inspection (partition mode).
	missing int
	// snapshots are the producer snapshots above the log end that the last
	// inspection found (partition mode): removed, so backed up.
	snapshots []string
}

func (r *recoverRun) segmentOptions() *segment.Options {
	return &segment.Options{RecoveryPoint: 0, FlushMs: segment.Never, Preallocate: r.prealloc, Logger: quietLogger()}
}

func (r *recoverRun) recoveryOptions() *recovery.Options {
	// NoBackup: with --backup the tool has saved what the plan cuts first.
	return &recovery.Options{Logger: quietLogger(), NoBackup: true, Lock: func(string) (func() error, error) {
		return func() error { return nil }, nil // the tool holds the lock for the whole run
	}, OptionsFor: func(string) *segment.Options { return &segment.Options{Preallocate: r.prealloc} }}
}

// inspect is the read-only plan: what recovery would do.
func (r *recoverRun) inspect() (*recovery.Report, error) {
	if !r.part {
		rep, err := recovery.Inspect(r.path, r.recoveryOptions())
		if err != nil {
			return rep, loadErr(r.path, err)
		}
		return rep, nil
	}
	lr, err := recovery.InspectPartition(r.path, r.segmentOptions())
	rep := partitionAsReport(r.path, lr)
	rep.DryRun = true
	if err == nil {
		// A full scan rebuilds every scanned segment's indexes, which the
		// segment report does not count: count the missing ones it recreates.
		n, merr := missingIndexes(r.path, rep)
		if merr != nil {
			return rep, failErr(fmt.Errorf("recover: %w", merr))
		}
		rep.Partitions[0].IndexesRebuilt += n
		rep.Totals.IndexesRebuilt += n
		r.missing = n
		side, snaps, serr := partitionSideFixes(r.path, lr.LogEndOffset, false)
		if serr != nil {
			return rep, failErr(fmt.Errorf("recover: %w", serr))
		}
		rep.Partitions[0].SideFilesTrimmed = append(rep.Partitions[0].SideFilesTrimmed, side...)
		rep.Totals.SideFilesTrimmed += len(side)
		r.snapshots = snaps
	}
	if err != nil {
		return rep, loadErr(r.path, err)
	}
	return rep, nil
}

// loadErr maps a recovery failure to an exit status: damage recovery cannot
// repair exits 1, anything else (I/O, permissions) 2.
func loadErr(path string, err error) error {
	if errors.Is(err, vfs.ErrLocked) || errors.Is(err, recovery.ErrLocked) {
		return failErr(fmt.Errorf("recover: %s is locked: a broker (strata or Kafka) is running on it; stop it first (%w)", path, err))
	}
	if record.IsCorruption(err) || index.IsCorruption(err) {
		return &exitError{code: ExitProblems, err: fmt.Errorf("recover: %s could not be made consistent: %w", path, err)}
	}
	return failErr(fmt.Errorf("recover: %s: %w", path, err))
}

// lock takes the lock that keeps a broker out (see lockOffline).
func (r *recoverRun) lock() (func() error, error) {
	return lockOffline("recover", r.path, r.part, true)
}

// lockOffline takes the lock that keeps a broker out: the data directory's,
// or for a partition directory its parent's when the parent has a .lock file.
// With create false a missing .lock is not created (no lock is taken).
func lockOffline(tool, path string, part, create bool) (func() error, error) {
	dir := path
	if part {
		dir = filepath.Dir(path)
	}
	if part || !create {
		if _, err := os.Stat(filepath.Join(dir, ".lock")); err != nil {
			return func() error { return nil }, nil
		}
	}
	unlock, err := vfs.LockDir(dir)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, failErr(fmt.Errorf("%s: %s is locked: a broker (strata or Kafka) is running on it; stop it first (%w)", tool, dir, err))
	}
	if err != nil {
		return nil, failErr(fmt.Errorf("%s: lock %s: %w", tool, dir, err))
	}
	return unlock, nil
}

// warnIfLocked tells a dry run that a broker holds the directory (its active
// segments may then look torn). It probes only an existing .lock file, so it
// creates nothing.
func warnIfLocked(w io.Writer, path string, part bool) {
	dir := path
	if part {
		dir = filepath.Dir(path)
	}
	if _, err := os.Stat(filepath.Join(dir, ".lock")); err != nil {
		return
	}
	unlock, err := vfs.LockDir(dir)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			fmt.Fprintf(w, "strata: recover: note: %s is in use by a running broker; what it is writing may look torn\n", dir)
		}
		return
	}
	_ = unlock()
}

// recover plans from the read-only inspection, saves the bytes to be cut,
// recovers, checks that what was cut is what was saved, and inspects again.
func (r *recoverRun) recover(backupDir string) (rep *recovery.Report, bm *recovery.BackupManifest, consistent bool, err error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, nil, false, err
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = failErr(fmt.Errorf("recover: unlock %s: %w", r.path, uerr))
		}
	}()
	plan, err := r.inspect()
	if err != nil {
		return plan, nil, false, err
	}
	var bk *recovery.Backup
	if backupDir != "" && len(allCuts(plan))+len(r.snapshots) > 0 {
		bk, err = saveBackup(backupDir, plan, r.snapshots)
		if bk != nil {
			bm = bk.Manifest()
		}
		if err != nil {
			return plan, bm, false, failErr(fmt.Errorf("recover: backup: %w (nothing was changed)", err))
		}
	}
	if r.part {
		l, lr, oerr := segment.OpenWithReport(r.path, r.segmentOptions())
		rep = partitionAsReport(r.path, lr)
		if lr != nil {
			rep.Partitions[0].IndexesRebuilt += r.missing
			rep.Totals.IndexesRebuilt += r.missing
		}
		if oerr != nil {
			return rep, bm, false, loadErr(r.path, oerr)
		}
		if err := l.Close(); err != nil {
			return rep, bm, false, failErr(fmt.Errorf("recover: close %s: %w", r.path, err))
		}
		side, _, serr := partitionSideFixes(r.path, lr.LogEndOffset, true)
		rep.Partitions[0].SideFilesTrimmed = append(rep.Partitions[0].SideFilesTrimmed, side...)
		rep.Totals.SideFilesTrimmed += len(side)
		if serr != nil {
			return rep, bm, false, failErr(fmt.Errorf("recover: %s: %w", r.path, serr))
		}
	} else {
		d, drep, oerr := recovery.OpenDataDir(r.path, r.recoveryOptions())
		rep = drep
		if oerr != nil {
			return rep, bm, false, loadErr(r.path, oerr)
		}
		if err := d.Close(); err != nil {
			return rep, bm, false, failErr(fmt.Errorf("recover: close %s: %w", r.path, err))
		}
	}
	if bk != nil {
		if err := bk.Check(allCuts(rep)); err != nil {
			return rep, bm, false, &exitError{code: ExitProblems, err: fmt.Errorf("recover: backup: %w", err)}
		}
	}
	after, err := r.inspect()
	if err != nil {
		return rep, bm, false, err
	}
	return rep, bm, !after.Changed(), nil
}

// missingIndexes counts the segments of dir that recovery keeps and whose
// .index or .timeindex is missing.
func missingIndexes(dir string, rep *recovery.Report) (int, error) {
	names, err := readDirNames(dir)
	if err != nil {
		return 0, err
	}
	removed := map[string]bool{}
	for _, c := range allCuts(rep) {
		if c.Removed {
			removed[filepath.Base(c.File)] = true
		}
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	count := 0
	for _, n := range names {
		base, suf, ok := segment.ParseFileName(n)
		if !ok || suf != segment.LogSuffix || removed[n] {
			continue
		}
		if !have[segment.FileName(base, segment.IndexSuffix)] || !have[segment.FileName(base, segment.TimeIndexSuffix)] {
			count++
		}
	}
	return count, nil
}

// partitionAsReport puts one partition's load report into a data directory
// report, so both modes print alike.
func partitionAsReport(dir string, lr *segment.LoadReport) *recovery.Report {
	rep := &recovery.Report{Dir: dir}
	if lr == nil {
		return rep
	}
	tp, _ := recovery.ParsePartitionDir(filepath.Base(dir))
	rep.Partitions = []recovery.PartitionReport{{
		Topic: tp.Topic, Partition: tp.Partition, Dir: dir,
		LogEndOffset: lr.LogEndOffset, Segments: lr.Segments, SegmentsScanned: lr.SegmentsScanned,
		BatchesScanned: lr.BatchesScanned, BytesScanned: lr.BytesScanned, BytesTruncated: lr.BytesTruncated,
		BytesPreallocatedTrimmed: lr.BytesPreallocatedTrimmed, SegmentsRemoved: lr.SegmentsRemoved, IndexesRebuilt: lr.IndexesRebuilt, Truncations: lr.Cuts,
		TempFilesRemoved: lr.TempFilesRemoved, SwapsCompleted: lr.SwapsCompleted, SideFilesTrimmed: lr.SideFilesTrimmed,
		Duration: lr.Duration,
	}}
	rep.Totals = recovery.Totals{Partitions: 1, SegmentsScanned: lr.SegmentsScanned, BatchesScanned: lr.BatchesScanned,
		BytesScanned: lr.BytesScanned, BytesTruncated: lr.BytesTruncated, BytesPreallocatedTrimmed: lr.BytesPreallocatedTrimmed,
		SegmentsRemoved: lr.SegmentsRemoved,
		IndexesRebuilt:  lr.IndexesRebuilt, Truncations: len(lr.Cuts), TempFilesRemoved: len(lr.TempFilesRemoved),
		SwapsCompleted: len(lr.SwapsCompleted), SideFilesTrimmed: len(lr.SideFilesTrimmed)}
	rep.Duration = lr.Duration
	return rep
}

func allCuts(rep *recovery.Report) []segment.Cut {
	var cs []segment.Cut
	if rep == nil {
		return nil
	}
	for _, p := range rep.Partitions {
		cs = append(cs, p.Truncations...)
	}
	return cs
}

// saveBackup saves every byte the plan cuts into a new backup in dir (the
// layout is recovery.Backup's): cut tails, removed segments with their index
// files, and the producer snapshots wholeFiles to be removed.
func saveBackup(dir string, plan *recovery.Report, wholeFiles []string) (*recovery.Backup, error) {
	bk, err := recovery.NewBackup(vfs.OS, dir)
	if err != nil {
		return nil, err
	}
	for _, c := range allCuts(plan) {
		kind := "tail"
		if c.Removed {
			kind = "segment"
		}
		if _, err := bk.Save(c.File, c.Position, c.Bytes, kind); err != nil {
			return bk, err
		}
		if c.Removed {
			stem := strings.TrimSuffix(c.File, segment.LogSuffix)
			for _, suf := range []string{segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix} {
				fi, err := os.Stat(stem + suf)
				if err != nil {
					continue
				}
				if _, err := bk.Save(stem+suf, 0, fi.Size(), "index"); err != nil {
					return bk, err
				}
			}
		}
	}
	for _, f := range wholeFiles {
		fi, err := os.Stat(f)
		if err != nil {
			return bk, err
		}
		if _, err := bk.Save(f, 0, fi.Size(), "snapshot"); err != nil {
			return bk, err
		}
	}
	return bk, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// printRecover writes the human report.
func printRecover(o *out, res *recoverResult, dry bool) {
	rep := res.Report
	verb := func(done, would string) string {
		if dry {
			return would
		}
		return done
	}
	o.str("recover ").str(res.Path).str(" (").str(strings.ReplaceAll(res.Mode, "_", " "))
	if res.Mode == "data_dir" {
		if rep.FullScan {
			o.str(", recovery-point checkpoint unreadable: every partition scanned in full")
		} else if rep.CleanShutdown {
			o.str(", clean shutdown: segments trusted, tails and indexes checked")
		} else {
			o.str(", unclean shutdown: scanned from the recovery points")
		}
	} else {
		o.str(", scanned from its first segment")
	}
	if dry {
		o.str("; dry run, nothing changed")
	}
	o.str(")").line()
	for _, f := range rep.CheckpointErrors {
		o.str("  unreadable checkpoint (treated as empty): ").str(f).line()
	}
	for _, p := range rep.Partitions {
		for _, c := range p.Truncations {
			if !c.Removed {
				o.str("  ").str(verb("cut ", "would cut ")).str(c.File).str(" at byte ").int(c.Position)
			} else {
				o.str("  ").str(verb("removed ", "would remove ")).str(c.File)
			}
			if c.EndOffset >= 0 {
				o.str(": offsets [").int(c.FirstOffset).str(", ").int(c.EndOffset).str(")")
			} else {
				o.str(": offsets from ").int(c.FirstOffset).str(" (no header readable)")
			}
			o.str(", ").int(c.Bytes).str(" bytes dropped")
			if c.Reason != "" {
				o.str(" (").str(c.Reason).str(")")
			}
			o.line()
		}
		if p.IndexesRebuilt > 0 {
			o.str("  ").str(p.Dir).str(": ").str(verb("rebuilt the indexes of ", "would rebuild the indexes of ")).str(plural(int64(p.IndexesRebuilt), "segment")).line()
		}
		for _, f := range p.TempFilesRemoved {
			o.str("  ").str(verb("removed leftover ", "would remove leftover ")).str(f).line()
		}
		for _, f := range p.SwapsCompleted {
			o.str("  ").str(verb("completed swap ", "would complete swap ")).str(f).line()
		}
		for _, f := range p.SideFilesTrimmed {
			o.str("  ").str(verb("trimmed ", "would trim ")).str(f).line()
		}
	}
	if res.Backup != nil {
		var n int64
		for _, e := range res.Backup.Files {
			n += e.Length
		}
		o.str("  saved ").int(n).str(" cut bytes in ").str(plural(int64(len(res.Backup.Files)), "file")).
			str(" under ").str(res.Backup.Dir).str(" (MANIFEST.json lists them)").line()
	}
	t := rep.Totals
	o.str("summary: ").str(plural(int64(t.Partitions), "partition")).str(", ").
		str(plural(int64(t.SegmentsScanned), "segment")).str(" scanned, ").
		int(t.BytesTruncated).str(" bytes ").str(verb("truncated", "to truncate")).str(", ").
		str(plural(int64(t.SegmentsRemoved), "segment")).str(verb(" removed", " to remove")).str(", ").
		str("indexes of ").str(plural(int64(t.IndexesRebuilt), "segment")).str(verb(" rebuilt", " to rebuild")).line()
	if t.BytesPreallocatedTrimmed > 0 {
		o.str("  ").int(t.BytesPreallocatedTrimmed).str(" preallocated bytes ").str(verb("trimmed", "to trim")).
			str(" (the zero-filled reserve of preallocated segments; no data lost)").line()
	}
	switch {
	case !res.Changed:
		o.str("nothing to do: the directory is consistent").line()
	case dry:
		o.str("run without --dry-run to repair").line()
	case res.Consistent:
		o.str("repaired: the directory is consistent now").line()
	}
}

// partitionSideFixes brings the files that name offsets of a partition
// recovered on its own down to its new log end, as start-up does for a data
// directory: its entry in the parent's offset checkpoints (a log start offset
// above the log end would make the broker drop every segment), leader epochs
// starting at or past the end. With write false it only reports. It returns
// what it changed (or would), and the producer snapshots above the end, for
// the backup: segment.Open removes them (and reports each in its
// LoadReport.SideFilesTrimmed).
func partitionSideFixes(dir string, end int64, write bool) (changes, removed []string, err error) {
	parent := filepath.Dir(dir)
	if tp, ok := recovery.ParsePartitionDir(filepath.Base(dir)); ok {
		for _, name := range []string{checkpoint.RecoveryPointFile, checkpoint.LogStartOffsetFile, checkpoint.ReplicationOffsetFile, checkpoint.CleanerOffsetFile} {
			path := filepath.Join(parent, name)
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return changes, removed, err
			}
			m, err := checkpoint.ParseOffsets(b)
			if err != nil {
				continue // unreadable: the broker treats it as empty
			}
			if off, ok := m[tp]; !ok || off <= end {
				continue
			}
			changes = append(changes, fmt.Sprintf("%s: %s offset %d lowered to the log end %d", path, tp, m[tp], end))
			m[tp] = end
			if write {
				if err := checkpoint.WriteOffsets(vfs.OS, path, m); err != nil {
					return changes, removed, err
				}
			}
		}
	}
	epochPath := filepath.Join(dir, checkpoint.LeaderEpochFile)
	if b, err := os.ReadFile(epochPath); err == nil {
		if es, err := checkpoint.ParseEpochs(b); err == nil {
			keep := es[:0:0]
			for _, e := range es {
				if e.StartOffset < end {
					keep = append(keep, e)
				}
			}
			if len(keep) < len(es) {
				changes = append(changes, fmt.Sprintf("%s: %d leader epochs starting at or past the log end %d dropped", epochPath, len(es)-len(keep), end))
				if write {
					if err := checkpoint.WriteEpochs(vfs.OS, epochPath, keep); err != nil {
						return changes, removed, err
					}
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return changes, removed, err
	}
	names, err := readDirNames(dir)
	if err != nil {
		return changes, removed, err
	}
	for _, n := range names {
		if base, suf, ok := segment.ParseFileName(n); ok && suf == segment.SnapshotSuffix && base > end {
			removed = append(removed, filepath.Join(dir, n))
		}
	}
	if write && len(changes) > 0 {
		err = syncDir(dir)
	}
	return changes, removed, err
}
