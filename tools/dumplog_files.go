package tools

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// dumpIndex prints an .index or .timeindex file, or with --verify-index-only
// checks it against its .log, or with --index-sanity-check runs Kafka's
// start-up sanity check.
func (d *dumper) dumpIndex(path, kind string) error {
	base := baseOf(path)
	if d.sanity {
		return d.sanityCheck(path, kind, base)
	}
	if d.verifyOnly {
		c := segmentCheck{log: siblingLog(path, kind), base: base, prevLast: -1, maxEntry: d.maxMessage}
		if kind == segment.IndexSuffix {
			c.ix = path
		} else {
			c.tix = path
		}
		res, err := checkSegment(&d.scan, c)
		if err != nil {
			return err
		}
		n := 0
		for _, p := range res.problems {
			if p.file == path {
				d.problem(p)
				n++
			}
		}
		if !d.json {
			d.o.str(path).str(": ")
			if n == 0 {
				d.o.str("every entry matches ").str(c.log)
			} else {
				d.o.int(int64(n)).str(" problems against ").str(c.log)
			}
			d.o.line()
		}
		return nil
	}
	var entries int
	var probs []problem
	if kind == segment.IndexSuffix {
		ix, p, err := readOffsetIndex(path, base)
		if err != nil {
			return err
		}
		probs = p
		entries = len(ix)
		for _, e := range ix {
			if d.json {
				d.o.str(`{"type":"index_entry","file":`).jstr(path).str(`,"offset":`).int(e.off).str(`,"position":`).int(e.pos).str("}").line()
			} else {
				d.o.str("offset: ").int(e.off).str(" position: ").int(e.pos).line()
			}
		}
	} else {
		tix, p, err := readTimeIndex(path, base)
		if err != nil {
			return err
		}
		probs = p
		entries = len(tix)
		for _, e := range tix {
			if d.json {
				d.o.str(`{"type":"time_index_entry","file":`).jstr(path).str(`,"timestamp":`).int(e.ts).str(`,"offset":`).int(e.off).str("}").line()
			} else {
				d.o.str("timestamp: ").int(e.ts).str(" offset: ").int(e.off).line()
			}
		}
	}
	if entries == 0 && len(probs) == 0 && !d.json {
		d.o.str(path).str(" is empty.").line()
	}
	for _, p := range probs {
		if p.kind == kindIndexZeroPad {
			// Kafka's dump stops here silently; say so, but it is what an
			// untrimmed index of a crashed broker looks like.
			if !d.json {
				d.o.str("(").str(p.message).str(")").line()
			}
			continue
		}
		d.problem(p)
	}
	return nil
}

func (d *dumper) sanityCheck(path, kind string, base int64) error {
	var err error
	if kind == segment.IndexSuffix {
		var ix *index.OffsetIndex
		if ix, err = index.OpenOffsetIndex(vfs.OS, path, base, 0, false); err == nil {
			err = ix.SanityCheck()
			ix.Close()
		}
	} else {
		var ix *index.TimeIndex
		if ix, err = index.OpenTimeIndex(vfs.OS, path, base, 0, false); err == nil {
			err = ix.SanityCheck()
			ix.Close()
		}
	}
	if err != nil && !index.IsCorruption(err) {
		return err
	}
	if err != nil {
		p := problem{file: path, pos: 0, offset: -1, kind: kindIndexFile, message: err.Error()}
		var ce *index.CorruptionError
		if errors.As(err, &ce) {
			p.pos, p.offset, p.message = ce.FilePos, ce.Offset, ce.Reason
		}
		d.problem(p)
		return nil
	}
	if !d.json {
		d.o.str(path).str(" passed sanity check.").line()
	}
	return nil
}

// txnEntrySize is a .txnindex entry: version int16, producerId, firstOffset,
// lastOffset, lastStableOffset (int64 each).
const txnEntrySize = 34

type txnEntry struct {
	version                    int16
	pid, first, last, lastStab int64
}

