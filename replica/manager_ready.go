package replica

import (
	"cmp"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchTarget names one replica fetcher: a source broker and the fetcher
// (of num.replica.fetchers) a partition is assigned to.
type FetchTarget struct {
	Broker  int32
	Fetcher int
}

// FetchRequest is a Fetch this broker must send to a leader.
type FetchRequest struct {
	Target FetchTarget
	Req    *kmsg.FetchRequest
}

// ListOffsetsRequest is a ListOffsets this broker must send to a leader
// (a follower recovering from OFFSET_OUT_OF_RANGE).
type ListOffsetsRequest struct {
	Broker int32
	Req    *kmsg.ListOffsetsRequest
}

// Ready is the work due now. Every request it holds is in flight from the
// moment Ready returns it: the caller must send it and hand back exactly one
// outcome for it (FetchResponse, ListOffsetsResponse,
// AlterPartitionResponse), with a nil response and an error when it could not
// be sent or got no answer (after the request timeout). Until then no other
// request of the same kind goes to the same target.
type Ready struct {
	// Fetches, at most one per FetchTarget: Fetch v12 with this broker's
	// replica id, long-polling (replica.fetch.wait.max.ms,
	// replica.fetch.min.bytes), each partition from its log end offset with
	// its current leader epoch and last fetched epoch.
	Fetches []FetchRequest
	// ListOffsets, at most one per broker.
	ListOffsets []ListOffsetsRequest
	// AlterPartition for the controller (v1: topic names and new_isr), when
	// ISR changes are pending and none is in flight.
	AlterPartition *kmsg.AlterPartitionRequest
	// NextMs is when time alone makes work due (a backoff ending, the next
	// ISR expiry check, an AlterPartition retry); 0 when nothing waits on
	// time. Call Ready again then, or when Wake fires.
	NextMs int64
}

// Empty reports whether r asks nothing.
func (r *Ready) Empty() bool {
	return len(r.Fetches) == 0 && len(r.ListOffsets) == 0 && r.AlterPartition == nil
}

// Ready returns the work due at now (see Ready): the ISR expiry check every
// replica.lag.time.max.ms/2 (its AlterPartition proposals included), pending
// ISR changes, and the fetches of follower partitions whose target has none
// in flight.
func (m *Manager) Ready(now int64) Ready {
	m.takeWake()
	m.mu.Lock()
	defer m.mu.Unlock()
	var r Ready
	if m.closed {
		return r
	}
	if now >= m.nextShrinkMs {
		for _, p := range m.order {
			p.MaybeShrinkISR(now)
		}
		m.nextShrinkMs = now + max(m.cfg.ReplicaLagTimeMaxMs/2, 1)
	}
	next := m.nextShrinkMs
	r.AlterPartition = m.readyAlter(now, &next)
	r.Fetches = m.readyFetches(now, &next, nil)
	r.ListOffsets = m.readyListOffsets(now, &next)
	r.NextMs = next
	return r
}

func earliest(next *int64, t int64) {
	if t > 0 && (*next == 0 || t < *next) {
		*next = t
	}
}

// readyAlter batches the pending ISR changes into one AlterPartition (mu
// held), as Kafka's AlterIsrManager: one request in flight per broker.
func (m *Manager) readyAlter(now int64, next *int64) *kmsg.AlterPartitionRequest {
	if m.alterInflight {
		return nil
	}
	if now < m.alterRetryAt {
		for _, p := range m.order {
			if p.alterWaiting() {
				earliest(next, m.alterRetryAt)
				break
			}
		}
		return nil
	}
	var items []AlterItem
	for _, p := range m.order {
		if it, ok := p.takeAlter(); ok {
			items = append(items, it)
			m.alterSent = append(m.alterSent, alterSent{p: p, id: it.id})
		}
	}
	if len(items) == 0 {
		return nil
	}
	m.alterInflight = true
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 1
	req.BrokerID = m.cfg.BrokerID
	req.BrokerEpoch = m.brokerEpoch
	for _, it := range items {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != it.TP.Topic {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic = it.TP.Topic
			req.Topics = append(req.Topics, t)
		}
		t := &req.Topics[len(req.Topics)-1]
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition = it.TP.Partition
		rp.LeaderEpoch = it.LeaderEpoch
		rp.NewISR = it.NewISR
		for _, id := range it.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID = id
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		rp.PartitionEpoch = it.PartitionEpoch
		t.Partitions = append(t.Partitions, rp)
	}
	return req
}

// alterWaiting reports an ISR change waiting to be sent.
func (p *Partition) alterWaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.role == RoleLeader && p.isr.pending != noChange && !p.isr.sent && !p.isr.gaveUp
}

