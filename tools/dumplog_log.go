package tools

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/stratalog/strata/record"
)

// gapReportLimit bounds the offset gaps printed per file (compacted logs have
// many).
const gapReportLimit = 100

// logDump is the state of dumping one .log file.
type logDump struct {
	d        *dumper
	file     string
	fileJSON string // the file name as a JSON string, appended to every line
	rr       record.RecordReader
	prevOff  int64 // last record offset printed in deep mode, for gaps
	gaps     int
	gapText  []byte
}

func (d *dumper) dumpLog(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	base := baseOf(path)
	ld := &logDump{d: d, file: path, fileJSON: string(appendJSONString(nil, path)), prevOff: -1}
	start := int64(0)
	if d.from > 0 {
		start = seekOffset(path, base, d.from, size)
	}
	end := size
	if d.maxBytes > 0 && start+d.maxBytes < end {
		end = start + d.maxBytes
	}
	if !d.json {
		d.o.str("Log starting offset: ").int(base).line()
	}
	s := &d.scan
	s.reset(f, path, size, start, end, d.maxMessage)
	validEnd := start
	for s.next() {
		e := &s.e
		validEnd = e.pos + e.size
		if e.last < d.from {
			continue
		}
		if e.base >= d.to && !e.legacy {
			break
		}
		if e.legacy {
			if !ld.legacy(e) {
				break
			}
			continue
		}
		ld.batch(e)
	}
	stop := s.stop
	if stop != nil && stop.kind == "io" {
		return fmt.Errorf("%s: %s", path, stop.message)
	}
	if stop != nil && stop.kind == kindWindowEnd {
		stop = nil // the --max-bytes window ends inside an entry
	}
	if stop != nil {
		d.problem(*stop)
		if !d.json && d.maxBytes == 0 {
			d.o.str("Found ").int(size - validEnd).str(" invalid bytes at the end of ").str(path).line()
		}
	}
	if ld.gaps > 0 {
		d.o.flush()
		fmt.Fprintf(d.stderr, "Non-consecutive offsets in %s\n%s", path, ld.gapText)
		if ld.gaps > gapReportLimit {
			fmt.Fprintf(d.stderr, "  ... and %d more gaps\n", ld.gaps-gapReportLimit)
		}
	}
	return nil
}

// seekOffset finds where to start reading for offset from: the position of
// the last offset index entry whose offset is below from (every batch before
// it ends below from). Any doubt about the index gives 0.
func seekOffset(logPath string, base, from, logSize int64) int64 {
	ix, _, err := readOffsetIndex(siblingIndex(logPath), base)
	if err != nil {
		return 0
	}
	pos, posOff := int64(0), int64(-1)
	prevOff, prevPos := int64(-1), int64(-1)
	for _, e := range ix {
		if e.off <= prevOff || e.pos <= prevPos || e.pos >= logSize {
			return 0 // out of order or past the end: do not trust it
		}
		prevOff, prevPos = e.off, e.pos
		if e.off < from {
			pos, posOff = e.pos, e.off
		}
	}
	// The entry must point at something framed like an entry.
	if pos > 0 {
		f, err := os.Open(logPath)
		if err != nil {
			return 0
		}
		defer f.Close()
		var h [record.HeaderSizeUpToMagic]byte
		if _, err := f.ReadAt(h[:], pos); err != nil {
			return 0
		}
		eh, err := record.ParseEntryHeader(h[:], pos)
		if err != nil && !isTruncatedOnly(err) {
			return 0
		}
		if eh.Offset > posOff || eh.Offset < base {
			return 0 // not the batch the entry claims
		}
	}
	return pos
}

// isTruncatedOnly: a 17-byte header read is "truncated" for a v2 batch, which
// is fine here; anything else is not.
func isTruncatedOnly(err error) bool {
	var ce *record.CorruptionError
	return asCorruption(err, &ce) && ce.Err == record.ErrTruncated
}

func siblingIndex(logPath string) string {
	return logPath[:len(logPath)-len(".log")] + ".index"
}

var tsTypeNames = [...]string{"NoTimestampType", "CreateTime", "LogAppendTime"}

func tsTypeName(t record.TimestampType) string { return tsTypeNames[t+1] }

// lastSequence is Kafka's DefaultRecordBatch.incrementSequence(base, delta),
// or -1 when there is no sequence.
func incSequence(base, delta int32) int32 {
	if base < 0 {
		return -1
	}
	if base > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - base) - 1
	}
	return base + delta
}

