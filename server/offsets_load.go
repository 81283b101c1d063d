package server

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// offsetsLoadHook, when set (tests), runs before each offsets partition is
// loaded, so a test can hold the load and see COORDINATOR_LOAD_IN_PROGRESS.
var offsetsLoadHook func(partition int32)

// startLoading sizes the coordinator for the offsets topic as it exists
// (its partition count wins over offsets.topic.num.partitions, as in Kafka)
// and, if it exists, loads its partitions in the background; their groups
// answer COORDINATOR_LOAD_IN_PROGRESS until then.
func (co *coordinator) startLoading() {
	t := co.s.topics.get(OffsetsTopic)
	if t == nil {
		return
	}
	parts := co.s.topics.parts(t)
	co.loading = make([]atomic.Bool, len(parts))
	for i := range co.loading {
		co.loading[i].Store(true)
	}
	co.s.bgWG.Add(1)
	go func() {
		defer co.s.bgWG.Done()
		start := time.Now()
		groups := 0
		for _, p := range parts {
			if hook := offsetsLoadHook; hook != nil {
				hook(p.index)
			}
			select {
			case <-co.s.done:
				return
			default:
			}
			n, err := co.loadPartition(p)
			if err != nil {
				co.log.Error("loading offsets partition", "partition", p.index, "error", err)
			}
			groups += n
			co.loading[p.index].Store(false)
		}
		co.log.Info("offsets loaded", "partitions", len(parts), "groups", groups, "took", time.Since(start))
	}()
}

// loadState is one group as read back from the log.
type loadState struct {
	meta    *kmsg.GroupMetadataValue
	offsets map[topicPartition]offsetEntry
}