// AlterPartitionResponse hands back the outcome of Ready's AlterPartition:
// resp nil (with err) or a top-level error puts every change back in line
// for a retry after AlterPartitionRetryMs; otherwise each partition's answer
// is applied (see Partition's alterResult) and a partition missing from the
// answer is sent again.
func (m *Manager) AlterPartitionResponse(resp *kmsg.AlterPartitionResponse, err error, now int64) {
	m.mu.Lock()
	sent := m.alterSent
	m.alterSent = nil
	m.alterInflight = false
	if err != nil || resp == nil || resp.ErrorCode != 0 {
		if err == nil && resp != nil {
			m.cfg.Logger.Warn("AlterPartition refused", "code", resp.ErrorCode)
		}
		m.alterRetryAt = now + m.cfg.AlterPartitionRetryMs
		m.mu.Unlock()
		for _, s := range sent {
			s.p.alterUnsent(s.id)
		}
		m.signal()
		return
	}
	m.mu.Unlock()
	for _, s := range sent {
		r, ok := findAlterResult(resp, s.p.tp)
		if !ok {
			s.p.alterUnsent(s.id)
			continue
		}
		s.p.alterResult(s.id, r, now)
	}
	m.signal()
}

func findAlterResult(resp *kmsg.AlterPartitionResponse, tp TopicPartition) (AlterResult, bool) {
	for _, t := range resp.Topics {
		if t.Topic != tp.Topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == tp.Partition {
				return AlterResult{ErrorCode: p.ErrorCode, Leader: p.LeaderID, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR, PartitionEpoch: p.PartitionEpoch}, true
			}
		}
	}
	return AlterResult{}, false
}

// FetcherID is the fetcher of num.replica.fetchers a partition is assigned
// to, as Kafka computes it: abs(31*hash(topic) + partition) % n, with Java's
// String.hashCode.
func FetcherID(tp TopicPartition, n int) int {
	var h int32
	for i := 0; i < len(tp.Topic); i++ {
		h = 31*h + int32(tp.Topic[i])
	}
	return int((31*h+tp.Partition)&0x7fffffff) % n
}

// ReadyFetch is Ready for one target's Fetch only: the request due now
// (in flight from then on, as Ready's), ok false when none is due or one is
// in flight. A fetcher asks it after handing back an outcome, so that the
// next fetch to the same leader leaves at once rather than after a round
// through the caller's loop (which Ready's Fetches still serve: whichever
// asks first gets the request).
func (m *Manager) ReadyFetch(tgt FetchTarget, now int64) (FetchRequest, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.fetching[tgt] > 0 {
		return FetchRequest{}, false
	}
	var next int64
	out := m.readyFetches(now, &next, &tgt)
	if len(out) == 0 {
		return FetchRequest{}, false
	}
	return out[0], true
}

// readyFetches builds one Fetch per target with no fetch in flight (only
// the one for only, when given; mu held).
func (m *Manager) readyFetches(now int64, next *int64, only *FetchTarget) []FetchRequest {
	var out []FetchRequest
	var held map[FetchTarget]int32 // targets with a throttled partition left out: the ms until the rate allows it
	for _, p := range m.order {
		fid := FetcherID(p.tp, m.cfg.NumReplicaFetchers)
		if only != nil && fid != only.Fetcher {
			continue
		}
		if p.followerThrottled(now, m.followerQuota) {
			wait := max(m.followerQuota.WaitMs(now), 1)
			earliest(next, now+wait) // it fetches when the rate allows
			if _, leader, ok := p.fetchPart(now); ok {
				if held == nil {
					held = map[FetchTarget]int32{}
				}
				tgt, w := FetchTarget{Broker: leader, Fetcher: fid}, int32(min(wait, math.MaxInt32))
				if h, ok := held[tgt]; !ok || w < h {
					held[tgt] = w
				}
			}
			continue
		}
		part, leader, ok := p.fetchPart(now)
		if !ok {
			earliest(next, p.delayedUntil(now))
			continue
		}
		tgt := FetchTarget{Broker: leader, Fetcher: fid}
		if m.fetching[tgt] > 0 || (only != nil && tgt != *only) {
			continue
		}
		i := slices.IndexFunc(out, func(f FetchRequest) bool { return f.Target == tgt })
		if i < 0 {
			out = append(out, FetchRequest{Target: tgt, Req: m.newFetchRequest()})
			i = len(out) - 1
		}
		addFetchPart(out[i].Req, p.tp.Topic, part)
	}
	slices.SortFunc(out, func(a, b FetchRequest) int {
		return cmp.Or(cmp.Compare(a.Target.Broker, b.Target.Broker), cmp.Compare(a.Target.Fetcher, b.Target.Fetcher))
	})
	for _, f := range out {
		m.fetching[f.Target]++
		// The other partitions' long poll ends when the throttled one may
		// fetch again: it rides in the next fetch to the target, which
		// leaves only after this one's answer (a poll of
		// replica.fetch.wait.max.ms kept a move ~25% under its throttle).
		if w, ok := held[f.Target]; ok {
			f.Req.MaxWaitMillis = min(f.Req.MaxWaitMillis, w)
		}
	}
	return out
}

// newFetchRequest is an empty Fetch v12 of this broker's replica fetcher.
func (m *Manager) newFetchRequest() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = m.cfg.BrokerID
	req.MaxWaitMillis = m.cfg.ReplicaFetchWaitMaxMs
	req.MinBytes = m.cfg.ReplicaFetchMinBytes
	req.MaxBytes = m.cfg.ReplicaFetchResponseMaxBytes
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: every fetch is a full one
	return req
}