// batch prints a v2 batch and, in deep mode, its records.
func (ld *logDump) batch(e *entryInfo) {
	d, o := ld.d, ld.d.o
	b := record.Batch(e.entry)
	if !e.valid {
		d.bad = true
	}
	tsType := record.CreateTime
	if b.IsLogAppendTime() {
		tsType = record.LogAppendTimeType
	}
	baseSeq := b.BaseSequence()
	lastSeq := incSequence(baseSeq, b.LastOffsetDelta())
	dh, hasDH := b.DeleteHorizon()
	if d.json {
		o.str(`{"type":"batch","file":`).str(ld.fileJSON).
			str(`,"baseOffset":`).int(e.base).str(`,"lastOffset":`).int(e.last).
			str(`,"count":`).int(int64(b.NumRecords())).str(`,"position":`).int(e.pos).
			str(`,"size":`).int(e.size).str(`,"magic":2,"compresscodec":"`).str(b.Codec().String()).
			str(`","crc":`).uint(uint64(b.CRC())).str(`,"isvalid":`).bool(e.valid).
			str(`,"timestampType":"`).str(tsTypeName(tsType)).str(`","maxTimestamp":`).int(b.MaxTimestamp()).
			str(`,"producerId":`).int(b.ProducerID()).str(`,"producerEpoch":`).int(int64(b.ProducerEpoch())).
			str(`,"baseSequence":`).int(int64(baseSeq)).str(`,"lastSequence":`).int(int64(lastSeq)).
			str(`,"partitionLeaderEpoch":`).int(int64(b.PartitionLeaderEpoch())).
			str(`,"isTransactional":`).bool(b.IsTransactional()).str(`,"isControl":`).bool(b.IsControl()).
			str(`,"deleteHorizonMs":`)
		if hasDH {
			o.int(dh)
		} else {
			o.str("null")
		}
		o.str("}").line()
	} else {
		o.str("baseOffset: ").int(e.base).str(" lastOffset: ").int(e.last).
			str(" count: ").int(int64(b.NumRecords())).
			str(" baseSequence: ").int(int64(baseSeq)).str(" lastSequence: ").int(int64(lastSeq)).
			str(" producerId: ").int(b.ProducerID()).str(" producerEpoch: ").int(int64(b.ProducerEpoch())).
			str(" partitionLeaderEpoch: ").int(int64(b.PartitionLeaderEpoch())).
			str(" isTransactional: ").bool(b.IsTransactional()).str(" isControl: ").bool(b.IsControl()).
			str(" deleteHorizonMs: ")
		if hasDH {
			o.str("OptionalLong[").int(dh).str("]")
		} else {
			o.str("OptionalLong.empty")
		}
		o.str(" position: ").int(e.pos).str(" ").str(tsTypeName(tsType)).str(": ").int(b.MaxTimestamp()).
			str(" size: ").int(e.size).str(" magic: 2 compresscodec: ").str(b.Codec().String()).
			str(" crc: ").uint(uint64(b.CRC())).str(" isvalid: ").bool(e.valid).line()
	}
	if !e.valid {
		d.problem(problem{file: ld.file, pos: e.pos, offset: e.base, kind: kindOf(e.err), message: detail(e.err)})
	}
	if !d.deep {
		return
	}
	rr := &ld.rr
	rr.Reset(b, e.pos)
	control := b.IsControl()
	for {
		r, ok := rr.Next()
		if !ok {
			break
		}
		if r.Offset < d.from || r.Offset >= d.to {
			continue
		}
		ld.gap(r.Offset)
		seq := int32(-1)
		if baseSeq >= 0 {
			seq = incSequence(baseSeq, int32(r.Offset-e.base))
		}
		ld.record(&r, tsType, seq, control)
	}
	if err := rr.Err(); err != nil {
		d.problem(problem{file: ld.file, pos: e.pos, offset: e.base, kind: kindBadRecords, message: detail(err)})
	}
}

func kindOf(err error) string {
	var ce *record.CorruptionError
	if asCorruption(err, &ce) && ce.Err == record.ErrCRC {
		return kindCRC
	}
	return kindCorruptEntry
}

// gap notes a non-consecutive record offset (stderr at the end of the file).
func (ld *logDump) gap(off int64) {
	if ld.prevOff >= 0 && off != ld.prevOff+1 {
		ld.gaps++
		if ld.gaps <= gapReportLimit {
			ld.gapText = fmt.Appendf(ld.gapText, "  %d is followed by %d\n", ld.prevOff, off)
		}
	}
	ld.prevOff = off
}

