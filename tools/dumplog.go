package tools

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/segment"
)

func dumplogCommand() *cli.Command {
	return &cli.Command{
		Name:      "dumplog",
		Usage:     "print the contents of segment, index, snapshot and checkpoint files (kafka-dump-log.sh)",
		UsageText: "strata dumplog [--deep-iteration] [--print-data] [--data-encoding text|hex|base64] [--offsets FROM:TO] [--max-bytes N] [--verify-index-only | --index-sanity-check] [--json] FILE...",
		Description: `The counterpart of Kafka's kafka-dump-log.sh. The action depends on each file's
name: .log (record batches, v0/v1/v2), .index (offset index), .timeindex (time
index), .txnindex (aborted transactions), .snapshot (producer state) and the
checkpoint files (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
replication-offset-checkpoint, cleaner-offset-checkpoint, leader-epoch-checkpoint).
Kafka's option spellings work too: --files a,b, --print-data-log, --deep-iteration,
--verify-index-only, --index-sanity-check, --max-message-size.

A .log prints one line per batch with Kafka's fields in Kafka's order; with
--deep-iteration one more line per record ("| offset: ..."), decompressing as
needed; control records print their marker (endTxnMarker: COMMIT coordinatorEpoch:
N). --offsets-decoder prints __consumer_offsets keys and values as JSON (offset
commits, group metadata; other records raw). Gaps between record offsets (legal after compaction) go to stderr. A batch whose
CRC does not match prints isvalid: false; bytes at the end that do not form an entry
print "Found N invalid bytes at the end of FILE"; both make the exit status 1. Zero
bytes at the end of the last segment after a crash are usually the unwritten reserve
of a segment written with preallocate=true (log.preallocate): recovery cuts them
without counting a truncation, but dumplog reports them like any trailing bytes.

--verify-index-only checks every .index/.timeindex entry against the .log (given a
.log, its indexes are checked): an offset entry is valid when its position is a batch
start and its offset lies in that batch, or is the last offset of a later batch of the
chunk indexed there. Only problems are printed. --index-sanity-check runs Kafka's
start-up checks.

--json prints one object per line with a "type": batch, record, index_entry,
time_index_entry, txn_entry, snapshot_entry, checkpoint_entry or problem.

The tool only reads: it takes no lock and never writes. An existing file of a kind
it does not know is skipped ("Ignoring unknown file"); a path that does not exist,
or a directory, is an error. Exit status: 0 ok, 1 an invalid batch, trailing bytes
or a failed index check, 2 usage or I/O error (a missing path among them).

Examples:
   strata dumplog /data/orders-0/00000000000000000000.log
   strata dumplog --deep-iteration --print-data /data/orders-0/00000000000000000000.log
   strata dumplog --files 00000000000000000000.log,00000000000000000000.index --deep-iteration
   strata dumplog 00000000000000000000.log --offsets 1000:1010 --deep-iteration --json
   strata dumplog --verify-index-only /data/orders-0/00000000000000000000.index
   strata dumplog /data/recovery-point-offset-checkpoint`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "files", Usage: "comma-separated files (Kafka's spelling; positional FILEs work too)"},
			&cli.BoolFlag{Name: "deep-iteration", Usage: "print every record, decompressing as needed"},
			&cli.BoolFlag{Name: "print-data", Aliases: []string{"print-data-log"}, Usage: "print keys and payloads (implies --deep-iteration)"},
			&cli.StringFlag{Name: "data-encoding", Value: "text", Usage: "how --print-data renders bytes: text (non-printable bytes escaped as \\xNN), hex or base64"},
			&cli.BoolFlag{Name: "offsets-decoder", Usage: "decode __consumer_offsets offset commits and group metadata as JSON (implies --print-data)"},
			&cli.BoolFlag{Name: "index-sanity-check", Usage: "run Kafka's start-up sanity check on .index/.timeindex files"},
			&cli.BoolFlag{Name: "verify-index-only", Usage: "check index entries against the .log, print only problems"},
			&cli.Int64Flag{Name: "max-message-size", Usage: "treat an entry larger than this many bytes as corrupt (0: no limit)"},
			&cli.Int64Flag{Name: "max-bytes", Usage: "read at most this many bytes of each .log (0: all)"},
			&cli.StringFlag{Name: "offsets", Usage: "only offsets in [FROM, TO) (FROM: or :TO leave a side open)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per line"},
		},
		Action: runDumplog,
	}
}

// dumper holds the options and output of one dumplog run.
type dumper struct {
	o          *out
	stderr     io.Writer
	json       bool
	deep       bool
	printData  bool
	enc        dataEncoding
	from, to   int64 // offsets [from, to)
	maxBytes   int64
	maxMessage int64
	verifyOnly bool
	sanity     bool
	// offsetsDecoder decodes __consumer_offsets keys and values
	// (dumplog_offsets.go).
	offsetsDecoder bool
	bad            bool // data problems seen (exit 1)
	failed         bool // I/O errors seen (exit 2)

	scan    logScan
	scratch []byte
}

