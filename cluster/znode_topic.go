package cluster

import (
	"fmt"
	"sort"
	"strconv"
)

// TopicAssignmentVersion is the version of /brokers/topics/T strata writes
// (Kafka 2.8+, with topic_id).
const TopicAssignmentVersion = 3

// TopicAssignment is /brokers/topics/T: the replicas of each partition, in
// preference order (the first is the preferred leader), and the replicas
// being added or removed by a reassignment.
//
//	{"removing_replicas":{},"partitions":{"0":[1,2,3]},"topic_id":"<22 chars>","adding_replicas":{},"version":3}
//
// Version 1 has only partitions, version 2 adds adding/removing_replicas,
// version 3 topic_id; absent keys decode as empty. Encode writes version 3
// (topic_id omitted while TopicID is zero, as Kafka does for a topic whose id
// the controller has not backfilled).
type TopicAssignment struct {
	Version    int32             // as decoded; Encode writes TopicAssignmentVersion
	TopicID    [16]byte          // zero: none
	Partitions map[int32][]int32 // partition -> replicas
	Adding     map[int32][]int32 // partition -> replicas being added (only partitions being reassigned)
	Removing   map[int32][]int32 // partition -> replicas being removed
}

// Encode returns the assignment's JSON (version 3), partitions in numeric
// order.
func (a *TopicAssignment) Encode() []byte {
	w := &jsonWriter{b: make([]byte, 0, 64+16*len(a.Partitions))}
	w.open('{')
	writePartitionMap(w, "removing_replicas", a.Removing)
	writePartitionMap(w, "partitions", a.Partitions)
	if a.TopicID != ([16]byte{}) {
		w.string("topic_id", UUIDString(a.TopicID))
	}
	writePartitionMap(w, "adding_replicas", a.Adding)
	w.int("version", TopicAssignmentVersion)
	w.close('}')
	return w.b
}

func writePartitionMap(w *jsonWriter, key string, m map[int32][]int32) {
	w.openObject(key)
	for _, p := range sortedPartitions(m) {
		if m[p] == nil && key != "partitions" {
			continue
		}
		w.int32s(strconv.FormatInt(int64(p), 10), m[p])
	}
	w.close('}')
}

func sortedPartitions(m map[int32][]int32) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// DecodeTopicAssignment decodes topic's assignment. Partition keys must be
// non-negative decimals and replica lists integer arrays; adding/removing
// entries of partitions not in "partitions" are dropped (Kafka reads them
// only for listed partitions); a missing version reads as 0, since Kafka does
// not read it. It does not check the assignment is sensible: that is Check's
// job.
func DecodeTopicAssignment(topic string, data []byte) (TopicAssignment, error) {
	o := parseObj(TopicPath(topic), data)
	a := TopicAssignment{}
	a.Version, _ = o.int32("version", false) // Kafka does not read it
	if id, ok := o.str("topic_id", false); ok {
		u, err := ParseUUID(id)
		if err != nil {
			o.fail("topic_id: %v", err)
		}
		a.TopicID = u
	}
	a.Partitions = decodePartitionMap(o, "partitions", nil)
	a.Adding = decodePartitionMap(o, "adding_replicas", a.Partitions)
	a.Removing = decodePartitionMap(o, "removing_replicas", a.Partitions)
	if o.err != nil {
		return TopicAssignment{}, o.err
	}
	return a, nil
}

func decodePartitionMap(o *jsonObj, key string, only map[int32][]int32) map[int32][]int32 {
	m := map[int32][]int32{}
	sub, ok := o.obj(key, false)
	if !ok {
		return m
	}
	for _, k := range sub.keys() {
		p, err := parseDecimal(k, 32)
		if err != nil {
			o.fail("%s: partition %q is not a partition id", key, k)
			return m
		}
		rs, ok := sub.int32s(k, true)
		o.merge(sub)
		if !ok {
			return m
		}
		if only != nil {
			if _, listed := only[int32(p)]; !listed {
				continue
			}
		}
		m[int32(p)] = rs
	}
	return m
}

