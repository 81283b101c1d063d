package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record formats of __transaction_state (Kafka's TransactionLogKey and
// TransactionLogValue; franz-go kmsg is the codec):
//
//	key   = int16 version (0) | string transactional_id
//	value = int16 version | int64 producer_id | int16 producer_epoch |
//	        int32 transaction_timeout_ms | int8 transaction_status |
//	        nullable array of (string topic | array of int32 partition) |
//	        int64 last_update_timestamp_ms | int64 start_timestamp_ms
//	        [v1+: tagged fields: previous/next producer id, client
//	        transaction version]
//
// strings are int16-length prefixed, arrays int32-count prefixed (v0, the
// version written); v1 is the flexible version Kafka 4 writes for
// transactions version 2, read here too. A transactional id that expired
// is a tombstone (null value).
const (
	keyVersion   = 0
	valueVersion = 0
)

// EncodeKey returns the __transaction_state key of id.
func EncodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = keyVersion
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// DecodeKey returns the transactional id of a __transaction_state key.
func DecodeKey(b []byte) (string, error) {
	k := kmsg.NewTxnMetadataKey()
	if err := k.ReadFrom(b); err != nil {
		return "", fmt.Errorf("%w: key: %w", ErrBadRecord, err)
	}
	if k.Version != keyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrBadRecord, k.Version)
	}
	return k.TransactionalID, nil
}

// EncodeValue returns the __transaction_state value of m (value version 0).
// Kafka writes the partitions only while a transaction is in flight
// (Ongoing, PrepareCommit, PrepareAbort); the completed states store an
// empty list.
func EncodeValue(m *Metadata) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.ProducerID, m.ProducerEpoch, m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp, v.StartTimestamp = m.UpdateMs, m.StartMs
	v.Topics = []kmsg.TxnMetadataValueTopic{}
	for i := 0; i < len(m.Partitions); {
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic = m.Partitions[i].Topic
		for ; i < len(m.Partitions) && m.Partitions[i].Topic == t.Topic; i++ {
			t.Partitions = append(t.Partitions, m.Partitions[i].Partition)
		}
		v.Topics = append(v.Topics, t)
	}
	return v.AppendTo(nil)
}

// DecodeValue decodes a __transaction_state value of id. It checks what
// the coordinator relies on: a known version and state, a producer id and
// epoch in range, partitions only in states that have them.
func DecodeValue(id string, b []byte) (*Metadata, error) {
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: value of %q: %w", ErrBadRecord, id, err)
	}
	m := &Metadata{
		TransactionalID: id, ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch,
		LastProducerID: -1, LastProducerEpoch: -1,
		TimeoutMs: v.TimeoutMillis, State: State(v.State),
		UpdateMs: v.LastUpdateTimestamp, StartMs: v.StartTimestamp,
	}
	switch {
	case v.Version < 0 || v.Version > 1:
		return nil, fmt.Errorf("%w: value of %q: version %d", ErrBadRecord, id, v.Version)
	case !m.State.valid():
		return nil, fmt.Errorf("%w: value of %q: state %d", ErrBadRecord, id, v.State)
	case m.ProducerID < 0 || m.ProducerEpoch < 0:
		return nil, fmt.Errorf("%w: value of %q: producer id %d epoch %d", ErrBadRecord, id, m.ProducerID, m.ProducerEpoch)
	case m.TimeoutMs <= 0:
		return nil, fmt.Errorf("%w: value of %q: timeout %d ms", ErrBadRecord, id, m.TimeoutMs)
	}
	if v.Version >= 1 && v.PreviousProducerID >= 0 {
		m.LastProducerID = v.PreviousProducerID
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			if p < 0 {
				return nil, fmt.Errorf("%w: value of %q: partition %d of %q", ErrBadRecord, id, p, t.Topic)
			}
			m.addPartitions([]Partition{{t.Topic, p}})
		}
	}
	if len(m.Partitions) > 0 && m.State.complete() {
		return nil, fmt.Errorf("%w: value of %q: %d partitions in state %s", ErrBadRecord, id, len(m.Partitions), m.State)
	}
	return m, nil
}
