package tools

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check partition directories, data directories or segment files for damage (read-only)",
		UsageText: "strata verify [--json] [--max-message-size N] PATH...",
		Description: `PATH is a partition directory (<topic>-<partition>, holding segment files), a data
directory (a log.dirs entry: partition directories and checkpoint files), or single
.log/.index/.timeindex/checkpoint files. For every segment it checks:

  framing and CRC of every entry (v2 batches and v0/v1 messages): torn entries,
    garbage or zeroed tails, CRC mismatches;
  offsets strictly increasing within and across segments, and not below the
    segment's base offset (gaps are legal after compaction: counted, not problems);
  the .index and .timeindex against the log: a missing index, zero-filled slots,
    entries out of order, positions that are not batch starts or lie past the log
    end, offsets that do not match the batch at their position, time index
    timestamps no batch up to their offset has;
  leftover .swap, .cleaned and .deleted files (an interrupted compaction, split or
    deletion; strata recover finishes them);
  leader-epoch-checkpoint, and in a data directory the offset checkpoints
    (recovery point, log start, replication, cleaner): parseable, and every offset
    within [0, log end offset] of its partition;
  producer snapshots (.snapshot: version, CRC, length) and transaction indexes
    (.txnindex: version, whole entries, offsets not below the segment base, and
    agreeing with the log: each entry at an abort marker of its producer, each
    abort marker of a transaction with records left in the log indexed).

Each problem is printed with its file, byte position and offset, then a summary.
A zeroed tail (kind zeroed_tail) in the last segment of a partition written with
preallocate=true (log.preallocate) is what a crash leaves: the unwritten reserve of
the file, not lost data; recovery (the broker's start or strata recover) cuts it and
reports it as bytes_preallocated_trimmed, not as a truncation. verify cannot tell
it from unsynced data lost in a crash, so it still counts as a problem (exit 1).
verify only reads: it takes no lock, so it also runs beside a live broker. It
notices one (the data directory's .lock is held) and says so on stderr: the last
segment of each partition there is being written, so the zero-filled slots the
broker preallocates in its .index and .timeindex are not problems and are skipped,
and a torn batch at its very end may be a write in progress. Exit status: 0 clean,
1 problems found, 2 usage or I/O error.

Examples:
   strata verify /var/lib/kafka/data/orders-0
   strata verify /var/lib/kafka/data --json
   strata verify /data/orders-0/00000000000000000000.log`,
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "max-message-size", Usage: "treat an entry larger than this many bytes as corrupt (0: no limit)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per line (problems, partitions, a summary)"},
		},
		Action: runVerify,
	}
}

// verifier holds one verify run.
type verifier struct {
	o        *out
	stderr   io.Writer
	json     bool
	maxEntry int64
	scan     logScan
	prog     *progress

	partitions, segments, batches, problems, gaps, bytes int64

	// live caches, per data directory, whether a running broker holds its
	// lock (the note is printed once per directory).
	live map[string]bool
}

// partInfo is what verify learned of a partition directory.
type partInfo struct {
	dir              string
	logStart, logEnd int64
}

func runVerify(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("verify: no path given (strata verify PATH...)")
	}
	if c.Int64("max-message-size") < 0 {
		return usageErr("verify: --max-message-size must not be negative")
	}
	v := &verifier{o: newOut(c.App.Writer), stderr: c.App.ErrWriter, json: c.Bool("json"), maxEntry: c.Int64("max-message-size")}
	if isTerminal(v.stderr) { // sizing the work costs a walk: only for a bar
		var total int64
		for _, p := range c.Args().Slice() {
			total += logBytes(p)
		}
		v.prog = newProgress(v.stderr, total, "verify")
	}
	start := time.Now()
	var failed error
	for _, p := range c.Args().Slice() {
		if err := v.path(p); err != nil {
			v.o.flush()
			fmt.Fprintf(v.stderr, "strata: verify: %v\n", err)
			failed = err
		}
	}
	v.prog.done()
	v.summary(time.Since(start))
	if err := v.o.flush(); err != nil {
		return failErr(fmt.Errorf("verify: write output: %w", err))
	}
	switch {
	case failed != nil:
		return &exitError{code: ExitUsage, err: errors.New("verify: could not read everything (see above)")}
	case v.problems > 0:
		return &exitError{code: ExitProblems, err: fmt.Errorf("verify: %s found", plural(v.problems, "problem"))}
	}
	return nil
}

