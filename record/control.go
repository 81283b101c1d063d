package record

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// ControlType is the type in a control record's key (int16 version, int16
// type).
type ControlType int16

const (
	ControlUnknown        ControlType = -1
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
)

var controlNames = [...]string{"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER",
	"SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"}

// String returns Kafka's name for the type, or UNKNOWN(n).
func (t ControlType) String() string {
	if t >= 0 && int(t) < len(controlNames) {
		return controlNames[t]
	}
	return "UNKNOWN(" + strconv.Itoa(int(t)) + ")"
}

// ControlKeySize is the size of a version-0 control record key.
const ControlKeySize = 4

// AppendControlKey appends a version-0 control record key of type t.
func AppendControlKey(dst []byte, t ControlType) []byte {
	return binary.BigEndian.AppendUint16(append(dst, 0, 0), uint16(t))
}

// ParseControlKey decodes a control record key. Like Kafka it accepts
// versions above 0 (reading the type the same way) and reports a type it
// does not know as is; callers compare against the constants.
func ParseControlKey(key []byte) (version int16, t ControlType, err error) {
	if len(key) < ControlKeySize {
		return 0, ControlUnknown, fmt.Errorf("%w: control record key of %d bytes", ErrBadRecord, len(key))
	}
	return int16(binary.BigEndian.Uint16(key)), ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// EndTxnMarker is the value of an ABORT or COMMIT control record.
type EndTxnMarker struct {
	Version          int16
	CoordinatorEpoch int32
}

// EndTxnMarkerSize is the size of a version-0 end-transaction marker value.
const EndTxnMarkerSize = 6

// AppendEndTxnMarker appends m as a control record value.
func AppendEndTxnMarker(dst []byte, m EndTxnMarker) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.Version))
	return binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
}

// ParseEndTxnMarker decodes an end-transaction marker value; extra bytes of
// later versions are ignored.
func ParseEndTxnMarker(value []byte) (EndTxnMarker, error) {
	if len(value) < EndTxnMarkerSize {
		return EndTxnMarker{}, fmt.Errorf("%w: end transaction marker of %d bytes", ErrBadRecord, len(value))
	}
	return EndTxnMarker{
		Version:          int16(binary.BigEndian.Uint16(value)),
		CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:])),
	}, nil
}

// AppendEndTxnBatch appends a control batch holding one ABORT or COMMIT
// marker, as a transaction coordinator writes it. opts supplies the offset,
// producer id and epoch; Control and Transactional are forced on.
func AppendEndTxnBatch(dst []byte, opts BatchOptions, commit bool, coordinatorEpoch int32, timestamp int64) ([]byte, error) {
	t := ControlAbort
	if commit {
		t = ControlCommit
	}
	var kv [ControlKeySize + EndTxnMarkerSize]byte
	k := AppendControlKey(kv[:0], t)
	v := AppendEndTxnMarker(kv[ControlKeySize:ControlKeySize], EndTxnMarker{CoordinatorEpoch: coordinatorEpoch})
	opts.Control, opts.Transactional = true, true
	recs := [1]Record{{Offset: opts.BaseOffset, Timestamp: timestamp, Key: k, Value: v}}
	return AppendBatch(dst, opts, recs[:])
}
