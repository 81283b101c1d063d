package producer

import (
	"encoding/binary"
	"fmt"

	"github.com/stratalog/strata/record"
)

// Kafka's producer snapshot (ProducerStateManager, version 1): int16
// version, uint32 CRC-32C of everything after the CRC field, int32 count,
// then count entries of 46 bytes each.
const (
	SnapshotVersion    = 1
	snapshotHeaderSize = 10
	snapshotEntrySize  = 46
)

// SnapshotEntry is one producer as a snapshot records it: its last batch.
type SnapshotEntry struct {
	ProducerID       int64
	Epoch            int16
	LastSequence     int32
	LastOffset       int64
	OffsetDelta      int32
	Timestamp        int64
	CoordinatorEpoch int32
	TxnFirstOffset   int64
}

// SnapshotEntries returns the state's producers as a snapshot records them,
// sorted by producer id.
func (s *State) SnapshotEntries() []SnapshotEntry {
	es := s.Entries()
	out := make([]SnapshotEntry, len(es))
	for i := range es {
		e := &es[i]
		se := SnapshotEntry{ProducerID: e.ID, Epoch: e.Epoch, LastSequence: NoSequence, LastOffset: -1,
			Timestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch, TxnFirstOffset: e.TxnFirstOffset}
		if e.n > 0 {
			m := e.batches[e.n-1]
			se.LastSequence, se.LastOffset, se.OffsetDelta = m.LastSeq, m.LastOffset, int32(m.LastOffset-m.FirstOffset)
		}
		out[i] = se
	}
	return out
}

// EncodeSnapshot returns the snapshot file's bytes for entries.
func EncodeSnapshot(entries []SnapshotEntry) []byte {
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+snapshotEntrySize*len(entries))
	binary.BigEndian.PutUint16(b, SnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.LastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.OffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.TxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], record.CRC32C(b[6:]))
	return b
}

// DecodeSnapshot parses a snapshot file, checking its version, length and
// CRC. Damage is ErrBadSnapshot.
func DecodeSnapshot(b []byte) ([]SnapshotEntry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, the header needs %d", ErrBadSnapshot, len(b), snapshotHeaderSize)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d", ErrBadSnapshot, v)
	}
	if crc, want := record.CRC32C(b[6:]), binary.BigEndian.Uint32(b[2:]); crc != want {
		return nil, fmt.Errorf("%w: CRC is %#x, file says %#x", ErrBadSnapshot, crc, want)
	}
	n := int64(int32(binary.BigEndian.Uint32(b[6:])))
	if n < 0 || int64(len(b)) != snapshotHeaderSize+n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrBadSnapshot, n, len(b))
	}
	out := make([]SnapshotEntry, n)
	p := b[snapshotHeaderSize:]
	for i := range out {
		out[i] = SnapshotEntry{
			ProducerID:       int64(binary.BigEndian.Uint64(p)),
			Epoch:            int16(binary.BigEndian.Uint16(p[8:])),
			LastSequence:     int32(binary.BigEndian.Uint32(p[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(p[14:])),
			OffsetDelta:      int32(binary.BigEndian.Uint32(p[22:])),
			Timestamp:        int64(binary.BigEndian.Uint64(p[26:])),
			CoordinatorEpoch: int32(binary.BigEndian.Uint32(p[34:])),
			TxnFirstOffset:   int64(binary.BigEndian.Uint64(p[38:])),
		}
		p = p[snapshotEntrySize:]
	}
	return out, nil
}

// LoadSnapshot returns the state a snapshot taken at end recorded.
// Entries must be valid: a producer id below 0, an offset delta below 0,
// or a last offset or transaction start at or above end is ErrBadSnapshot.
func LoadSnapshot(entries []SnapshotEntry, end, expirationMs int64) (*State, error) {
	s := NewState(end, expirationMs)
	for _, se := range entries {
		if se.ProducerID < 0 || se.OffsetDelta < 0 || se.LastOffset >= end || se.TxnFirstOffset >= end ||
			(se.LastOffset >= 0 && se.LastOffset-int64(se.OffsetDelta) < 0) {
			return nil, fmt.Errorf("%w: entry %+v at snapshot offset %d", ErrBadSnapshot, se, end)
		}
		if _, dup := s.producers[se.ProducerID]; dup {
			return nil, fmt.Errorf("%w: producer %d twice", ErrBadSnapshot, se.ProducerID)
		}
		e := &Entry{ID: se.ProducerID, Epoch: se.Epoch, CoordinatorEpoch: se.CoordinatorEpoch,
			TxnFirstOffset: max(se.TxnFirstOffset, -1), LastTimestamp: se.Timestamp}
		if se.LastOffset >= 0 && se.LastSequence >= 0 {
			e.addBatch(BatchMeta{FirstSeq: firstSeqOf(se.LastSequence, se.OffsetDelta), LastSeq: se.LastSequence,
				FirstOffset: se.LastOffset - int64(se.OffsetDelta), LastOffset: se.LastOffset, Timestamp: se.Timestamp})
		}
		s.producers[se.ProducerID] = e
		if e.TxnFirstOffset >= 0 {
			s.ongoing[e.ID] = e.TxnFirstOffset
		}
	}
	return s, nil
}
