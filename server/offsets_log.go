package server

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// OffsetsTopic is Kafka's internal topic of committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// Value versions written: OffsetCommitValue v3 (v1 when the commit carries a
// retention time, as Kafka 2.1+), GroupMetadataValue v3 (Kafka 2.3+).
const (
	offsetCommitKeyVersion   = 1
	groupMetadataKeyVersion  = 2
	offsetCommitValueVersion = 3
	groupMetadataVersion     = 3
)

// offsetsPartition is Kafka's partitionFor: abs(groupId.hashCode) % n, with
// Java's String.hashCode over UTF-16 code units and Kafka's Utils.abs
// (MIN_VALUE maps to 0).
func offsetsPartition(group string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// offsetsTopicConfigs are the topic overrides Kafka gives the offsets topic.
func (co *coordinator) offsetsTopicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"segment.bytes":    strconv.FormatInt(co.cfg.OffsetsTopicSegmentBytes, 10),
		"compression.type": "producer",
	}
}

// offsetsPart returns the offsets topic partition holding group, creating
// the topic on first use.
func (co *coordinator) offsetsPart(group string) (*partition, error) {
	p := offsetsPartition(group, int32(len(co.loading)))
	if part := co.s.topics.partition(OffsetsTopic, p); part != nil {
		return part, nil
	}
	if _, err := co.ensureTopic(); err != nil {
		return nil, err
	}
	if part := co.s.topics.partition(OffsetsTopic, p); part != nil {
		return part, nil
	}
	return nil, fmt.Errorf("%w: %s partition %d missing", ErrDataDir, OffsetsTopic, p)
}

// ensureTopic creates the offsets topic unless it exists.
func (co *coordinator) ensureTopic() (*topic, error) {
	co.topicMu.Lock()
	defer co.topicMu.Unlock()
	if t := co.s.topics.get(OffsetsTopic); t != nil {
		return t, nil
	}
	t, err := co.s.topics.create(OffsetsTopic, int32(len(co.loading)), co.offsetsTopicConfigs(), false)
	if errors.Is(err, errTopicExists) {
		return t, nil
	}
	if err != nil {
		co.log.Error("creating the offsets topic", "error", err)
		return nil, err
	}
	co.log.Info("offsets topic created", "partitions", len(co.loading))
	return t, nil
}

var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendRecords writes recs as one batch to group's offsets partition and
// returns once the log holds them (fsync per the topic's flush settings).
func (co *coordinator) appendRecords(group string, recs []record.Record) int16 {
	if co.isClosed() {
		return kerr.CoordinatorNotAvailable.Code
	}
	bp := batchBufs.Get().(*[]byte)
	defer batchBufs.Put(bp)
	opts := record.DefaultBatchOptions()
	opts.LeaderEpoch = 0
	buf, err := record.AppendBatch((*bp)[:0], opts, recs)
	if err != nil {
		co.log.Error("encoding offsets batch", "group", group, "error", err)
		return kerr.UnknownServerError.Code
	}
	*bp = buf[:0]
	if co.s.cl != nil {
		return co.s.cl.appendOffsets(group, buf)
	}
	p, err := co.offsetsPart(group)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if _, err := p.log.Append(buf); err != nil {
		if errors.Is(err, segment.ErrClosed) {
			return kerr.CoordinatorNotAvailable.Code
		}
		co.log.Error("appending to the offsets topic", "group", group, "partition", p.index, "error", err)
		return kerr.KafkaStorageError.Code
	}
	return 0
}

func offsetKey(group string, tp topicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = offsetCommitKeyVersion
	k.Group, k.Topic, k.Partition = group, tp.topic, tp.partition
	return k.AppendTo(nil)
}

func offsetValue(e offsetEntry) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	if e.expireTs >= 0 {
		v.Version = 1
	}
	v.Offset, v.LeaderEpoch, v.Metadata = e.offset, e.leaderEpoch, e.metadata
	v.CommitTimestamp, v.ExpireTimestamp = e.commitTs, e.expireTs
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = groupMetadataKeyVersion
	k.Group = group
	return k.AppendTo(nil)
}

// storeGroup writes g's metadata record (g.mu held).
func (co *coordinator) storeGroup(g *group) int16 {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataVersion
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTs.UnixMilli()
	for _, m := range g.members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	now := time.Now().UnixMilli()
	return co.appendRecords(g.id, []record.Record{{Timestamp: now, Key: groupKey(g.id), Value: v.AppendTo(nil)}})
}

// storeOffsets writes offsets of g and applies them to the table once
// written (g.mu held).
func (co *coordinator) storeOffsets(g *group, offs map[topicPartition]offsetEntry) int16 {
	if len(offs) == 0 {
		return 0
	}
	recs := make([]record.Record, 0, len(offs))
	now := time.Now().UnixMilli()
	for tp, e := range offs {
		recs = append(recs, record.Record{Timestamp: now, Key: offsetKey(g.id, tp), Value: offsetValue(e)})
	}
	if code := co.appendRecords(g.id, recs); code != 0 {
		return code
	}
	for tp, e := range offs {
		g.offsets[tp] = e
	}
	return 0
}

// deleteOffsets writes tombstones for tps of g and drops them (g.mu held).
func (co *coordinator) deleteOffsets(g *group, tps []topicPartition, groupToo bool) int16 {
	recs := make([]record.Record, 0, len(tps)+1)
	now := time.Now().UnixMilli()
	for _, tp := range tps {
		recs = append(recs, record.Record{Timestamp: now, Key: offsetKey(g.id, tp)})
	}
	if groupToo {
		recs = append(recs, record.Record{Timestamp: now, Key: groupKey(g.id)})
	}
	if len(recs) == 0 {
		return 0
	}
	if code := co.appendRecords(g.id, recs); code != 0 {
		return code
	}
	for _, tp := range tps {
		delete(g.offsets, tp)
	}
	return 0
}