func lenOrNull(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

// record prints one v2 record line (the hot path of a deep dump).
func (ld *logDump) record(r *record.Record, tsType record.TimestampType, seq int32, control bool) {
	d, o := ld.d, ld.d.o
	if d.json {
		o.str(`{"type":"record","file":`).str(ld.fileJSON).str(`,"offset":`).int(r.Offset).
			str(`,"timestamp":`).int(r.Timestamp).str(`,"timestampType":"`).str(tsTypeName(tsType)).
			str(`","keySize":`).int(lenOrNull(r.Key)).str(`,"valueSize":`).int(lenOrNull(r.Value)).
			str(`,"sequence":`).int(int64(seq)).str(`,"headerKeys":[`)
		for i := range r.Headers {
			if i > 0 {
				o.str(",")
			}
			o.jstr(r.Headers[i].Key)
		}
		o.str("]")
		if control {
			ld.controlJSON(r)
		} else if k, v, ok := ld.offsets(r); ok {
			o.str(`,"key":`)
			o.buf = append(o.buf, k...)
			o.str(`,"payload":`)
			if v == nil {
				o.str("null")
			} else {
				o.buf = append(o.buf, v...)
			}
		} else if d.printData {
			o.str(`,"key":`).jdata(r.Key, d.enc, &d.scratch).str(`,"payload":`).jdata(r.Value, d.enc, &d.scratch)
		}
		o.str("}").line()
		return
	}
	o.str("| offset: ").int(r.Offset).str(" ").str(tsTypeName(tsType)).str(": ").int(r.Timestamp).
		str(" keySize: ").int(lenOrNull(r.Key)).str(" valueSize: ").int(lenOrNull(r.Value)).
		str(" sequence: ").int(int64(seq)).str(" headerKeys: [")
	for i := range r.Headers {
		if i > 0 {
			o.str(",")
		}
		o.str(r.Headers[i].Key)
	}
	o.str("]")
	if control {
		ld.controlText(r)
	} else if k, v, ok := ld.offsets(r); ok {
		o.str(" key: ")
		o.buf = append(o.buf, k...)
		if v != nil {
			o.str(" payload: ")
			o.buf = append(o.buf, v...)
		}
	} else if d.printData {
		ld.keyPayload(r.Key, r.Value)
	}
	o.line()
}

// offsets decodes a __consumer_offsets record with --offsets-decoder.
func (ld *logDump) offsets(r *record.Record) (k, v []byte, ok bool) {
	if !ld.d.offsetsDecoder {
		return nil, nil, false
	}
	return decodeOffsetsRecord(r.Key, r.Value)
}

// keyPayload appends " key: K payload: V" (each only when not null).
func (ld *logDump) keyPayload(k, v []byte) {
	o := ld.d.o
	if k != nil {
		o.str(" key: ")
		o.buf = appendData(o.buf, k, ld.d.enc)
	}
	if v != nil {
		o.str(" payload: ")
		o.buf = appendData(o.buf, v, ld.d.enc)
	}
}

func (ld *logDump) controlText(r *record.Record) {
	o := ld.d.o
	_, t, err := record.ParseControlKey(r.Key)
	if err != nil {
		o.str(" controlType: unknown (").str(err.Error()).str(")")
		return
	}
	if t == record.ControlAbort || t == record.ControlCommit {
		m, err := record.ParseEndTxnMarker(r.Value)
		if err == nil {
			o.str(" endTxnMarker: ").str(t.String()).str(" coordinatorEpoch: ").int(int64(m.CoordinatorEpoch))
			return
		}
	}
	o.str(" controlType: ").str(t.String())
}

func (ld *logDump) controlJSON(r *record.Record) {
	o := ld.d.o
	_, t, err := record.ParseControlKey(r.Key)
	if err != nil {
		o.str(`,"controlType":null`)
		return
	}
	if t == record.ControlAbort || t == record.ControlCommit {
		if m, err := record.ParseEndTxnMarker(r.Value); err == nil {
			o.str(`,"endTxnMarker":"`).str(t.String()).str(`","coordinatorEpoch":`).int(int64(m.CoordinatorEpoch))
			return
		}
	}
	o.str(`,"controlType":"`).str(t.String()).str(`"`)
}

// legacy prints a v0/v1 entry (a message or a compressed wrapper) and, in
// deep mode, its messages. It returns false once past the --offsets range.
func (ld *logDump) legacy(e *entryInfo) bool {
	d, o := ld.d, ld.d.o
	var msgs []record.LegacyMessage
	derr := record.DecodeLegacy(e.entry, e.pos, func(m record.LegacyMessage) error {
		msgs = append(msgs, m) // keys and values alias e.entry or a fresh buffer
		return nil
	})
	base := e.last
	if len(msgs) > 0 {
		base = msgs[0].Offset
	}
	if base >= d.to {
		return false
	}
	magic := e.entry[16]
	attrs := e.entry[17]
	codec := record.Codec(attrs & 7)
	crc := binary.BigEndian.Uint32(e.entry[12:])
	tsType, ts := record.NoTimestampType, int64(-1)
	if magic == 1 {
		ts = int64(binary.BigEndian.Uint64(e.entry[18:]))
		tsType = record.CreateTime
		if attrs&0x08 != 0 {
			tsType = record.LogAppendTimeType
		}
	}
	valid := e.valid
	if !valid {
		d.bad = true
	}
	if d.json {
		o.str(`{"type":"batch","file":`).str(ld.fileJSON).
			str(`,"baseOffset":`).int(base).str(`,"lastOffset":`).int(e.last).
			str(`,"count":`).int(int64(len(msgs))).str(`,"position":`).int(e.pos).
			str(`,"size":`).int(e.size).str(`,"magic":`).int(int64(magic)).str(`,"compresscodec":"`).str(codec.String()).
			str(`","crc":`).uint(uint64(crc)).str(`,"isvalid":`).bool(valid).
			str(`,"timestampType":"`).str(tsTypeName(tsType)).str(`","maxTimestamp":`).int(ts).
			str(`,"producerId":-1,"producerEpoch":-1,"baseSequence":-1,"lastSequence":-1,"partitionLeaderEpoch":-1,"isTransactional":false,"isControl":false,"deleteHorizonMs":null}`).line()
	} else {
		o.str("offset: ").int(e.last).str(" position: ").int(e.pos).str(" ").str(tsTypeName(tsType)).str(": ").int(ts).
			str(" size: ").int(e.size).str(" magic: ").int(int64(magic)).str(" compresscodec: ").str(codec.String()).
			str(" crc: ").uint(uint64(crc)).str(" isvalid: ").bool(valid).line()
	}
	if !valid {
		d.problem(problem{file: ld.file, pos: e.pos, offset: e.last, kind: kindOf(e.err), message: detail(e.err)})
	}
	if d.deep {
		for i := range msgs {
			m := &msgs[i]
			if m.Offset < d.from || m.Offset >= d.to {
				continue
			}
			ld.gap(m.Offset)
			if d.json {
				o.str(`{"type":"record","file":`).str(ld.fileJSON).str(`,"offset":`).int(m.Offset).
					str(`,"timestamp":`).int(m.Timestamp).str(`,"timestampType":"`).str(tsTypeName(m.TimestampType)).
					str(`","keySize":`).int(lenOrNull(m.Key)).str(`,"valueSize":`).int(lenOrNull(m.Value)).
					str(`,"sequence":-1,"headerKeys":[],"magic":`).int(int64(m.Magic)).
					str(`,"crc":`).uint(uint64(m.CRC)).str(`,"isvalid":`).bool(m.Valid)
				if d.printData {
					o.str(`,"key":`).jdata(m.Key, d.enc, &d.scratch).str(`,"payload":`).jdata(m.Value, d.enc, &d.scratch)
				}
				o.str("}").line()
				continue
			}
			o.str("| offset: ").int(m.Offset).str(" ").str(tsTypeName(m.TimestampType)).str(": ").int(m.Timestamp).
				str(" keySize: ").int(lenOrNull(m.Key)).str(" valueSize: ").int(lenOrNull(m.Value)).
				str(" magic: ").int(int64(m.Magic)).str(" crc: ").uint(uint64(m.CRC)).str(" isvalid: ").bool(m.Valid)
			if d.printData {
				ld.keyPayload(m.Key, m.Value)
			}
			o.line()
		}
	}
	if derr != nil && (valid || !isCRC(derr)) {
		d.problem(problem{file: ld.file, pos: e.pos, offset: e.last, kind: kindOf(derr), message: detail(derr)})
	}
	return true
}

func isCRC(err error) bool { return kindOf(err) == kindCRC }

func asCorruption(err error, target **record.CorruptionError) bool { return errors.As(err, target) }