// loadPartition reads one offsets partition from its start into the group
// table: the last record per key wins, a null value deletes.
func (co *coordinator) loadPartition(p *partition) (int, error) {
	groups := map[string]*loadState{}
	state := func(g string) *loadState {
		st := groups[g]
		if st == nil {
			st = &loadState{offsets: map[topicPartition]offsetEntry{}}
			groups[g] = st
		}
		return st
	}
	apply := func(key, value []byte) error {
		if len(key) < 2 {
			return fmt.Errorf("key of %d bytes", len(key))
		}
		switch ver := int16(key[0])<<8 | int16(key[1]); ver {
		case 0, 1:
			var k kmsg.OffsetCommitKey
			if err := k.ReadFrom(key); err != nil {
				return err
			}
			tp := topicPartition{k.Topic, k.Partition}
			st := state(k.Group)
			if value == nil {
				delete(st.offsets, tp)
				return nil
			}
			var v kmsg.OffsetCommitValue
			if err := v.ReadFrom(value); err != nil {
				return err
			}
			e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTs: v.CommitTimestamp, expireTs: -1}
			if v.Version >= 3 {
				e.leaderEpoch = v.LeaderEpoch
			}
			if v.Version == 1 {
				e.expireTs = v.ExpireTimestamp
			}
			st.offsets[tp] = e
		case 2:
			var k kmsg.GroupMetadataKey
			if err := k.ReadFrom(key); err != nil {
				return err
			}
			st := state(k.Group)
			if value == nil {
				st.meta = nil
				return nil
			}
			v := new(kmsg.GroupMetadataValue)
			if err := v.ReadFrom(append([]byte(nil), value...)); err != nil {
				return err
			}
			st.meta = v
		default:
			// Records of newer coordinators: not ours, skipped.
		}
		return nil
	}
	// Transactional offset commits wait for their producer's marker
	// (Kafka's pendingTransactionalOffsetCommits): COMMIT applies them,
	// ABORT drops them; those still open at the end stay pending.
	pending := map[int64][][2][]byte{}
	onRecord := func(pid, _ int64, key, value []byte) error {
		if pid < 0 {
			return apply(key, value)
		}
		pending[pid] = append(pending[pid], [2][]byte{append([]byte(nil), key...), append([]byte(nil), value...)})
		return nil
	}
	onMarker := func(pid int64, commit bool) error {
		recs := pending[pid]
		delete(pending, pid)
		if !commit {
			return nil
		}
		for _, kv := range recs {
			if err := apply(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := readLogTxn(p, onRecord, onMarker); err != nil {
		return 0, err
	}
	co.restorePendingTxn(pending)
	n := 0
	for id, st := range groups {
		if st.meta == nil && len(st.offsets) == 0 {
			continue
		}
		g := co.restoreGroup(id, st)
		co.mu.Lock()
		co.groups[id] = g
		co.mu.Unlock()
		n++
	}
	return n, nil
}

// restoreGroup builds a loaded group: Stable with its members (whose
// sessions start now) or Empty, at its stored generation.
func (co *coordinator) restoreGroup(id string, st *loadState) *group {
	g := newGroup(co, id)
	g.offsets = st.offsets
	m := st.meta
	if m == nil {
		return g
	}
	g.protocolType, g.generation = m.ProtocolType, m.Generation
	if m.Protocol != nil {
		g.protocol = *m.Protocol
	}
	if m.Leader != nil {
		g.leader = *m.Leader
	}
	if m.CurrentStateTimestamp > 0 {
		g.stateTs = time.UnixMilli(m.CurrentStateTimestamp)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, vm := range m.Members {
		mb := &member{id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
			assignment:       vm.Assignment, lastHB: time.Now()}
		g.members[mb.id] = mb
		if mb.instanceID != nil {
			g.instances[*mb.instanceID] = mb.id
		}
		g.scheduleSession(mb, mb.sessionTimeout)
	}
	if len(g.members) > 0 {
		g.state = groupStable
	} else {
		g.leader = ""
	}
	return g
}

// readLog calls fn for every record of p's log, in offset order (control
// batches skipped).
func readLog(p *partition, fn func(key, value []byte) error) error {
	return readLogTxn(p, func(_, _ int64, key, value []byte) error { return fn(key, value) }, nil)
}

// readLogTxn calls fn for every record of p's log, in offset order, with
// its offset and the producer id of a transactional batch (-1 for the others), and marker
// (when set) for every COMMIT or ABORT control record.
func readLogTxn(p *partition, fn func(txnPID, offset int64, key, value []byte) error, marker func(pid int64, commit bool) error) error {
	off, end := p.log.LogStartOffset(), p.log.LogEndOffset()
	var buf []byte
	var rr record.RecordReader
	for off < end {
		reg, err := p.log.Read(off, 1<<20)
		if err != nil {
			return err
		}
		if reg.Len == 0 {
			reg.Release()
			return nil
		}
		buf, err = reg.ReadInto(buf[:0])
		reg.Release()
		if err != nil {
			return err
		}
		it := record.NewIterator(buf, record.ScanOptions{})
		progressed := false
		for it.Next() {
			if it.Header().Magic != 2 {
				continue
			}
			b := it.Batch()
			if b.LastOffset() < off {
				continue
			}
			pid := int64(-1)
			if b.IsTransactional() {
				pid = b.ProducerID()
			}
			rr.Reset(b, 0)
			for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
				if rec.Offset < off {
					continue
				}
				if b.IsControl() {
					if marker == nil {
						continue
					}
					_, typ, err := record.ParseControlKey(rec.Key)
					if err != nil || (typ != record.ControlCommit && typ != record.ControlAbort) {
						continue
					}
					if err := marker(b.ProducerID(), typ == record.ControlCommit); err != nil {
						return fmt.Errorf("offset %d: %w", rec.Offset, err)
					}
					continue
				}
				if err := fn(pid, rec.Offset, rec.Key, rec.Value); err != nil {
					return fmt.Errorf("offset %d: %w", rec.Offset, err)
				}
			}
			if err := rr.Err(); err != nil {
				return err
			}
			off = b.LastOffset() + 1
			progressed = true
		}
		if err := it.Err(); err != nil && !errors.Is(err, record.ErrTruncated) {
			return err
		}
		if !progressed {
			return fmt.Errorf("no progress reading at offset %d", off)
		}
	}
	return nil
}
