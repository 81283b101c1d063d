package sim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// History is what the clients saw: every send, acknowledgement, refusal and
// read goes to Checker (internal/history, the checker the real-process fault
// tests use; its partition numbers are the simulation's partition indexes,
// Sim.Parts); Acked and Refused also feed the simulation's own checks.
type History struct {
	Checker *history.History
	// Acked holds every record acknowledged under acks=-1, by partition:
	// offset -> value.
	Acked map[replica.TopicPartition]map[int64]string
	// Refused holds the values whose produce was refused before the append:
	// they must never appear.
	Refused map[string]bool
	// Unknown counts produces whose outcome is unknown (timed out, lost,
	// leadership lost after the append): their records may or may not be in
	// the log.
	Unknown int
	// Produced counts produce requests sent (retries too); Retries those
	// sent again after a refusal; Reads records read.
	Produced, Retries, Reads, WeakAcked int
}

func newHistory() *History {
	return &History{
		Checker: history.New(),
		Acked:   map[replica.TopicPartition]map[int64]string{},
		Refused: map[string]bool{},
	}
}

// clients is the clients' state: one producer, one consumer and an admin,
// all on ClientNode, sharing the metadata they learnt from Metadata
// requests.
type clients struct {
	meta         map[replica.TopicPartition]partMeta
	controller   int32
	metaInflight bool
	pos          map[replica.TopicPartition]int64 // the consumer's positions
	open         int                              // sends not decided yet
}

// produceReq is a Produce for one partition (the simulation's own struct:
// the client protocol is not what it tests).
type produceReq struct {
	tp    replica.TopicPartition
	batch []byte
	acks  int16
}

// produceResp answers a produceReq. appended is the simulation's oracle,
// not a protocol field: whether the broker appended the batch before the
// error, so the producer retries only what was certainly not written (a
// client cannot know it; Kafka's producer retries anyway and may duplicate:
// this one never does, so duplicates are failures).
type produceResp struct {
	code     int16
	base     int64
	appended bool
}

// consumeReq is a consumer's Fetch of one partition (KIP-320's current
// leader epoch included).
type consumeReq struct {
	tp     replica.TopicPartition
	offset int64
	epoch  int32
}

type consumeResp struct {
	code         int16
	data         []byte
	hw, logStart int64
}

// pendingSend is a produce the client has not given up on.
type pendingSend struct {
	tp       replica.TopicPartition
	hp       int32 // the history's partition number
	values   []string
	batch    []byte
	acks     int16
	attempts int
}

// parkedProduce is an acks=-1 produce the leader holds until it is decided.
type parkedProduce struct {
	p     *replica.Partition
	wait  replica.ProduceWait
	base  int64
	reply func(any)
}

const maxProduceAttempts = 4

// produce sends one batch of 1-3 new values to partition i's leader, with
// acks=-1 or (one time in five) acks=1.
func (s *Sim) produce(i int) {
	sp := s.Parts[i]
	n := 1 + s.W.Intn(3)
	ps := &pendingSend{tp: sp.TP, hp: int32(i), acks: -1}
	s.cl.open++
	if s.W.Chance(0.2) {
		ps.acks = 1
	}
	recs := make([]record.Record, n)
	for k := range n {
		s.seq++
		v := fmt.Sprintf("%s-%d", sp.TP, s.seq)
		ps.values = append(ps.values, v)
		recs[k] = record.Record{Timestamp: s.W.Now, Value: []byte(v)}
		s.Hist.Checker.Send(v, ps.hp)
	}
	var err error
	if ps.batch, err = record.AppendBatch(nil, record.DefaultBatchOptions(), recs); err != nil {
		panic(err)
	}
	s.sendProduce(ps)
}

func (s *Sim) sendProduce(ps *pendingSend) {
	ps.attempts++
	s.Hist.Produced++
	leader := s.cl.meta[ps.tp].Leader
	if leader < 1 {
		s.refreshMeta()
		s.retryProduce(ps, "no leader known")
		return
	}
	b := s.Brokers[leader]
	req := &produceReq{tp: ps.tp, batch: slices.Clone(ps.batch), acks: ps.acks}
	s.Net.Call(Conn{From: ClientNode, To: leader, Kind: ConnClient}, true, s.Opt.ProduceTimeoutMs+500,
		func(reply func(any)) { b.serveProduce(req, reply) },
		func(resp any, err error) {
			if err != nil {
				s.refreshMeta()
				s.produceUnknown(ps, fmt.Sprintf("to broker %d: %v", leader, err))
				return
			}
			r := resp.(produceResp)
			switch {
			case r.code == 0:
				s.acked(ps, r.base, leader)
			case !r.appended:
				s.refreshMeta()
				s.retryProduce(ps, fmt.Sprintf("broker %d: %s", leader, kerr.ErrorForCode(r.code)))
			default:
				s.refreshMeta()
				s.produceUnknown(ps, fmt.Sprintf("broker %d after the append: %s", leader, kerr.ErrorForCode(r.code)))
			}
		})
}