// isTerminal reports whether w is a terminal (progress bars go only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// logBytes is the size of the .log files under p (for the progress bar).
func logBytes(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, segment.LogSuffix) {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func (v *verifier) report(p problem) {
	v.problems++
	writeProblem(v.o, v.json, p)
}

func (v *verifier) summary(d time.Duration) {
	secs := d.Seconds()
	if v.json {
		v.o.str(`{"type":"summary","partitions":`).int(v.partitions).str(`,"segments":`).int(v.segments).
			str(`,"batches":`).int(v.batches).str(`,"bytes":`).int(v.bytes).str(`,"offset_gaps":`).int(v.gaps).
			str(`,"problems":`).int(v.problems).str(`,"seconds":`)
		v.o.buf = strconv.AppendFloat(v.o.buf, secs, 'f', 3, 64)
		v.o.str(`,"mb_per_sec":`)
		v.o.buf = strconv.AppendFloat(v.o.buf, mbps(v.bytes, secs), 'f', 1, 64)
		v.o.str("}").line()
		return
	}
	v.o.str("verified ").int(v.partitions).str(" partitions, ").int(v.segments).str(" segments, ").
		int(v.batches).str(" batches, ").int(v.bytes).str(" bytes in ")
	v.o.buf = strconv.AppendFloat(v.o.buf, secs, 'f', 3, 64)
	v.o.str(" s (")
	v.o.buf = strconv.AppendFloat(v.o.buf, mbps(v.bytes, secs), 'f', 0, 64)
	v.o.str(" MB/s); offset gaps (legal after compaction): ").int(v.gaps).str("; ")
	if v.problems == 0 {
		v.o.str("no problems")
	} else {
		v.o.str(plural(v.problems, "problem"))
	}
	v.o.line()
}

// path verifies one command line argument.
func (v *verifier) path(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return v.file(p)
	}
	names, err := readDirNames(p)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, _, ok := segment.ParseFileName(n); ok {
			_, err := v.partition(p)
			return err
		}
	}
	if isPartitionDirName(filepath.Base(p)) {
		_, err := v.partition(p)
		return err
	}
	return v.dataDir(p, names)
}

func readDirNames(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(des))
	for _, d := range des {
		names = append(names, d.Name())
	}
	sort.Strings(names)
	return names, nil
}

// isPartitionDirName reports whether name looks like <topic>-<partition>,
// with an optional .<uuid>-future suffix.
func isPartitionDirName(name string) bool {
	name = strings.TrimSuffix(name, "-future")
	if i := strings.LastIndexByte(name, '.'); i > 0 && len(name)-i-1 == 32 {
		name = name[:i]
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return false
	}
	_, err := strconv.ParseUint(name[i+1:], 10, 31)
	return err == nil
}

// dataDir verifies the partition directories of a data directory, then its
// offset checkpoints against them.
func (v *verifier) dataDir(dir string, names []string) error {
	parts := map[string]partInfo{}
	var firstErr error
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if strings.HasSuffix(n, "-delete") || strings.HasSuffix(n, "-stray") {
			continue // waiting for deletion: not part of the log any more
		}
		if !isPartitionDirName(n) {
			continue
		}
		info, err := v.partition(p)
		if err != nil {
			fmt.Fprintf(v.stderr, "strata: verify: %v\n", err)
			firstErr = err
			continue
		}
		parts[n] = info
	}
	for _, n := range []string{checkpoint.RecoveryPointFile, checkpoint.LogStartOffsetFile, checkpoint.ReplicationOffsetFile, checkpoint.CleanerOffsetFile} {
		if err := v.offsetCheckpoint(filepath.Join(dir, n), parts); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return firstErr
}

// offsetCheckpoint checks an offset checkpoint file: it parses, and each
// partition it names that is present has its offset within [0, log end].
func (v *verifier) offsetCheckpoint(path string, parts map[string]partInfo) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	m, err := checkpoint.ParseOffsets(b)
	if err != nil {
		v.report(checkpointProblem(path, b, err))
		return nil
	}
	for _, tp := range sortedPartitions(m) {
		off := m[tp]
		info, ok := parts[tp.String()]
		if !ok {
			continue // a partition elsewhere or deleted: nothing to compare
		}
		if off < 0 || off > info.logEnd {
			v.report(problem{file: path, pos: checkpointLinePos(b, tp), offset: off, kind: kindCheckpoint,
				message: fmt.Sprintf("%s: offset %d is outside [0, %d], the log end offset of %s", tp, off, info.logEnd, info.dir)})
		}
	}
	return nil
}

