package producer

import (
	"encoding/binary"
	"fmt"
)

// TxnEntrySize is the size of one .txnindex entry (Kafka's AbortedTxn):
// int16 version (0), int64 producer id, int64 first offset, int64 last
// offset (the abort marker's), int64 last stable offset at the abort.
const TxnEntrySize = 34

// AbortedTxn is one entry of a segment's aborted-transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AppendAbortedTxn appends a's .txnindex entry to dst.
func AppendAbortedTxn(dst []byte, a AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.LastStableOffset))
}

// DecodeTxnIndex parses a segment's .txnindex, checking it as Kafka's
// sanity check does and more: whole entries of version 0, each with
// first <= last offset and last offset within [base, next) of its segment,
// in marker order. Damage is ErrBadTxnIndex.
func DecodeTxnIndex(b []byte, base, next int64) ([]AbortedTxn, error) {
	if len(b)%TxnEntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte entries", ErrBadTxnIndex, len(b), TxnEntrySize)
	}
	out := make([]AbortedTxn, 0, len(b)/TxnEntrySize)
	for p := 0; p < len(b); p += TxnEntrySize {
		if v := int16(binary.BigEndian.Uint16(b[p:])); v != 0 {
			return nil, fmt.Errorf("%w: entry %d has version %d", ErrBadTxnIndex, p/TxnEntrySize, v)
		}
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[p+2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[p+10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[p+18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[p+26:])),
		}
		if a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastOffset < base || a.LastOffset >= next ||
			(len(out) > 0 && a.LastOffset <= out[len(out)-1].LastOffset) {
			return nil, fmt.Errorf("%w: entry %d %+v in a segment of offsets [%d, %d)", ErrBadTxnIndex, p/TxnEntrySize, a, base, next)
		}
		out = append(out, a)
	}
	return out, nil
}