func runDumplog(c *cli.Context) error {
	files := append([]string(nil), c.StringSlice("files")...)
	files = append(files, c.Args().Slice()...)
	if len(files) == 0 {
		return usageErr("dumplog: no files given (strata dumplog FILE... or --files a,b)")
	}
	enc, ok := parseDataEncoding(c.String("data-encoding"))
	if !ok {
		return usageErr("dumplog: --data-encoding %q: want text, hex or base64", c.String("data-encoding"))
	}
	from, to, err := parseOffsetRange(c.String("offsets"))
	if err != nil {
		return usageErr("dumplog: --offsets: %v", err)
	}
	if c.Int64("max-bytes") < 0 || c.Int64("max-message-size") < 0 {
		return usageErr("dumplog: --max-bytes and --max-message-size must not be negative")
	}
	d := &dumper{
		o:          newOut(c.App.Writer),
		stderr:     c.App.ErrWriter,
		json:       c.Bool("json"),
		printData:  c.Bool("print-data") || c.Bool("offsets-decoder"),
		enc:        enc,
		from:       from,
		to:         to,
		maxBytes:   c.Int64("max-bytes"),
		maxMessage: c.Int64("max-message-size"),
		verifyOnly: c.Bool("verify-index-only"),
		sanity:     c.Bool("index-sanity-check"),
	}
	d.deep = c.Bool("deep-iteration") || d.printData
	d.offsetsDecoder = c.Bool("offsets-decoder")
	for _, f := range files {
		for _, p := range strings.Split(f, ",") {
			if p == "" {
				continue
			}
			if err := d.dumpFile(p); err != nil {
				d.o.flush()
				fmt.Fprintf(d.stderr, "strata: dumplog: %v\n", err)
				d.failed = true
			}
		}
	}
	if err := d.o.flush(); err != nil {
		return failErr(fmt.Errorf("dumplog: write output: %w", err))
	}
	switch {
	case d.failed:
		return &exitError{code: ExitUsage, err: errors.New("dumplog: some files could not be read")}
	case d.bad:
		return &exitError{code: ExitProblems, err: errors.New("dumplog: the data has problems (see above)")}
	}
	return nil
}

// parseOffsetRange parses "FROM:TO" (half-open); either side may be empty.
func parseOffsetRange(s string) (int64, int64, error) {
	if s == "" {
		return 0, math.MaxInt64, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want FROM:TO", s)
	}
	from, to := int64(0), int64(math.MaxInt64)
	var err error
	if a != "" {
		if from, err = strconv.ParseInt(a, 10, 64); err != nil || from < 0 {
			return 0, 0, fmt.Errorf("%q: bad FROM", s)
		}
	}
	if b != "" {
		if to, err = strconv.ParseInt(b, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%q: bad TO", s)
		}
	}
	if to <= from {
		return 0, 0, fmt.Errorf("%q: TO must be larger than FROM", s)
	}
	return from, to, nil
}

// fileKind is what dumplog does with a file, from its name.
func fileKind(path string) string {
	name := filepath.Base(path)
	switch name {
	case checkpoint.RecoveryPointFile, checkpoint.LogStartOffsetFile, checkpoint.ReplicationOffsetFile, checkpoint.CleanerOffsetFile:
		return "offsets-checkpoint"
	case checkpoint.LeaderEpochFile:
		return "epochs-checkpoint"
	}
	for _, s := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix, segment.SnapshotSuffix} {
		if strings.HasSuffix(name, s) {
			return s
		}
	}
	return ""
}

// baseOf is the base offset in a segment file name, 0 when there is none.
func baseOf(path string) int64 {
	b, _, ok := segment.ParseFileName(filepath.Base(path))
	if !ok {
		return 0
	}
	return b
}

// siblingLog is the .log file of the segment an index file belongs to.
func siblingLog(path, suffix string) string {
	return strings.TrimSuffix(path, suffix) + segment.LogSuffix
}

func (d *dumper) dumpFile(path string) error {
	// A path that is not there is an error (exit 2), whatever its name;
	// only an existing file of a kind dumplog does not know is skipped.
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory: give its files (e.g. %s)", path, filepath.Join(path, "*"+segment.LogSuffix))
	}
	kind := fileKind(path)
	if kind == "" {
		fmt.Fprintf(d.stderr, "Ignoring unknown file %s\n", path)
		return nil
	}
	if !d.json && !d.verifyOnly && !d.sanity {
		d.o.str("Dumping ").str(path).line()
	}
	switch kind {
	case segment.LogSuffix:
		if d.verifyOnly || d.sanity {
			// Check the segment's indexes (those that exist).
			for _, s := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
				ix := strings.TrimSuffix(path, segment.LogSuffix) + s
				if _, err := os.Stat(ix); err == nil {
					if err := d.dumpIndex(ix, s); err != nil {
						return err
					}
				}
			}
			return nil
		}
		return d.dumpLog(path)
	case segment.IndexSuffix, segment.TimeIndexSuffix:
		return d.dumpIndex(path, kind)
	case segment.TxnIndexSuffix:
		return d.dumpTxnIndex(path)
	case segment.SnapshotSuffix:
		return d.dumpSnapshot(path)
	default:
		return d.dumpCheckpoint(path, kind)
	}
}

// problem prints a finding: a JSON problem line, or a human line on stdout.
func (d *dumper) problem(p problem) {
	d.bad = true
	writeProblem(d.o, d.json, p)
}

// writeProblem prints p as a JSON problem line or a human line.
func writeProblem(o *out, json bool, p problem) {
	if json {
		o.str(`{"type":"problem","file":`).jstr(p.file).str(`,"position":`).int(p.pos).str(`,"offset":`)
		if p.offset < 0 {
			o.str("null")
		} else {
			o.int(p.offset)
		}
		o.str(`,"kind":`).jstr(p.kind).str(`,"message":`).jstr(p.message).str("}").line()
		return
	}
	o.str("PROBLEM ").str(p.kind).str(" in ").str(p.file).str(" at position ").int(p.pos)
	if p.offset >= 0 {
		o.str(" offset ").int(p.offset)
	}
	o.str(": ").str(p.message).line()
}
