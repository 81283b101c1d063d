package cluster

import "strconv"

// PartitionReplicas is one entry of /admin/reassign_partitions.
type PartitionReplicas struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// EncodeReassignPartitions is /admin/reassign_partitions, the legacy
// (pre-KIP-455) reassignment request:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}
func EncodeReassignPartitions(ps []PartitionReplicas) []byte {
	return encodePartitions(len(ps), func(w *jsonWriter, i int) {
		w.string("topic", ps[i].Topic)
		w.int("partition", int64(ps[i].Partition))
		w.int32s("replicas", ps[i].Replicas)
	})
}

// DecodeReassignPartitions decodes /admin/reassign_partitions.
func DecodeReassignPartitions(data []byte) ([]PartitionReplicas, error) {
	return decodePartitions(ReassignPartitionsPath, data, func(e *jsonObj) (p PartitionReplicas) {
		p.Topic, _ = e.str("topic", true)
		p.Partition, _ = e.int32("partition", true)
		p.Replicas, _ = e.int32s("replicas", true)
		return p
	})
}

// encodePartitionList writes {"version":1,"partitions":[{"topic":"t","partition":0}]},
// the body of /admin/preferred_replica_election and ISR change notifications.
func encodePartitionList(ps []TopicPartition) []byte {
	return encodePartitions(len(ps), func(w *jsonWriter, i int) {
		w.string("topic", ps[i].Topic)
		w.int("partition", int64(ps[i].Partition))
	})
}

func decodePartitionList(path string, data []byte) ([]TopicPartition, error) {
	return decodePartitions(path, data, func(e *jsonObj) (p TopicPartition) {
		p.Topic, _ = e.str("topic", true)
		p.Partition, _ = e.int32("partition", true)
		return p
	})
}

// encodePartitions writes {"version":1,"partitions":[...]} with n entries,
// each's fields written by entry.
func encodePartitions(n int, entry func(w *jsonWriter, i int)) []byte {
	w := &jsonWriter{}
	w.open('{')
	w.int("version", 1)
	w.openArray("partitions")
	for i := range n {
		w.element()
		entry(w, i)
		w.close('}')
	}
	w.close(']')
	w.close('}')
	return w.b
}

// decodePartitions decodes the "partitions" array of the znode at path,
// each entry read by entry; the first error ends it.
func decodePartitions[T any](path string, data []byte, entry func(e *jsonObj) T) ([]T, error) {
	o := parseObj(path, data)
	items, _ := o.array("partitions", true)
	ps := make([]T, 0, len(items))
	for i, raw := range items {
		e := o.sub("partitions["+strconv.Itoa(i)+"]", raw)
		p := entry(e)
		o.merge(e)
		if o.err != nil {
			break
		}
		ps = append(ps, p)
	}
	if o.err != nil {
		return nil, o.err
	}
	return ps, nil
}

// EncodePreferredReplicaElection is /admin/preferred_replica_election:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0}]}
func EncodePreferredReplicaElection(ps []TopicPartition) []byte {
	return encodePartitionList(ps)
}

// DecodePreferredReplicaElection decodes /admin/preferred_replica_election.
func DecodePreferredReplicaElection(data []byte) ([]TopicPartition, error) {
	return decodePartitionList(PreferredReplicaElectionPath, data)
}

// EncodeIsrChange is an /isr_change_notification/isr_change_N notification
// (leaders before inter.broker.protocol 2.7-IV2), same shape as the
// preferred replica election.
func EncodeIsrChange(ps []TopicPartition) []byte { return encodePartitionList(ps) }

// DecodeIsrChange decodes the ISR change notification at path.
func DecodeIsrChange(path string, data []byte) ([]TopicPartition, error) {
	return decodePartitionList(path, data)
}

// LogDirFailureEvent is the only log dir event: a log dir went offline.
const LogDirFailureEvent = 1

// EncodeLogDirEvent returns a log dir failure notification for broker.
func EncodeLogDirEvent(broker int32) []byte {
	w := &jsonWriter{b: make([]byte, 0, 40)}
	w.open('{')
	w.int("version", 1)
	w.int("broker", int64(broker))
	w.int("event", LogDirFailureEvent)
	w.close('}')
	return w.b
}