// retryProduce sends a refused batch again after a backoff, or gives up:
// nothing of it was written.
func (s *Sim) retryProduce(ps *pendingSend, why string) {
	if ps.attempts >= maxProduceAttempts || !s.loadOn {
		for _, v := range ps.values {
			s.Hist.Refused[v] = true
			s.Hist.Checker.Fail(v, true)
		}
		s.cl.open--
		s.W.Tracef("produce %v refused (%s): given up", ps.values, why)
		return
	}
	s.W.Tracef("produce %v refused (%s): retrying", ps.values, why)
	s.Hist.Retries++
	s.W.After(s.W.Between(50, 200), func() { s.sendProduce(ps) })
}

func (s *Sim) produceUnknown(ps *pendingSend, why string) {
	s.cl.open--
	s.Hist.Unknown++
	for _, v := range ps.values {
		s.Hist.Checker.Fail(v, false)
	}
	s.W.Tracef("produce %v outcome unknown: %s", ps.values, why)
}

func (s *Sim) acked(ps *pendingSend, base int64, leader int32) {
	s.cl.open--
	if ps.acks == 1 {
		s.Hist.WeakAcked += len(ps.values)
		for k, v := range ps.values {
			s.Hist.Checker.AckWeak(v, base+int64(k))
		}
		s.W.Tracef("produce %v at %s@%d acknowledged (acks=1) by broker %d", ps.values, ps.tp, base, leader)
		return
	}
	acked := s.Hist.Acked[ps.tp]
	if acked == nil {
		acked = map[int64]string{}
		s.Hist.Acked[ps.tp] = acked
	}
	for k, v := range ps.values {
		acked[base+int64(k)] = v
		s.Hist.Checker.Ack(v, base+int64(k))
	}
	s.W.Tracef("produce %v at %s@%d acknowledged (acks=-1) by broker %d", ps.values, ps.tp, base, leader)
}

// serveProduce is the leader's produce path: refusals before the append
// (not the leader, below min.insync.replicas), the append, and for acks=-1
// the wait in the purgatory (pollProduces).
func (b *Broker) serveProduce(req *produceReq, reply func(any)) {
	p := b.partition(req.tp)
	if p == nil {
		reply(produceResp{code: kerr.NotLeaderForPartition.Code})
		return
	}
	now := b.s.W.Now
	res, err := p.AppendAsLeader(req.batch, req.acks, b.s.Opt.MinISR, now)
	if err != nil {
		b.s.W.Tracef("broker %d produce to %s refused: %v", b.ID, req.tp, err)
		reply(produceResp{code: replica.ErrorCode(err)})
		return
	}
	b.s.W.Tracef("broker %d appended %s@%d-%d (epoch %d, acks %d)", b.ID, req.tp, res.Info.FirstOffset, res.Info.LastOffset, p.LeaderEpoch(), req.acks)
	if req.acks != -1 {
		reply(produceResp{base: res.Info.FirstOffset, appended: true})
		return
	}
	res.Wait.Deadline = now + b.s.Opt.ProduceTimeoutMs
	b.produces = append(b.produces, &parkedProduce{p: p, wait: res.Wait, base: res.Info.FirstOffset, reply: reply})
	b.s.W.At(res.Wait.Deadline, func() {}) // the wait is polled after every event
}

// pollProduces answers the parked produces that are decided.
func (b *Broker) pollProduces() {
	keep := b.produces[:0]
	for _, pp := range b.produces {
		st := pp.p.PollProduce(&pp.wait, b.s.W.Now)
		if st == replica.AckPending {
			keep = append(keep, pp)
			continue
		}
		pp.reply(produceResp{code: st.ErrorCode(), base: pp.base, appended: true})
	}
	clear(b.produces[len(keep):])
	b.produces = keep
}

// consume reads partition i from the consumer's position (now and then a
// seek to an earlier offset) at its leader, up to the high watermark.
func (s *Sim) consume(i int) {
	sp := s.Parts[i]
	tp := sp.TP
	pm := s.cl.meta[tp]
	if pm.Leader < 1 {
		s.refreshMeta()
		return
	}
	pos := s.cl.pos[tp]
	if pos > 0 && s.W.Chance(0.1) {
		pos = s.W.Int64n(pos + 1)
		s.cl.pos[tp] = pos
		s.Hist.Checker.Reset("consumer")
	}
	b := s.Brokers[pm.Leader]
	req := &consumeReq{tp: tp, offset: pos, epoch: pm.LeaderEpoch}
	s.Net.Call(Conn{From: ClientNode, To: pm.Leader, Kind: ConnClient}, true, 0,
		func(reply func(any)) { b.serveConsume(req, reply) },
		func(resp any, err error) {
			if err != nil {
				s.refreshMeta()
				return
			}
			s.consumed(i, b.ID, req, resp.(consumeResp))
		})
}