// checkpointLinePos finds the byte position of the line naming tp (0 if not
// found).
func checkpointLinePos(b []byte, tp checkpoint.TopicPartition) int64 {
	prefix := tp.Topic + " " + strconv.Itoa(int(tp.Partition)) + " "
	s := string(b)
	for pos := 0; pos < len(s); {
		if strings.HasPrefix(s[pos:], prefix) {
			return int64(pos)
		}
		i := strings.IndexAny(s[pos:], "\r\n")
		if i < 0 {
			break
		}
		pos += i + 1
	}
	return 0
}

// segFiles are the files of one base offset in a partition directory.
type segFiles struct {
	base         int64
	log, ix, tix bool
}

// inUse reports whether dataDir is locked by a running broker, printing
// the note that says what that means the first time.
func (v *verifier) inUse(dataDir string) bool {
	dataDir = filepath.Clean(dataDir)
	if locked, ok := v.live[dataDir]; ok {
		return locked
	}
	locked, err := vfs.DirLocked(dataDir)
	if err != nil {
		fmt.Fprintf(v.stderr, "strata: verify: note: cannot tell whether a broker is using %s: %v\n", dataDir, err)
	}
	if locked {
		fmt.Fprintf(v.stderr, "strata: verify: note: %s is in use by a running broker (its .lock is held): the last segment of each partition is being written, so its preallocated zero index slots are skipped and a torn batch at its end may be a write in progress; stop the broker for a full check\n", dataDir)
	}
	if v.live == nil {
		v.live = map[string]bool{}
	}
	v.live[dataDir] = locked
	return locked
}

// partition verifies one partition directory.
func (v *verifier) partition(dir string) (partInfo, error) {
	info := partInfo{dir: dir}
	names, err := readDirNames(dir)
	if err != nil {
		return info, err
	}
	v.partitions++
	startProblems := v.problems
	segs := map[int64]*segFiles{}
	for _, n := range names {
		base, suffix, ok := segment.ParseFileName(n)
		if !ok {
			continue
		}
		for _, t := range []string{segment.SwapSuffix, segment.CleanedSuffix, segment.DeletedSuffix} {
			if strings.HasSuffix(suffix, t) {
				v.report(problem{file: filepath.Join(dir, n), pos: 0, offset: base, kind: kindLeftover,
					message: fmt.Sprintf("leftover %s file of an interrupted compaction, split or deletion (strata recover completes or removes it)", t)})
			}
		}
		s := segs[base]
		if s == nil {
			s = &segFiles{base: base}
			segs[base] = s
		}
		switch suffix {
		case segment.SnapshotSuffix:
			v.sideFile(filepath.Join(dir, n), func(path string, b []byte) []problem { _, p := parseSnapshot(path, b); return p })
		case segment.TxnIndexSuffix:
			v.sideFile(filepath.Join(dir, n), func(path string, b []byte) []problem { _, p := parseTxnIndex(path, b, base); return p })
		case segment.LogSuffix:
			s.log = true
		case segment.IndexSuffix:
			s.ix = true
		case segment.TimeIndexSuffix:
			s.tix = true
		}
	}
	bases := make([]int64, 0, len(segs))
	for b, s := range segs {
		if s.log {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	prevLast := int64(-1)
	info.logStart = -1
	live := len(bases) > 0 && v.inUse(filepath.Dir(filepath.Clean(dir)))
	open := map[int64]bool{}
	for i, base := range bases {
		logPath := segment.FilePath(dir, base, segment.LogSuffix)
		res, err := checkSegment(&v.scan, segmentCheck{
			log: logPath, base: base, prevLast: prevLast, maxEntry: v.maxEntry, missingIndexProblem: true,
			ix: segment.FilePath(dir, base, segment.IndexSuffix), tix: segment.FilePath(dir, base, segment.TimeIndexSuffix),
			onBytes: v.prog.add, active: live && i == len(bases)-1,
		})
		if err != nil {
			return info, err
		}
		v.checkTxnIndex(dir, base, res.txn, open)
		v.segments++
		v.batches += res.batches
		v.bytes += res.size
		v.gaps += res.gaps
		if prevLast >= 0 && res.firstOff > prevLast+1 {
			v.gaps++
		}
		for _, p := range res.problems {
			v.report(p)
		}
		if info.logStart < 0 {
			info.logStart = base
		}
		if res.lastOff >= 0 {
			prevLast = res.lastOff
		}
		info.logEnd = max(prevLast+1, base)
	}
	if info.logStart < 0 {
		info.logStart = 0
	}
	v.epochCheckpoint(filepath.Join(dir, checkpoint.LeaderEpochFile), info)
	if v.json {
		v.o.str(`{"type":"partition","dir":`).jstr(dir).str(`,"segments":`).int(int64(len(bases))).
			str(`,"logStartOffset":`).int(info.logStart).str(`,"logEndOffset":`).int(info.logEnd).
			str(`,"problems":`).int(v.problems - startProblems).str("}").line()
	} else {
		v.o.str("partition ").str(dir).str(": ").int(int64(len(bases))).str(" segments, offsets [").
			int(info.logStart).str(", ").int(info.logEnd).str("), ").str(plural(v.problems-startProblems, "problem")).line()
	}
	return info, nil
}

// epochCheckpoint checks a partition's leader-epoch-checkpoint: parseable,
// epochs and start offsets increasing, start offsets within [0, log end].
func (v *verifier) epochCheckpoint(path string, info partInfo) {
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			v.report(problem{file: path, pos: 0, offset: -1, kind: kindCheckpoint, message: err.Error()})
		}
		return
	}
	es, err := checkpoint.ParseEpochs(b)
	if err != nil {
		v.report(checkpointProblem(path, b, err))
		return
	}
	for i, e := range es {
		pos := lineStart(b, i+3)
		switch {
		case e.StartOffset < 0 || e.StartOffset > info.logEnd:
			v.report(problem{file: path, pos: pos, offset: e.StartOffset, kind: kindCheckpoint,
				message: fmt.Sprintf("epoch %d starts at offset %d, outside [0, %d] (the log end offset)", e.Epoch, e.StartOffset, info.logEnd)})
		case i > 0 && (e.Epoch <= es[i-1].Epoch || e.StartOffset < es[i-1].StartOffset):
			v.report(problem{file: path, pos: pos, offset: e.StartOffset, kind: kindCheckpoint,
				message: fmt.Sprintf("epoch %d at offset %d does not follow epoch %d at offset %d", e.Epoch, e.StartOffset, es[i-1].Epoch, es[i-1].StartOffset)})
		}
	}
}

