package server

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// txnOffsets are the offsets a transaction committed (TxnOffsetCommit),
// held back until its marker reaches the group's __consumer_offsets
// partition: COMMIT applies them to the group, ABORT drops them (Kafka's
// pendingTransactionalOffsetCommits).
type txnOffsets struct {
	mu sync.Mutex
	// pending[pid][group] are producer pid's offsets for group.
	pending map[int64]map[string]map[topicPartition]offsetEntry
}

// storeTxnOffsets appends offs of group g as a transactional batch of
// producer pid/epoch and holds them pending (g.mu held).
func (co *coordinator) storeTxnOffsets(g *group, pid int64, epoch int16, offs map[topicPartition]offsetEntry) int16 {
	if len(offs) == 0 {
		return 0
	}
	now := time.Now().UnixMilli()
	recs := make([]record.Record, 0, len(offs))
	for tp, e := range offs {
		recs = append(recs, record.Record{Timestamp: now, Key: offsetKey(g.id, tp), Value: offsetValue(e)})
	}
	opts := record.DefaultBatchOptions()
	opts.LeaderEpoch = 0
	opts.Transactional = true
	opts.ProducerID, opts.ProducerEpoch = pid, epoch
	buf, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		return kerr.UnknownServerError.Code
	}
	if co.s.cl != nil {
		if code := co.s.cl.appendOffsets(g.id, buf); code != 0 {
			return code
		}
		co.txn.add(pid, g.id, offs)
		return 0
	}
	p, err := co.offsetsPart(g.id)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if _, err := p.log.Append(buf); err != nil {
		if errors.Is(err, segment.ErrClosed) {
			return kerr.CoordinatorNotAvailable.Code
		}
		co.log.Error("appending transactional offsets", "group", g.id, "error", err)
		return kerr.KafkaStorageError.Code
	}
	co.txn.add(pid, g.id, offs)
	return 0
}

// endTxnOffsets applies (commit) or drops producer pid's pending offsets
// of the groups of __consumer_offsets partition partition.
func (co *coordinator) endTxnOffsets(pid int64, commit bool, partition int32) {
	co.txn.mu.Lock()
	byGroup := co.txn.pending[pid]
	done := map[string]map[topicPartition]offsetEntry{}
	for id, offs := range byGroup {
		if offsetsPartition(id, int32(len(co.loading))) == partition {
			done[id] = offs
			delete(byGroup, id)
		}
	}
	if len(byGroup) == 0 {
		delete(co.txn.pending, pid)
	}
	co.txn.mu.Unlock()
	if !commit {
		return
	}
	for id, offs := range done {
		g := co.lockGroup(id, true)
		if g == nil {
			continue
		}
		for tp, e := range offs {
			g.offsets[tp] = e
		}
		g.mu.Unlock()
	}
}

// restorePendingTxn holds the transactional offset commits found without
// a marker at load (key/value records per producer id) until it comes.
func (co *coordinator) restorePendingTxn(pending map[int64][][2][]byte) {
	for pid, recs := range pending {
		for _, kv := range recs {
			var k kmsg.OffsetCommitKey
			if err := k.ReadFrom(kv[0]); err != nil || k.Version > 1 || kv[1] == nil {
				continue
			}
			var v kmsg.OffsetCommitValue
			if err := v.ReadFrom(kv[1]); err != nil {
				continue
			}
			e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTs: v.CommitTimestamp, expireTs: -1}
			if v.Version >= 3 {
				e.leaderEpoch = v.LeaderEpoch
			}
			co.txn.add(pid, k.Group, map[topicPartition]offsetEntry{{k.Topic, k.Partition}: e})
		}
	}
}

// add holds offs of group for producer pid.
func (t *txnOffsets) add(pid int64, group string, offs map[topicPartition]offsetEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = map[int64]map[string]map[topicPartition]offsetEntry{}
	}
	byGroup := t.pending[pid]
	if byGroup == nil {
		byGroup = map[string]map[topicPartition]offsetEntry{}
		t.pending[pid] = byGroup
	}
	if byGroup[group] == nil {
		byGroup[group] = map[topicPartition]offsetEntry{}
	}
	for tp, e := range offs {
		byGroup[group][tp] = e
	}
}