func (s *Sim) consumed(i int, from int32, req *consumeReq, r consumeResp) {
	tp := req.tp
	if s.cl.pos[tp] != req.offset {
		return // another poll moved the position meanwhile
	}
	switch r.code {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		s.cl.pos[tp] = r.logStart
		s.Hist.Checker.Reset("consumer")
		return
	default:
		s.refreshMeta()
		return
	}
	it := record.NewIterator(r.data, record.ScanOptions{VerifyCRC: true})
	n := 0
	for it.Next() {
		recs, err := it.Batch().Records(nil)
		if err != nil {
			s.fail("consumer: decoding %s: %v", tp, err)
			return
		}
		for _, rec := range recs {
			if rec.Offset < req.offset {
				continue
			}
			s.cl.pos[tp] = rec.Offset + 1
			if rec.Offset < s.deleted[tp] {
				// Deleted: a crash brought it back (the log start is
				// durable only at its checkpoint); no promise holds.
				continue
			}
			if rec.Offset >= r.hw {
				s.fail("consumer read %s offset %d at or past the high watermark %d of broker %d", tp, rec.Offset, r.hw, from)
			}
			v := string(rec.Value)
			if old, ok := s.reads[tp][rec.Offset]; ok && old != v {
				s.fail("consumer read %s offset %d as %q, earlier as %q", tp, rec.Offset, v, old)
			}
			if s.reads[tp] == nil {
				s.reads[tp] = map[int64]string{}
			}
			s.reads[tp][rec.Offset] = v
			s.Hist.Checker.Read("consumer", int32(i), rec.Offset, v)
			s.Hist.Reads++
			n++
		}
	}
	if it.Err() != nil && !errors.Is(it.Err(), record.ErrTruncated) {
		s.fail("consumer: %s: %v", tp, it.Err())
	}
	if n > 0 {
		s.W.Tracef("consumer read %d records of %s from %d on broker %d (hw %d)", n, tp, req.offset, from, r.hw)
	}
}

// serveConsume answers a consumer's fetch: KIP-320's epoch check, then up
// to 4 KiB of whole batches below the high watermark.
func (b *Broker) serveConsume(req *consumeReq, reply func(any)) {
	p := b.partition(req.tp)
	if p == nil {
		reply(consumeResp{code: kerr.NotLeaderForPartition.Code})
		return
	}
	if err := p.CheckLeaderEpoch(req.epoch, true); err != nil {
		reply(consumeResp{code: replica.ErrorCode(err)})
		return
	}
	r, err := p.ReadCommitted(req.offset, 4096)
	if err != nil {
		code := kerr.KafkaStorageError.Code
		if errors.Is(err, segment.ErrOffsetOutOfRange) {
			code = kerr.OffsetOutOfRange.Code
		} else {
			b.s.fail("broker %d: consumer read of %s at %d: %v", b.ID, req.tp, req.offset, err)
		}
		reply(consumeResp{code: code, logStart: p.Log().LogStartOffset()})
		return
	}
	data, err := r.ReadInto(nil)
	r.Release()
	if err != nil {
		b.s.fail("broker %d: consumer read of %s: %v", b.ID, req.tp, err)
		return
	}
	reply(consumeResp{data: data, hw: p.HighWatermark(), logStart: p.Log().LogStartOffset()})
}

// refreshMeta asks a random broker for metadata (one request at a time);
// an entry replaces the client's only with a leader epoch at least as new.
func (s *Sim) refreshMeta() {
	if s.cl.metaInflight {
		return
	}
	s.cl.metaInflight = true
	b := s.Brokers[1+s.W.Intn(s.Opt.Brokers)]
	s.Net.Call(Conn{From: ClientNode, To: b.ID, Kind: ConnClient}, true, 0,
		func(reply func(any)) { reply(b.meta.answer()) },
		func(resp any, err error) {
			s.cl.metaInflight = false
			if err != nil {
				return
			}
			r := resp.(metadataResp)
			if r.controller >= 0 {
				s.cl.controller = r.controller
			}
			for tp, pm := range r.parts {
				if old, ok := s.cl.meta[tp]; !ok || pm.LeaderEpoch >= old.LeaderEpoch {
					s.cl.meta[tp] = pm
				}
			}
		})
}

// electPreferred is an admin's ElectLeaders (preferred) for every partition,
// sent to the controller the metadata names.
func (s *Sim) electPreferred() {
	ctrl := s.cl.controller
	if ctrl < 1 {
		return
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 1
	req.TimeoutMillis = 1000
	for _, t := range s.Topics {
		if !t.created {
			continue
		}
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic = t.Name
		for p := range t.Replicas {
			rt.Partitions = append(rt.Partitions, int32(p))
		}
		req.Topics = append(req.Topics, rt)
	}
	s.stats.PreferredElections++
	s.W.Tracef("admin: ElectLeaders (preferred) -> broker %d", ctrl)
	to := s.Brokers[ctrl]
	w := encodeReq(req)
	s.Net.Call(Conn{From: ClientNode, To: ctrl, Kind: ConnClient}, true, 0,
		func(reply func(any)) { to.serveController(w, reply) },
		func(resp any, err error) {
			if err != nil {
				return
			}
			d, derr := decodeResp(resp.(wire))
			if derr != nil {
				s.fail("admin: %v", derr)
				return
			}
			r := d.(*kmsg.ElectLeadersResponse)
			s.W.Tracef("admin: ElectLeaders answered %d", r.ErrorCode)
		})
}
