package producer

import (
	"math"

	"github.com/stratalog/strata/record"
)

// Kafka's "none" values in a batch header.
const (
	NoProducerID = -1
	NoEpoch      = -1
	NoSequence   = -1
)

// Batch is what producer state needs of one appended v2 batch.
type Batch struct {
	ProducerID    int64
	Epoch         int16
	FirstSeq      int32 // NoSequence for a coordinator's batch or a marker
	LastSeq       int32
	FirstOffset   int64
	LastOffset    int64
	MaxTimestamp  int64
	Transactional bool
	Control       bool
	// Marker is the control type of a control batch (ControlCommit or
	// ControlAbort for the end of a transaction), with the coordinator
	// epoch of its end-transaction marker.
	Marker           record.ControlType
	CoordinatorEpoch int32
}

// IsMarker reports whether b ends a transaction.
func (b *Batch) IsMarker() bool {
	return b.Control && (b.Marker == record.ControlCommit || b.Marker == record.ControlAbort)
}

// lastSeqOf is Kafka's sequence arithmetic: sequences wrap from MaxInt32
// to 0.
func lastSeqOf(first int32, delta int32) int32 {
	if first == NoSequence {
		return NoSequence
	}
	if int64(first)+int64(delta) > math.MaxInt32 {
		return int32(int64(first) + int64(delta) - math.MaxInt32 - 1)
	}
	return first + delta
}

// firstSeqOf undoes lastSeqOf.
func firstSeqOf(last int32, delta int32) int32 {
	if last == NoSequence {
		return NoSequence
	}
	if int64(last)-int64(delta) < 0 {
		return int32(int64(last) - int64(delta) + math.MaxInt32 + 1)
	}
	return last - delta
}

// inSequence reports whether next follows last.
func inSequence(last, next int32) bool {
	return next == last+1 || (next == 0 && last == math.MaxInt32)
}

// BatchOf reads the producer fields of b, a whole v2 batch whose offsets
// are assigned. ok is false for a batch without a producer id (nothing to
// track). A control batch's first record is read for its type; a control
// batch whose record does not parse is reported with Marker
// ControlUnknown. It allocates only for control batches.
func BatchOf(b record.Batch) (Batch, bool) {
	pid := b.ProducerID()
	if pid < 0 {
		return Batch{}, false
	}
	delta := b.LastOffsetDelta()
	out := Batch{
		ProducerID:    pid,
		Epoch:         b.ProducerEpoch(),
		FirstSeq:      b.BaseSequence(),
		FirstOffset:   b.BaseOffset(),
		LastOffset:    b.BaseOffset() + int64(delta),
		MaxTimestamp:  b.MaxTimestamp(),
		Transactional: b.IsTransactional(),
		Control:       b.IsControl(),
		Marker:        record.ControlUnknown,
	}
	if out.FirstSeq < 0 {
		out.FirstSeq = NoSequence
	}
	out.LastSeq = lastSeqOf(out.FirstSeq, delta)
	if out.Control {
		out.FirstSeq, out.LastSeq = NoSequence, NoSequence
		out.Marker, out.CoordinatorEpoch = controlOf(b)
	}
	return out, true
}

// controlOf reads the control type (and, for an end-transaction marker,
// the coordinator epoch) of a control batch's first record.
func controlOf(b record.Batch) (record.ControlType, int32) {
	recs, err := b.Records(nil)
	if err != nil || len(recs) == 0 {
		return record.ControlUnknown, -1
	}
	_, t, err := record.ParseControlKey(recs[0].Key)
	if err != nil {
		return record.ControlUnknown, -1
	}
	if t != record.ControlAbort && t != record.ControlCommit {
		return t, -1
	}
	m, err := record.ParseEndTxnMarker(recs[0].Value)
	if err != nil {
		return record.ControlUnknown, -1
	}
	return t, m.CoordinatorEpoch
}