// DecodeLogDirEvent decodes the /log_dir_event_notification/log_dir_event_N
// notification at path ({"version":1,"broker":3,"event":1}) and returns
// its broker; like Kafka it reads nothing else (the only event is a
// failure).
func DecodeLogDirEvent(path string, data []byte) (int32, error) {
	o := parseObj(path, data)
	b, _ := o.int32("broker", true)
	if o.err != nil {
		return 0, o.err
	}
	return b, nil
}

// ProducerIDBlockSize is the number of producer ids a broker takes at once.
const ProducerIDBlockSize = 1000

// ProducerIDBlock is /latest_producer_id_block: the last block of producer
// ids handed out, bounds inclusive, written as decimal strings.
//
//	{"version":1,"broker":2,"block_start":"0","block_end":"999"}
type ProducerIDBlock struct {
	Broker int32
	Start  int64
	End    int64
}

// Encode returns the block's JSON.
func (b ProducerIDBlock) Encode() []byte {
	w := &jsonWriter{b: make([]byte, 0, 80)}
	w.open('{')
	w.int("version", 1)
	w.int("broker", int64(b.Broker))
	w.decimal("block_start", b.Start)
	w.decimal("block_end", b.End)
	w.close('}')
	return w.b
}

// DecodeProducerIDBlock decodes /latest_producer_id_block; empty data is no
// block yet (the znode is created empty).
func DecodeProducerIDBlock(data []byte) (ProducerIDBlock, bool, error) {
	if len(data) == 0 {
		return ProducerIDBlock{}, false, nil
	}
	o := parseObj(ProducerIDBlockPath, data)
	var b ProducerIDBlock
	b.Broker, _ = o.int32("broker", true)
	b.Start, _ = o.decimalString("block_start", true, false)
	b.End, _ = o.decimalString("block_end", true, false)
	if o.err == nil && (b.Start < 0 || b.End < b.Start) {
		o.fail("block [%d, %d]", b.Start, b.End)
	}
	if o.err != nil {
		return ProducerIDBlock{}, false, o.err
	}
	return b, true, nil
}

// Feature znode statuses (KIP-584).
const (
	FeatureDisabled int32 = 0
	FeatureEnabled  int32 = 1
)

// FeatureZNode is /feature: the cluster's finalized feature versions.
//
//	{"version":1,"status":1,"features":{}}
//
// A feature is {"min_version_level":a,"max_version_level":b}; version 2
// (Kafka 3.3+) drops min_version_level, which then reads as 1.
type FeatureZNode struct {
	Version  int32
	Status   int32
	Features map[string]VersionRange
}

// Encode returns the znode's JSON (version 1).
func (f *FeatureZNode) Encode() []byte {
	w := &jsonWriter{}
	w.open('{')
	w.int("version", 1)
	w.int("status", int64(f.Status))
	w.openObject("features")
	for _, name := range sortedKeys(f.Features) {
		r := f.Features[name]
		w.openObject(name)
		w.int("min_version_level", int64(r.Min))
		w.int("max_version_level", int64(r.Max))
		w.close('}')
	}
	w.close('}')
	w.close('}')
	return w.b
}

// DecodeFeatureZNode decodes /feature; version, status and features are
// required, as in Kafka.
func DecodeFeatureZNode(data []byte) (FeatureZNode, error) {
	o := parseObj(FeaturePath, data)
	var f FeatureZNode
	f.Version, _ = o.int32("version", true)
	f.Status, _ = o.int32("status", true)
	if o.err == nil && f.Version < 1 {
		o.fail("unsupported version %d", f.Version)
	}
	if o.err == nil && f.Status != FeatureDisabled && f.Status != FeatureEnabled {
		o.fail("status %d: want 0 or 1", f.Status)
	}
	if fs, ok := o.obj("features", true); ok {
		// version 2 has no min_version_level: it reads as 1
		f.Features = decodeVersionRanges(fs, "min_version_level", "max_version_level", f.Version < 2, 1)
		o.merge(fs)
	}
	if o.err != nil {
		return FeatureZNode{}, o.err
	}
	return f, nil
}
