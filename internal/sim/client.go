package sim

import (
	"errors"
	"fmt"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
)

// History is what the clients saw: every send, acknowledgement, refusal and
// read goes to Checker (internal/history, the checker the real-process fault
// tests use); Acked and Refused also feed the simulation's own end checks.
type History struct {
	Checker *history.History
	// Acked holds every record acknowledged under acks=-1, by partition:
	// offset -> value.
	Acked map[replica.TopicPartition]map[int64]string
	// Refused holds the values whose produce was refused before the append:
	// they must never appear.
	Refused map[string]bool
	// Unknown counts produces whose outcome is unknown (timed out, leadership
	// lost, not enough replicas after the append): their records may or may
	// not be in the log.
	Unknown int
	// Produced counts produce requests sent; Reads records read.
	Produced, Reads int
}

func newHistory() *History {
	return &History{
		Checker: history.New(),
		Acked:   map[replica.TopicPartition]map[int64]string{},
		Refused: map[string]bool{},
	}
}

// pendingProduce is an acks=-1 produce waiting for its outcome.
type pendingProduce struct {
	tp     replica.TopicPartition
	broker *Broker
	inc    int
	p      *replica.Partition
	wait   replica.ProduceWait
	base   int64
	values []string
}

// produce sends one acks=-1 batch of 1-3 new values to the partition's
// leader as the controller knows it.
func (s *Sim) produce(tp replica.TopicPartition) {
	ps := s.Ctrl.partition(tp)
	if ps.Leader < 0 {
		return
	}
	b := s.Brokers[ps.Leader]
	p := b.partition(tp)
	if p == nil {
		return // the client cannot connect, or the broker has not heard yet
	}
	n := 1 + s.W.Intn(3)
	vals := make([]string, n)
	recs := make([]record.Record, n)
	for i := range vals {
		s.seq++
		vals[i] = fmt.Sprintf("%s-%d", tp, s.seq)
		recs[i] = record.Record{Timestamp: s.W.Now, Value: []byte(vals[i])}
	}
	batch, err := record.AppendBatch(nil, record.DefaultBatchOptions(), recs)
	if err != nil {
		panic(err)
	}
	s.Hist.Produced++
	for _, v := range vals {
		s.Hist.Checker.Send(v, tp.Partition)
	}
	res, err := p.AppendAsLeader(batch, -1, s.Opt.MinISR, s.W.Now)
	switch {
	case errors.Is(err, replica.ErrNotEnoughReplicas), errors.Is(err, replica.ErrNotLeader):
		for _, v := range vals {
			s.Hist.Refused[v] = true
			s.Hist.Checker.Fail(v, true)
		}
		s.W.Tracef("produce %v to broker %d refused: %v", vals, b.ID, err)
		return
	case err != nil:
		s.Hist.Unknown++
		for _, v := range vals {
			s.Hist.Checker.Fail(v, false)
		}
		s.W.Tracef("produce %v to broker %d failed: %v", vals, b.ID, err)
		return
	}
	res.Wait.Deadline = s.W.Now + s.Opt.ProduceTimeoutMs
	s.W.Tracef("produce %v to broker %d at %d (epoch %d)", vals, b.ID, res.Info.FirstOffset, p.LeaderEpoch())
	s.pending = append(s.pending, &pendingProduce{tp: tp, broker: b, inc: b.inc, p: p, wait: res.Wait, base: res.Info.FirstOffset, values: vals})
	s.W.At(res.Wait.Deadline, func() {}) // an event at the deadline: the wait is polled then
}

// pollProduces decides the pending produces that can be decided.
func (s *Sim) pollProduces() {
	keep := s.pending[:0]
	for _, pp := range s.pending {
		st := replica.AckNotLeader
		if pp.broker.inc == pp.inc {
			st = pp.p.PollProduce(&pp.wait, s.W.Now)
		}
		switch st {
		case replica.AckPending:
			keep = append(keep, pp)
			continue
		case replica.AckCommitted:
			acked := s.Hist.Acked[pp.tp]
			if acked == nil {
				acked = map[int64]string{}
				s.Hist.Acked[pp.tp] = acked
			}
			for i, v := range pp.values {
				acked[pp.base+int64(i)] = v
				s.Hist.Checker.Ack(v, pp.base+int64(i))
			}
			s.W.Tracef("produce %v at %s@%d acknowledged", pp.values, pp.tp, pp.base)
		default:
			s.Hist.Unknown++
			for _, v := range pp.values {
				s.Hist.Checker.Fail(v, false)
			}
			s.W.Tracef("produce %v at %s@%d: %v", pp.values, pp.tp, pp.base, st)
		}
	}
	clear(s.pending[len(keep):])
	s.pending = keep
}

// consume reads a partition from its leader up to the high watermark,
// from a random offset, and records what it read.
func (s *Sim) consume(tp replica.TopicPartition) {
	ps := s.Ctrl.partition(tp)
	if ps.Leader < 0 {
		return
	}
	b := s.Brokers[ps.Leader]
	p := b.partition(tp)
	if p == nil || p.Role() != replica.RoleLeader {
		return
	}
	l := p.Log()
	hw := p.HighWatermark()
	start := l.LogStartOffset()
	if hw <= start {
		return
	}
	from := start + s.W.Int64n(hw-start)
	r, err := p.ReadCommitted(from, 4096)
	if err != nil {
		s.fail("consumer: reading %s at %d from broker %d: %v", tp, from, b.ID, err)
		return
	}
	buf, err := r.ReadInto(nil)
	r.Release()
	if err != nil {
		s.fail("consumer: reading %s: %v", tp, err)
		return
	}
	s.Hist.Checker.Reset("consumer") // each poll starts at a random offset: a seek
	it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
	n := 0
	for it.Next() {
		recs, err := it.Batch().Records(nil)
		if err != nil {
			s.fail("consumer: decoding %s: %v", tp, err)
			return
		}
		for _, rec := range recs {
			if rec.Offset >= hw {
				s.fail("consumer read %s offset %d at or past the high watermark %d of broker %d", tp, rec.Offset, hw, b.ID)
			}
			v := string(rec.Value)
			// Checked at once too, for a trace that ends where it went wrong.
			if old, ok := s.reads[tp][rec.Offset]; ok && old != v {
				s.fail("consumer read %s offset %d as %q, earlier as %q", tp, rec.Offset, v, old)
			}
			if s.reads[tp] == nil {
				s.reads[tp] = map[int64]string{}
			}
			s.reads[tp][rec.Offset] = v
			s.Hist.Checker.Read("consumer", tp.Partition, rec.Offset, v)
			s.Hist.Reads++
			n++
		}
	}
	if it.Err() != nil && !errors.Is(it.Err(), record.ErrTruncated) {
		s.fail("consumer: %s: %v", tp, it.Err())
	}
	s.W.Tracef("consumer read %d records of %s from %d on broker %d (hw %d)", n, tp, from, b.ID, hw)
}
