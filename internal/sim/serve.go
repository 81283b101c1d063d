package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
)

// The inter-broker side of a broker: control requests from the controller,
// requests to the controller, follower fetches and ListOffsets. Every
// message crosses the network encoded (codec.go).

// serveControl applies a controller request (LeaderAndIsr, UpdateMetadata,
// StopReplica) and answers it.
func (b *Broker) serveControl(w wire, reply func(any)) {
	req, err := decodeReq(w)
	if err != nil {
		b.s.fail("broker %d: %v", b.ID, err)
		return
	}
	now := b.s.W.Now
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		b.s.W.Tracef("broker %d <- LeaderAndIsr %s", b.ID, summarizeControl(r))
		resp = b.M.LeaderAndIsr(r, now)
	case *kmsg.UpdateMetadataRequest:
		resp = b.meta.update(r, b.member.epoch)
	case *kmsg.StopReplicaRequest:
		b.s.W.Tracef("broker %d <- StopReplica %s", b.ID, summarizeControl(r))
		b.drain() // a deleted partition's log is closed
		resp = b.M.StopReplica(r, now)
	default:
		b.s.fail("broker %d: unexpected control request %T", b.ID, req)
		return
	}
	reply(encodeResp(resp))
}

// serveController hands a request for the controller (AlterPartition,
// ElectLeaders) to this broker's member, which answers NOT_CONTROLLER
// unless its controller is active.
func (b *Broker) serveController(w wire, reply func(any)) {
	req, err := decodeReq(w)
	if err != nil {
		b.s.fail("broker %d: %v", b.ID, err)
		return
	}
	b.member.handle(req, func(resp kmsg.Response) { reply(encodeResp(resp)) })
}

// sendAlterPartition sends the ISR changes to the controller the metadata
// names (Kafka's BrokerToControllerChannelManager); with none known the
// request fails at once and the Manager retries.
func (b *Broker) sendAlterPartition(req *kmsg.AlterPartitionRequest) {
	m := b.M
	ctrl := b.meta.controller
	b.s.W.Tracef("broker %d AlterPartition -> %d%s", b.ID, ctrl, alterSummary(req))
	if ctrl < 1 || int(ctrl) >= len(b.s.Brokers) {
		b.s.W.After(1, func() {
			if b.M == m {
				m.AlterPartitionResponse(nil, ErrTimeout, b.s.W.Now)
			}
		})
		return
	}
	to := b.s.Brokers[ctrl]
	w := encodeReq(req)
	b.alterInflight++
	inc := b.inc
	b.s.Net.Call(Conn{From: b.ID, To: ctrl, Kind: ConnAlter}, true, 0,
		func(reply func(any)) { to.serveController(w, reply) },
		func(resp any, err error) {
			if b.inc == inc {
				b.alterInflight--
			}
			var r *kmsg.AlterPartitionResponse
			if err == nil {
				d, derr := decodeResp(resp.(wire))
				if derr != nil {
					b.s.fail("broker %d: %v", b.ID, derr)
				}
				r, _ = d.(*kmsg.AlterPartitionResponse)
			}
			b.s.W.Tracef("broker %d AlterPartition answer %s%v", b.ID, alterRespSummary(r), errOrEmpty(err))
			m.AlterPartitionResponse(r, err, b.s.W.Now)
		})
}

type parkedFetch struct {
	req      *kmsg.FetchRequest
	reply    func(any)
	deadline int64
}

func (b *Broker) peer(id int32) *Broker {
	if id < 1 || int(id) >= len(b.s.Brokers) {
		return nil
	}
	return b.s.Brokers[id]
}