// addFetchPart adds a partition's part to req (partitions come grouped by
// topic: m.order is sorted).
func addFetchPart(req *kmsg.FetchRequest, topic string, part kmsg.FetchRequestTopicPartition) {
	if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != topic {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = topic
		req.Topics = append(req.Topics, t)
	}
	t := &req.Topics[len(req.Topics)-1]
	t.Partitions = append(t.Partitions, part)
}

// delayedUntil is when a backed-off follower partition may fetch again (0
// when it is not waiting on time).
func (p *Partition) delayedUntil(now int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == RoleFollower && p.failed == nil && p.fetch.phase != phaseFenced && p.fetch.delayUntil > now {
		return p.fetch.delayUntil
	}
	return 0
}

// FetchResponse hands back the outcome of one of Ready's fetches (resp nil
// and err set when it failed): each partition whose request still matches
// its state takes its data, truncation or error; a failed request backs
// every partition in it off for replica.fetch.backoff.ms. Errors of single
// partitions are handled (and logged) here: see Partition.
func (m *Manager) FetchResponse(tgt FetchTarget, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, err error, now int64) {
	defer func() {
		m.mu.Lock()
		if m.fetching[tgt]--; m.fetching[tgt] <= 0 {
			delete(m.fetching, tgt)
		}
		m.mu.Unlock()
		m.signal()
	}()
	if err == nil && resp != nil && resp.ErrorCode != 0 {
		m.cfg.Logger.Warn("fetch refused", "leader", tgt.Broker, "code", resp.ErrorCode)
		resp = nil
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			p := m.Partition(rt.Topic, rp.Partition)
			if p == nil {
				continue
			}
			var data *kmsg.FetchResponseTopicPartition
			if resp != nil {
				data = findFetchData(resp, rt.Topic, rp.Partition)
			}
			if data == nil {
				if resp == nil {
					p.fetchFailed(tgt.Broker, rp, now)
				}
				continue
			}
			if m.followerQuota.IsThrottled(p.tp) {
				// What the partition keeps: a partial last batch comes again.
				m.followerQuota.Record(WholeBatchBytes(data.RecordBatches), now)
			}
			if err := p.handleFetchData(tgt.Broker, rp, data, now); err != nil {
				m.cfg.Logger.Warn("fetch data not applied", "topic", rt.Topic, "partition", rp.Partition, "err", err)
			}
		}
	}
}

func findFetchData(resp *kmsg.FetchResponse, topic string, partition int32) *kmsg.FetchResponseTopicPartition {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic != topic {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == partition {
				return &t.Partitions[j]
			}
		}
	}
	return nil
}

// readyListOffsets builds one ListOffsets per leader with none in flight (mu
// held).
func (m *Manager) readyListOffsets(now int64, next *int64) []ListOffsetsRequest {
	var out []ListOffsetsRequest
	for _, p := range m.order {
		part, leader, ok := p.listOffsetsPart(now)
		if !ok || m.listing[leader] {
			continue
		}
		i := slices.IndexFunc(out, func(l ListOffsetsRequest) bool { return l.Broker == leader })
		if i < 0 {
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version = 4
			req.ReplicaID = m.cfg.BrokerID
			out = append(out, ListOffsetsRequest{Broker: leader, Req: req})
			i = len(out) - 1
		}
		req := out[i].Req
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.tp.Topic {
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = p.tp.Topic
			req.Topics = append(req.Topics, t)
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, part)
	}
	slices.SortFunc(out, func(a, b ListOffsetsRequest) int { return cmp.Compare(a.Broker, b.Broker) })
	for _, l := range out {
		m.listing[l.Broker] = true
	}
	return out
}

// ListOffsetsResponse hands back the outcome of one of Ready's ListOffsets
// (resp nil and err set when it failed).
func (m *Manager) ListOffsetsResponse(broker int32, req *kmsg.ListOffsetsRequest, resp *kmsg.ListOffsetsResponse, err error, now int64) {
	defer func() {
		m.mu.Lock()
		delete(m.listing, broker)
		m.mu.Unlock()
		m.signal()
	}()
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			p := m.Partition(rt.Topic, rp.Partition)
			if p == nil {
				continue
			}
			var data *kmsg.ListOffsetsResponseTopicPartition
			if err == nil && resp != nil {
				data = findListOffsets(resp, rt.Topic, rp.Partition)
			}
			if err := p.handleListOffsets(broker, rp, data, now); err != nil {
				m.cfg.Logger.Warn("leader offsets not applied", "topic", rt.Topic, "partition", rp.Partition, "err", err)
			}
		}
	}
}

func findListOffsets(resp *kmsg.ListOffsetsResponse, topic string, partition int32) *kmsg.ListOffsetsResponseTopicPartition {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic != topic {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == partition {
				return &t.Partitions[j]
			}
		}
	}
	return nil
}
