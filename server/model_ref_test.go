package server

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// The in-memory reference of the model test (model_test.go): per partition,
// every acknowledged record at its offset and the log start offset.

// modelRec is one acknowledged record.
type modelRec struct {
	key, value []byte
	headers    []record.Header
	ts         int64
}

// modelPart is one partition: recs[i] is the record at offset i (records
// below start stay, since a fetch may return the batch holding start).
type modelPart struct {
	start int64
	recs  []modelRec
}

func (p *modelPart) end() int64 { return int64(len(p.recs)) }

// modelTopic is one live topic and the produce configs the model predicts
// with.
type modelTopic struct {
	name     string
	parts    []*modelPart
	maxBytes int          // max.message.bytes override, 0: the broker's
	segBytes int          // segment.bytes override, 0: the broker's
	forced   record.Codec // compression.type codec, or -1 for producer
}

// produceCode is the error the broker must answer a produce of batch b to
// mt with, following Kafka's order: the incoming size against
// max.message.bytes, zstd from a Produce below v7, recompression to
// compression.type, the stored size against max.message.bytes again and
// against segment.bytes.
func (mt *modelTopic) produceCode(b record.Batch, version int16) (int16, error) {
	if mt.maxBytes > 0 && len(b) > mt.maxBytes {
		return kerr.MessageTooLarge.Code, nil
	}
	if b.Codec() == record.CodecZstd && version < 7 {
		return kerr.UnsupportedCompressionType.Code, nil
	}
	stored := b
	if mt.forced >= 0 && b.Codec() != mt.forced {
		out, err := b.AppendRecompressed(nil, mt.forced, 0)
		if err != nil {
			return 0, err
		}
		stored = out
	}
	if mt.maxBytes > 0 && len(stored) > mt.maxBytes {
		return kerr.MessageTooLarge.Code, nil
	}
	if mt.segBytes > 0 && len(stored) > mt.segBytes {
		return kerr.RecordListTooLarge.Code, nil
	}
	return 0, nil
}

// placed is a batch of records acknowledged at base.
type placed struct {
	topic string
	part  int32
	base  int64
	recs  []modelRec
}

// apply adds acknowledged batches to the reference, checking that together
// they tile each partition's offsets from its old end, with no gap and no
// overlap (offsets dense and assigned in order).
func (m *model) apply(acked []placed) error {
	byPart := map[*modelPart][]placed{}
	for _, a := range acked {
		mt := m.topics[a.topic]
		if mt == nil || int(a.part) >= len(mt.parts) {
			return fmt.Errorf("acknowledged batch for %s/%d, which the model does not hold", a.topic, a.part)
		}
		p := mt.parts[a.part]
		byPart[p] = append(byPart[p], a)
	}
	for p, as := range byPart {
		n := 0
		for _, a := range as {
			n += len(a.recs)
		}
		slots := make([]*modelRec, n)
		for _, a := range as {
			for i := range a.recs {
				off := a.base + int64(i) - p.end()
				if off < 0 || off >= int64(n) {
					return fmt.Errorf("%s/%d: record acknowledged at offset %d, want offsets in [%d, %d)", a.topic, a.part, a.base+int64(i), p.end(), p.end()+int64(n))
				}
				if slots[off] != nil {
					return fmt.Errorf("%s/%d: offset %d acknowledged twice", a.topic, a.part, a.base+int64(i))
				}
				slots[off] = &a.recs[i]
			}
		}
		for _, r := range slots {
			p.recs = append(p.recs, *r)
		}
	}
	return nil
}

// fetched is one partition of a Fetch response.
type fetched struct {
	topic             string
	part              int32
	version           int16 // of the Fetch sent
	offset            int64 // requested
	code              int16
	hw, lso, logStart int64
	batches           []byte
	hwMin, hwMax      int64 // the high watermark the model allows
	wantCode          int16
	wantStart         int64
}

func fetchedFrom(topic string, version int16, offset int64, p *kmsg.FetchResponseTopicPartition) fetched {
	return fetched{topic: topic, part: p.Partition, version: version, offset: offset, code: p.ErrorCode, hw: p.HighWatermark,
		lso: p.LastStableOffset, logStart: p.LogStartOffset, batches: p.RecordBatches}
}

// splitBatches cuts fetched record bytes into whole batches; a partial batch
// at the end (cut by max bytes) is dropped, as clients do.
func splitBatches(b []byte) []record.Batch {
	var out []record.Batch
	for len(b) >= record.LogOverhead {
		n := int64(binary.BigEndian.Uint32(b[8:12])) + record.LogOverhead
		if n > int64(len(b)) {
			break
		}
		out = append(out, record.Batch(b[:n]))
		b = b[n:]
	}
	return out
}