// file verifies one file given on the command line.
func (v *verifier) file(p string) error {
	kind := fileKind(p)
	base := baseOf(p)
	switch kind {
	case segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix:
		logPath := siblingLog(p, kind)
		c := segmentCheck{log: logPath, base: base, prevLast: -1, maxEntry: v.maxEntry, missingIndexProblem: true, onBytes: v.prog.add}
		// A segment file of a live broker's partition: the active one if no
		// later segment follows it.
		if partDir := filepath.Dir(filepath.Clean(logPath)); v.inUse(filepath.Dir(partDir)) {
			c.active = isLastSegment(partDir, base)
		}
		if kind != segment.TimeIndexSuffix {
			c.ix = strings.TrimSuffix(logPath, segment.LogSuffix) + segment.IndexSuffix
		}
		if kind != segment.IndexSuffix {
			c.tix = strings.TrimSuffix(logPath, segment.LogSuffix) + segment.TimeIndexSuffix
		}
		res, err := checkSegment(&v.scan, c)
		if err != nil {
			return err
		}
		v.checkTxnIndex(filepath.Dir(logPath), base, res.txn, map[int64]bool{})
		v.segments++
		v.batches += res.batches
		v.bytes += res.size
		v.gaps += res.gaps
		for _, pr := range res.problems {
			v.report(pr)
		}
		return nil
	case "epochs-checkpoint":
		v.epochCheckpoint(p, partInfo{dir: filepath.Dir(p), logEnd: 1<<63 - 1})
		return nil
	case "offsets-checkpoint":
		return v.offsetCheckpoint(p, nil)
	}
	for _, t := range []string{segment.SwapSuffix, segment.CleanedSuffix, segment.DeletedSuffix} {
		if strings.HasSuffix(p, t) {
			v.report(problem{file: p, pos: 0, offset: base, kind: kindLeftover, message: "leftover " + t + " file"})
			return nil
		}
	}
	return fmt.Errorf("%s: not a file verify knows (.log, .index, .timeindex, checkpoint)", p)
}

// plural is "1 problem", "2 problems".
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

// sideFile checks a producer snapshot or transaction index with check.
func (v *verifier) sideFile(path string, check func(string, []byte) []problem) {
	b, err := os.ReadFile(path)
	if err != nil {
		v.report(problem{file: path, pos: 0, offset: -1, kind: "io", message: err.Error()})
		return
	}
	for _, p := range check(path, b) {
		v.report(p)
	}
}

// isLastSegment reports whether no segment .log in dir has a base above base.
func isLastSegment(dir string, base int64) bool {
	names, err := readDirNames(dir)
	if err != nil {
		return false
	}
	for _, n := range names {
		if b, suf, ok := segment.ParseFileName(n); ok && suf == segment.LogSuffix && b > base {
			return false
		}
	}
	return true
}