func (b *Broker) sendFetch(f aheadFetch) {
	m := b.M
	to := b.peer(f.Target.Broker)
	b.s.W.Tracef("broker %d fetch -> %d%s", b.ID, f.Target.Broker, fetchSummary(f.Req))
	if to == nil {
		b.s.W.After(b.s.Net.TimeoutMs, func() {
			if b.M == m {
				m.FetchResponse(f.Target, f.Req, nil, ErrTimeout, b.s.W.Now)
			}
		})
		return
	}
	w := encodeReq(f.Req)
	b.s.Net.Call(Conn{From: b.ID, To: to.ID, Kind: ConnFetch, Gen: uint64(f.Target.Fetcher)}, true, 0,
		func(reply func(any)) { to.serveFetch(w, reply) },
		func(resp any, err error) {
			var r *kmsg.FetchResponse
			if err == nil {
				d, derr := decodeResp(resp.(wire))
				if derr != nil {
					b.s.fail("broker %d: %v", b.ID, derr)
				}
				r, _ = d.(*kmsg.FetchResponse)
			}
			b.s.countFetch(r)
			b.s.W.Tracef("broker %d fetch <- %d%s%v", b.ID, f.Target.Broker, fetchRespSummary(r), errOrEmpty(err))
			b.handBack(f.Target, func() {
				// As the Runner's fetcher: the next fetch goes before this
				// answer is applied when the Manager lets it (FetchAhead),
				// asked first, in half the answers with whole batches, on
				// the view the reader has while the answer arrives (the
				// answer is then cut to the view's records), then on the
				// whole answer.
				if b.M != m {
					return
				}
				if view, cut := b.s.earlyView(r); view != nil {
					if next, ok := m.FetchAhead(f.FetchRequest, view, b.s.W.Now); ok {
						cut()
						b.s.stats.FetchesAhead++
						b.s.stats.FetchesEarly++
						b.sendFetch(aheadFetch{FetchRequest: next, Ahead: true})
						return
					}
				}
				if next, ok := m.FetchAhead(f.FetchRequest, r, b.s.W.Now); ok {
					b.s.stats.FetchesAhead++
					b.sendFetch(aheadFetch{FetchRequest: next, Ahead: true})
				}
			}, func() {
				if f.Ahead {
					b.s.countAheadAnswer(m, f.Target.Broker, f.Req, err)
				}
				m.FetchResponse(f.Target, f.Req, r, err, b.s.W.Now)
			})
		})
}

// handBack runs a fetcher's answer as the Runner's fetcher goroutine does:
// at once, ahead (FetchAhead and the fetch it gives), then apply
// (FetchResponse: the append) as an event of its own 0-2 ms later, the
// broker's other events (LeaderAndIsr, other fetchers, parked requests)
// going on meanwhile; one target's answers in the order they came, the
// next answer's ahead only after the previous one's apply (the fetcher
// reads it while appending, and decides on it after).
func (b *Broker) handBack(tgt replica.FetchTarget, ahead, apply func()) {
	if b.backs == nil {
		b.backs = map[replica.FetchTarget][]handBackStep{}
	}
	b.backs[tgt] = append(b.backs[tgt], handBackStep{ahead, apply})
	if len(b.backs[tgt]) == 1 {
		b.nextHandBack(tgt)
	}
}

// handBackStep is an answer waiting in its fetcher's hand-back queue.
type handBackStep struct{ ahead, apply func() }

func (b *Broker) nextHandBack(tgt replica.FetchTarget) {
	h := b.backs[tgt][0]
	h.ahead()
	b.s.W.After(int64(b.s.W.Intn(3)), func() {
		h.apply()
		if q := b.backs[tgt][1:]; len(q) > 0 {
			b.backs[tgt] = q
			b.nextHandBack(tgt)
		} else {
			delete(b.backs, tgt)
		}
	})
}

// aheadFetch is a Fetch to send, Ahead when FetchAhead gave it.
type aheadFetch struct {
	replica.FetchRequest
	Ahead bool
}

// countAheadAnswer counts the partitions of an answer to a fetch sent
// ahead that the Manager must drop (no answer, or the partition no longer
// follows that leader in that epoch from the offset fetched: the answer
// before failed, was dropped, or was cut) and those it applies.
func (s *Sim) countAheadAnswer(m *replica.Manager, leader int32, req *kmsg.FetchRequest, err error) {
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			p := m.Partition(t.Topic, rp.Partition)
			if err != nil || p == nil || p.Role() != replica.RoleFollower || p.Leader() != leader ||
				p.LeaderEpoch() != rp.CurrentLeaderEpoch || p.Failed() != nil || p.Log().LogEndOffset() != rp.FetchOffset {
				s.stats.AheadDropped++
			} else {
				s.stats.AheadApplied++
			}
		}
	}
}

// serveFetch answers a follower's fetch, or parks it (Kafka's fetch
// purgatory) until it has something to say or its max wait passes.
func (b *Broker) serveFetch(w wire, reply func(any)) {
	d, err := decodeReq(w)
	if err != nil {
		b.s.fail("broker %d: %v", b.ID, err)
		return
	}
	req := d.(*kmsg.FetchRequest)
	resp := b.M.HandleFetch(req, b.s.W.Now)
	if worthAnswering(resp) || req.MaxWaitMillis <= 0 {
		reply(encodeResp(resp))
		return
	}
	pf := &parkedFetch{req: req, reply: reply, deadline: b.s.W.Now + int64(req.MaxWaitMillis)}
	b.parked = append(b.parked, pf)
	inc := b.inc
	b.s.W.At(pf.deadline, func() {
		if b.inc == inc {
			b.pokeParked(true)
		}
	})
}