func sameRec(got *record.Record, want *modelRec) string {
	switch {
	case (got.Key == nil) != (want.key == nil) || !bytes.Equal(got.Key, want.key):
		return fmt.Sprintf("key %q (nil %v), want %q (nil %v)", got.Key, got.Key == nil, want.key, want.key == nil)
	case (got.Value == nil) != (want.value == nil) || !bytes.Equal(got.Value, want.value):
		return fmt.Sprintf("value of %d bytes (nil %v), want %d (nil %v)", len(got.Value), got.Value == nil, len(want.value), want.value == nil)
	case got.Timestamp != want.ts:
		return fmt.Sprintf("timestamp %d, want %d", got.Timestamp, want.ts)
	case len(got.Headers) != len(want.headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.headers))
	}
	for i, h := range got.Headers {
		w := want.headers[i]
		if h.Key != w.Key || (h.Value == nil) != (w.Value == nil) || !bytes.Equal(h.Value, w.Value) {
			return fmt.Sprintf("header %d %q=%q, want %q=%q", i, h.Key, h.Value, w.Key, w.Value)
		}
	}
	return ""
}

// check compares a fetched partition with the reference; it returns the
// offset after the last record returned (f.offset when none).
func (m *model) check(f *fetched) (int64, error) {
	where := fmt.Sprintf("fetch %s/%d at %d", f.topic, f.part, f.offset)
	if f.code != f.wantCode {
		return 0, fmt.Errorf("%s: error %v, want %v", where, kerr.ErrorForCode(f.code), kerr.ErrorForCode(f.wantCode))
	}
	if f.code == kerr.UnknownTopicOrPartition.Code || f.code == kerr.UnsupportedCompressionType.Code {
		if len(f.batches) != 0 {
			return 0, fmt.Errorf("%s: %d record bytes with error %v", where, len(f.batches), kerr.ErrorForCode(f.code))
		}
		return f.offset, nil
	}
	mt := m.topics[f.topic]
	p := mt.parts[f.part]
	if f.version < 5 { // no log start offset in the response
		f.logStart = f.wantStart
	}
	if f.hw < f.hwMin || f.hw > f.hwMax || f.logStart != f.wantStart {
		return 0, fmt.Errorf("%s: high watermark %d (want %d..%d), log start %d (want %d), error %v", where, f.hw, f.hwMin, f.hwMax, f.logStart, f.wantStart, kerr.ErrorForCode(f.code))
	}
	if f.code != 0 {
		if len(f.batches) != 0 {
			return 0, fmt.Errorf("%s: %d record bytes with error %v", where, len(f.batches), kerr.ErrorForCode(f.code))
		}
		return f.offset, nil
	}
	if f.lso != f.hw {
		return 0, fmt.Errorf("%s: last stable offset %d, high watermark %d", where, f.lso, f.hw)
	}
	next := f.offset
	prev := int64(-1)
	var rr []record.Record
	for _, b := range splitBatches(f.batches) {
		if err := b.Validate(0); err != nil { // CRC; Records checks the structure
			return 0, fmt.Errorf("%s: batch at %d: %v", where, b.BaseOffset(), err)
		}
		if mt.forced >= 0 && b.Codec() != mt.forced {
			return 0, fmt.Errorf("%s: batch at %d stored as %v, topic compression.type is %v", where, b.BaseOffset(), b.Codec(), mt.forced)
		}
		var err error
		if rr, err = b.Records(rr[:0]); err != nil {
			return 0, fmt.Errorf("%s: batch at %d: %v", where, b.BaseOffset(), err)
		}
		for i := range rr {
			r := &rr[i]
			switch {
			case prev >= 0 && r.Offset != prev+1:
				return 0, fmt.Errorf("%s: offset %d follows %d", where, r.Offset, prev)
			case r.Offset >= f.hw:
				return 0, fmt.Errorf("%s: record at %d, at or beyond the high watermark %d", where, r.Offset, f.hw)
			case r.Offset >= p.end():
				return 0, fmt.Errorf("%s: record at %d, beyond every acknowledged record (end %d)", where, r.Offset, p.end())
			case r.Offset < 0:
				return 0, fmt.Errorf("%s: record at %d", where, r.Offset)
			}
			if d := sameRec(r, &p.recs[r.Offset]); d != "" {
				return 0, fmt.Errorf("%s: record at %d: %s", where, r.Offset, d)
			}
			prev = r.Offset
			if r.Offset >= f.offset {
				if r.Offset != next {
					return 0, fmt.Errorf("%s: first record at or after the fetch offset is %d, want %d", where, r.Offset, next)
				}
				next++
			}
		}
	}
	if f.offset < f.hw && next == f.offset {
		return 0, fmt.Errorf("%s: no record below the high watermark %d (%d bytes)", where, f.hw, len(f.batches))
	}
	return next, nil
}

// expectFetch fills f's expectations from the reference at rest (no produce
// running).
func (m *model) expectFetch(f *fetched) {
	mt := m.topics[f.topic]
	if mt == nil || f.part < 0 || int(f.part) >= len(mt.parts) {
		f.wantCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	if mt.forced == record.CodecZstd && f.version < 10 {
		f.wantCode = kerr.UnsupportedCompressionType.Code // KIP-110
		return
	}
	p := mt.parts[f.part]
	f.hwMin, f.hwMax, f.wantStart = p.end(), p.end(), p.start
	if f.offset < p.start || f.offset > p.end() {
		f.wantCode = kerr.OffsetOutOfRange.Code
	}
}