// parseTxnIndex decodes a .txnindex and checks it as Kafka's sanity check
// does (version 0, last offset not below the segment base, whole entries).
func parseTxnIndex(path string, b []byte, base int64) ([]txnEntry, []problem) {
	be := binary.BigEndian
	var out []txnEntry
	var probs []problem
	n := len(b) / txnEntrySize
	for i := 0; i < n; i++ {
		e := b[i*txnEntrySize:]
		t := txnEntry{int16(be.Uint16(e)), int64(be.Uint64(e[2:])), int64(be.Uint64(e[10:])), int64(be.Uint64(e[18:])), int64(be.Uint64(e[26:]))}
		out = append(out, t)
		if t.version != 0 {
			probs = append(probs, problem{file: path, pos: int64(i * txnEntrySize), offset: t.first, kind: kindTxnIndex, message: fmt.Sprintf("entry %d has version %d, want 0", i, t.version)})
		}
		if t.last < base {
			probs = append(probs, problem{file: path, pos: int64(i * txnEntrySize), offset: t.last, kind: kindTxnIndex, message: fmt.Sprintf("entry %d: last offset %d is below the segment base %d", i, t.last, base)})
		}
	}
	if r := len(b) % txnEntrySize; r != 0 {
		probs = append(probs, problem{file: path, pos: int64(n * txnEntrySize), offset: -1, kind: kindTxnIndex, message: fmt.Sprintf("file length %d is not a multiple of %d", len(b), txnEntrySize)})
	}
	return out, probs
}

func (d *dumper) dumpTxnIndex(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) == 0 && !d.json {
		d.o.str(path).str(" is empty.").line()
	}
	es, probs := parseTxnIndex(path, b, baseOf(path))
	for _, t := range es {
		if d.json {
			d.o.str(`{"type":"txn_entry","file":`).jstr(path).str(`,"version":`).int(int64(t.version)).str(`,"producerId":`).int(t.pid).
				str(`,"firstOffset":`).int(t.first).str(`,"lastOffset":`).int(t.last).str(`,"lastStableOffset":`).int(t.lastStab).str("}").line()
		} else {
			d.o.str("version: ").int(int64(t.version)).str(" producerId: ").int(t.pid).str(" firstOffset: ").int(t.first).
				str(" lastOffset: ").int(t.last).str(" lastStableOffset: ").int(t.lastStab).line()
		}
	}
	for _, p := range probs {
		d.problem(p)
	}
	return nil
}

// Producer snapshot: version int16 (1) | crc uint32 (CRC-32C of bytes [6,
// end)) | count int32 | 46-byte entries.
const (
	snapshotHeaderSize = 10
	snapshotEntrySize  = 46
)

type snapEntry struct {
	pid                   int64
	epoch                 int16
	lastSeq, delta, coord int32
	lastOff, ts, txnFirst int64
}

// parseSnapshot decodes a producer-state snapshot, checking version, CRC and
// length.
func parseSnapshot(path string, b []byte) ([]snapEntry, []problem) {
	var probs []problem
	bad := func(pos int64, format string, args ...any) {
		probs = append(probs, problem{file: path, pos: pos, offset: -1, kind: kindSnapshot, message: fmt.Sprintf(format, args...)})
	}
	if len(b) < snapshotHeaderSize {
		bad(0, "%d bytes, a snapshot has at least %d", len(b), snapshotHeaderSize)
		return nil, probs
	}
	be := binary.BigEndian
	if v := int16(be.Uint16(b)); v != 1 {
		bad(0, "version %d, want 1", v)
		return nil, probs
	}
	if got, want := record.CRC32C(b[6:]), be.Uint32(b[2:]); got != want {
		bad(2, "stored CRC %d, computed %d", want, got)
	}
	count := int64(int32(be.Uint32(b[6:])))
	if count < 0 || snapshotHeaderSize+count*snapshotEntrySize != int64(len(b)) {
		bad(6, "count %d does not match the file length %d", count, len(b))
		count = max(0, min(count, int64(len(b)-snapshotHeaderSize)/snapshotEntrySize))
	}
	out := make([]snapEntry, 0, count)
	for i := int64(0); i < count; i++ {
		e := b[snapshotHeaderSize+i*snapshotEntrySize:]
		out = append(out, snapEntry{
			pid: int64(be.Uint64(e)), epoch: int16(be.Uint16(e[8:])), lastSeq: int32(be.Uint32(e[10:])),
			lastOff: int64(be.Uint64(e[14:])), delta: int32(be.Uint32(e[22:])), ts: int64(be.Uint64(e[26:])),
			coord: int32(be.Uint32(e[34:])), txnFirst: int64(be.Uint64(e[38:])),
		})
	}
	return out, probs
}