func worthAnswering(resp *kmsg.FetchResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) > 0 || p.DivergingEpoch.EndOffset >= 0 {
				return true
			}
		}
	}
	return false
}

// pokeParked serves the parked fetches again; those with something to say,
// or past their max wait, are answered.
func (b *Broker) pokeParked(expire bool) {
	if !b.up || len(b.parked) == 0 {
		return
	}
	keep := b.parked[:0]
	for _, pf := range b.parked {
		resp := b.M.HandleFetch(pf.req, b.s.W.Now)
		if worthAnswering(resp) || expire && b.s.W.Now >= pf.deadline {
			pf.reply(encodeResp(resp))
			continue
		}
		keep = append(keep, pf)
	}
	clear(b.parked[len(keep):])
	b.parked = keep
}

func (b *Broker) sendListOffsets(l replica.ListOffsetsRequest) {
	m := b.M
	to := b.peer(l.Broker)
	b.s.W.Tracef("broker %d list offsets -> %d", b.ID, l.Broker)
	b.s.stats.ListOffsets++
	done := func(r *kmsg.ListOffsetsResponse, err error) {
		if b.M != m {
			return
		}
		b.drain() // starting a log over closes it
		m.ListOffsetsResponse(l.Broker, l.Req, r, err, b.s.W.Now)
	}
	if to == nil {
		b.s.W.After(b.s.Net.TimeoutMs, func() { done(nil, ErrTimeout) })
		return
	}
	w := encodeReq(l.Req)
	b.s.Net.Call(Conn{From: b.ID, To: to.ID, Kind: ConnList}, true, 0,
		func(reply func(any)) {
			d, err := decodeReq(w)
			if err != nil {
				b.s.fail("broker %d: %v", to.ID, err)
				return
			}
			reply(encodeResp(to.M.HandleListOffsets(d.(*kmsg.ListOffsetsRequest))))
		},
		func(resp any, err error) {
			var r *kmsg.ListOffsetsResponse
			if err == nil {
				d, derr := decodeResp(resp.(wire))
				if derr != nil {
					b.s.fail("broker %d: %v", b.ID, derr)
				}
				r, _ = d.(*kmsg.ListOffsetsResponse)
			}
			done(r, err)
		})
}

func (s *Sim) countFetch(r *kmsg.FetchResponse) {
	if r == nil {
		return
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			switch {
			case p.DivergingEpoch.EndOffset >= 0:
				s.stats.Diverging++
			case p.ErrorCode == kerr.OffsetOutOfRange.Code:
				s.stats.OutOfRange++
			case p.ErrorCode == kerr.FencedLeaderEpoch.Code:
				s.stats.Fenced++
			}
		}
	}
}

// earlyView is, in half the answers whose last partition has whole
// batches, what the Runner's reader knows of r before its end (its
// earlyView): every field but that partition's tagged ones (diverging
// epoch, current leader, snapshot), which come after its records, and
// those records up to a random count (at least one) of their whole
// batches; cut cuts r's own records there, as the Runner's fetcher does
// when the fetch it sent early goes. nil when not drawn.
func (s *Sim) earlyView(r *kmsg.FetchResponse) (*kmsg.FetchResponse, func()) {
	if r == nil || len(r.Topics) == 0 || len(r.Topics[len(r.Topics)-1].Partitions) == 0 {
		return nil, nil
	}
	t := r.Topics[len(r.Topics)-1]
	lp := &t.Partitions[len(t.Partitions)-1]
	var ends []int
	it := record.NewIterator(lp.RecordBatches, record.ScanOptions{})
	for it.Next() {
		ends = append(ends, int(it.NextPos()))
	}
	if len(ends) == 0 || !s.W.Chance(0.5) {
		return nil, nil
	}
	end := ends[s.W.Intn(len(ends))]
	p := kmsg.NewFetchResponseTopicPartition()
	p.Partition, p.ErrorCode, p.HighWatermark = lp.Partition, lp.ErrorCode, lp.HighWatermark
	p.LastStableOffset, p.LogStartOffset, p.AbortedTransactions = lp.LastStableOffset, lp.LogStartOffset, lp.AbortedTransactions
	p.PreferredReadReplica, p.RecordBatches = lp.PreferredReadReplica, lp.RecordBatches[:end]
	view := *r
	view.Topics = append([]kmsg.FetchResponseTopic(nil), r.Topics...)
	vt := &view.Topics[len(view.Topics)-1]
	vt.Partitions = append(append([]kmsg.FetchResponseTopicPartition(nil), t.Partitions[:len(t.Partitions)-1]...), p)
	return &view, func() { lp.RecordBatches = lp.RecordBatches[:end] }
}
