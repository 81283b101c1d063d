package txn

import (
	"slices"
	"strings"
)

// Partition is a topic partition taking part in a transaction.
type Partition struct {
	Topic     string
	Partition int32
}

func comparePartitions(a, b Partition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// Metadata is one transactional id's state: what a __transaction_state
// value holds, plus the previous producer id and epoch the coordinator
// keeps in memory to answer a producer's retried InitProducerId (KIP-360).
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// LastProducerID and LastProducerEpoch are the producer id and epoch
	// before the last bump (-1 when none).
	LastProducerID    int64
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	// Partitions are the partitions of the transaction in flight, sorted.
	Partitions []Partition
	// StartMs is when the transaction in flight began (-1 when none),
	// UpdateMs the time of the last change.
	StartMs, UpdateMs int64
}

// clone returns a deep copy of m.
func (m *Metadata) clone() *Metadata {
	c := *m
	c.Partitions = slices.Clone(m.Partitions)
	return &c
}

// hasAll reports whether every partition of ps is already in m.
func (m *Metadata) hasAll(ps []Partition) bool {
	for _, p := range ps {
		if _, ok := slices.BinarySearchFunc(m.Partitions, p, comparePartitions); !ok {
			return false
		}
	}
	return true
}

// addPartitions adds ps to m, keeping m.Partitions sorted and unique.
func (m *Metadata) addPartitions(ps []Partition) {
	for _, p := range ps {
		if i, ok := slices.BinarySearchFunc(m.Partitions, p, comparePartitions); !ok {
			m.Partitions = slices.Insert(m.Partitions, i, p)
		}
	}
}

// maxEpoch is the last epoch a producer id may use: Kafka bumps to a new
// producer id once the epoch would reach Short.MaxValue (which the clients
// treat as exhausted).
const maxEpoch = 32767 - 1

// epochExhausted reports whether m's epoch cannot be bumped again.
func (m *Metadata) epochExhausted() bool { return m.ProducerEpoch >= maxEpoch }