// Check reports what makes an assignment unusable: no partitions, partition
// ids not 0..n-1, a partition without replicas, a negative or repeated
// replica id, adding/removing replicas not among the partition's replicas.
func (a *TopicAssignment) Check() error {
	if len(a.Partitions) == 0 {
		return fmt.Errorf("no partitions")
	}
	for p := int32(0); p < int32(len(a.Partitions)); p++ {
		rs, ok := a.Partitions[p]
		if !ok {
			return fmt.Errorf("partitions are not 0..%d: %d missing", len(a.Partitions)-1, p)
		}
		if err := checkReplicas(rs); err != nil {
			return fmt.Errorf("partition %d: %v", p, err)
		}
		for _, r := range a.Adding[p] {
			if !containsInt32(rs, r) {
				return fmt.Errorf("partition %d: adding replica %d not among replicas %v", p, r, rs)
			}
		}
		for _, r := range a.Removing[p] {
			if !containsInt32(rs, r) {
				return fmt.Errorf("partition %d: removing replica %d not among replicas %v", p, r, rs)
			}
		}
	}
	return nil
}

func checkReplicas(rs []int32) error {
	if len(rs) == 0 {
		return fmt.Errorf("no replicas")
	}
	for i, r := range rs {
		if r < 0 {
			return fmt.Errorf("negative replica id %d", r)
		}
		if containsInt32(rs[:i], r) {
			return fmt.Errorf("replica %d listed twice", r)
		}
	}
	return nil
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Leader recovery states (KIP-704).
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// PartitionState (controller_types.go) is /brokers/topics/T/partitions/P/state.
// Its znode version is the partition epoch (zkVersion), not part of the JSON.
//
//	{"controller_epoch":5,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2,3]}
//
// leader_recovery_state is written only when not 0 (recovered), as Kafka 3.2+.

// Encode returns the state's JSON.
func (s *PartitionState) Encode() []byte { return s.AppendJSON(make([]byte, 0, 96)) }

// AppendJSON appends the state's JSON to dst (no allocation when dst has
// room: the controller writes thousands at a failover).
func (s *PartitionState) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"controller_epoch":`...)
	dst = strconv.AppendInt(dst, int64(s.ControllerEpoch), 10)
	dst = append(dst, `,"leader":`...)
	dst = strconv.AppendInt(dst, int64(s.Leader), 10)
	dst = append(dst, `,"version":1,"leader_epoch":`...)
	dst = strconv.AppendInt(dst, int64(s.LeaderEpoch), 10)
	dst = append(dst, `,"isr":`...)
	dst = appendInt32s(dst, s.ISR)
	if s.LeaderRecoveryState != LeaderRecovered {
		dst = append(dst, `,"leader_recovery_state":`...)
		dst = strconv.AppendInt(dst, int64(s.LeaderRecoveryState), 10)
	}
	return append(dst, '}')
}

// DecodePartitionState decodes topic-partition's state; leader,
// leader_epoch, isr and controller_epoch are required, as in Kafka. Version
// is left 0: it is the znode's, the caller sets it from the stat.
func DecodePartitionState(topic string, partition int32, data []byte) (PartitionState, error) {
	o := parseObj(PartitionStatePath(topic, partition), data)
	var s PartitionState
	s.Leader, _ = o.int32("leader", true)
	s.LeaderEpoch, _ = o.int32("leader_epoch", true)
	s.ISR, _ = o.int32s("isr", true)
	s.ControllerEpoch, _ = o.int32("controller_epoch", true)
	if rs, ok := o.int32("leader_recovery_state", false); ok {
		if rs != int32(LeaderRecovered) && rs != int32(LeaderRecovering) {
			o.fail("leader_recovery_state %d: want 0 or 1", rs)
		}
		s.LeaderRecoveryState = int8(rs)
	}
	if o.err == nil && s.Leader < -2 {
		o.fail("leader %d", s.Leader)
	}
	if o.err != nil {
		return PartitionState{}, o.err
	}
	return s, nil
}