func (d *dumper) dumpSnapshot(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	es, probs := parseSnapshot(path, b)
	for _, e := range es {
		firstSeq := decSequence(e.lastSeq, e.delta)
		if d.json {
			d.o.str(`{"type":"snapshot_entry","file":`).jstr(path).str(`,"producerId":`).int(e.pid).str(`,"producerEpoch":`).int(int64(e.epoch)).
				str(`,"coordinatorEpoch":`).int(int64(e.coord)).str(`,"currentTxnFirstOffset":`).int(e.txnFirst).
				str(`,"lastTimestamp":`).int(e.ts).str(`,"firstSequence":`).int(int64(firstSeq)).str(`,"lastSequence":`).int(int64(e.lastSeq)).
				str(`,"lastOffset":`).int(e.lastOff).str(`,"offsetDelta":`).int(int64(e.delta)).str(`,"timestamp":`).int(e.ts).str("}").line()
		} else {
			d.o.str("producerId: ").int(e.pid).str(" producerEpoch: ").int(int64(e.epoch)).str(" coordinatorEpoch: ").int(int64(e.coord)).
				str(" currentTxnFirstOffset: ").int(e.txnFirst).str(" lastTimestamp: ").int(e.ts).
				str(" firstSequence: ").int(int64(firstSeq)).str(" lastSequence: ").int(int64(e.lastSeq)).
				str(" lastOffset: ").int(e.lastOff).str(" offsetDelta: ").int(int64(e.delta)).str(" timestamp: ").int(e.ts).line()
		}
	}
	for _, p := range probs {
		d.problem(p)
	}
	return nil
}

func (d *dumper) dumpCheckpoint(path, kind string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if kind == "epochs-checkpoint" {
		es, err := checkpoint.ParseEpochs(b)
		if err != nil {
			d.problem(checkpointProblem(path, b, err))
			return nil
		}
		for _, e := range es {
			if d.json {
				d.o.str(`{"type":"checkpoint_entry","file":`).jstr(path).str(`,"epoch":`).int(int64(e.Epoch)).str(`,"startOffset":`).int(e.StartOffset).str("}").line()
			} else {
				d.o.str("epoch: ").int(int64(e.Epoch)).str(" startOffset: ").int(e.StartOffset).line()
			}
		}
		return nil
	}
	m, err := checkpoint.ParseOffsets(b)
	if err != nil {
		d.problem(checkpointProblem(path, b, err))
		return nil
	}
	for _, tp := range sortedPartitions(m) {
		if d.json {
			d.o.str(`{"type":"checkpoint_entry","file":`).jstr(path).str(`,"topic":`).jstr(tp.Topic).
				str(`,"partition":`).int(int64(tp.Partition)).str(`,"offset":`).int(m[tp]).str("}").line()
		} else {
			d.o.str("topic: ").str(tp.Topic).str(" partition: ").int(int64(tp.Partition)).str(" offset: ").int(m[tp]).line()
		}
	}
	return nil
}

func sortedPartitions(m map[checkpoint.TopicPartition]int64) []checkpoint.TopicPartition {
	tps := make([]checkpoint.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}

// checkpointProblem turns a checkpoint parse error into a problem whose
// position is the start of the offending line.
func checkpointProblem(path string, data []byte, err error) problem {
	p := problem{file: path, pos: 0, offset: -1, kind: kindCheckpoint, message: err.Error()}
	var pe *checkpoint.ParseError
	if errors.As(err, &pe) {
		p.pos = lineStart(data, pe.Line)
	}
	return p
}

// lineStart is the byte position where 1-based line n starts (line ends as
// Java's readLine: \n, \r\n or \r); len(data) when the file has fewer lines,
// or for n == 0 (the file ended early).
func lineStart(data []byte, n int) int64 {
	if n <= 0 {
		return int64(len(data))
	}
	line := 1
	for i := 0; i < len(data) && line < n; i++ {
		switch data[i] {
		case '\n':
			line++
			if line == n {
				return int64(i + 1)
			}
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			line++
			if line == n {
				return int64(i + 1)
			}
		}
	}
	if n == 1 {
		return 0
	}
	return int64(len(data))
}

// decSequence is Kafka's DefaultRecordBatch.decrementSequence: sequences wrap
// from Int32.MAX to 0.
func decSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}
