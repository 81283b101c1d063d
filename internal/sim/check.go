package sim

import (
	"fmt"
	"slices"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// observation is what the step checks last saw of a broker's partition.
type observation struct {
	inc   int
	role  replica.Role
	epoch int32
	hw    int64
}

// fail records an invariant violation (the run goes on, to report them all).
func (s *Sim) fail(format string, args ...any) {
	msg := fmt.Sprintf("t=%d: ", s.W.Now) + fmt.Sprintf(format, args...)
	s.W.Tracef("VIOLATION %s", msg)
	if len(s.violations) < 20 {
		s.violations = append(s.violations, msg)
	}
}

// checkStep checks the invariants that hold after every event.
func (s *Sim) checkStep() {
	for _, b := range s.Brokers[1:] {
		if !b.up {
			continue
		}
		for i, ps := range s.Ctrl.Parts {
			p := b.partition(ps.TP)
			if p == nil {
				continue
			}
			role, epoch, hw := p.Role(), p.LeaderEpoch(), p.HighWatermark()
			o := &s.obs[b.ID][i]
			if o.inc == b.inc {
				if epoch < o.epoch {
					s.fail("broker %d: leader epoch of %s went back from %d to %d", b.ID, ps.TP, o.epoch, epoch)
				}
				if role == replica.RoleLeader && o.role == replica.RoleLeader && epoch == o.epoch && hw < o.hw {
					s.fail("broker %d: high watermark of %s went back from %d to %d as leader in epoch %d", b.ID, ps.TP, o.hw, hw, epoch)
				}
			}
			if role == replica.RoleLeader {
				if other, ok := s.leaderOf[i][epoch]; ok && other != b.ID {
					s.fail("%s: brokers %d and %d both led epoch %d", ps.TP, other, b.ID, epoch)
				}
				s.leaderOf[i][epoch] = b.ID
			}
			*o = observation{inc: b.inc, role: role, epoch: epoch, hw: hw}
		}
	}
}

// joinedISR notes that broker r joined a partition's ISR (the controller
// accepted it): it holds everything below the high watermark again.
func (s *Sim) joinedISR(tp replica.TopicPartition, r int32) {
	for i, ps := range s.Ctrl.Parts {
		if ps.TP == tp {
			s.lostPower[i][r] = false
		}
	}
}

// powerLossAllowed tells whether broker id may lose its unsynced data now
// (see the package doc). Without application fsync the records a power
// loss takes live on in the other ISR members' page caches; they are lost
// only if the broker that lost them becomes the ISR's last member and is
// elected (KIP-966), which the controller does when the others leave the
// ISR before it. So a power loss is allowed only when every other broker
// is up, in touch with the controller, in every ISR and has not lost power
// since it last joined one, and no broker is still recovering from one:
// the broker that loses power is then the first to leave the ISRs.
func (s *Sim) powerLossAllowed(id int32) bool {
	if s.Opt.FlushEveryMessage {
		return true
	}
	for i, ps := range s.Ctrl.Parts {
		for _, b := range s.Brokers[1:] {
			if s.lostPower[i][b.ID] {
				return false
			}
			if b.ID == id {
				continue
			}
			if !b.up || !s.Ctrl.Live(b.ID) || s.Net.IsCut(ControllerID, b.ID) || !slices.Contains(ps.ISR, b.ID) {
				return false
			}
		}
	}
	return true
}

// logEntry is one record of a replica's log.
type logEntry struct {
	offset int64
	epoch  int32
	value  string
}

// readAll returns the records of l below end.
func readAll(l *segment.Log, end int64) ([]logEntry, error) {
	var out []logEntry
	var buf []byte
	for off := l.LogStartOffset(); off < end; {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			return out, err
		}
		if r.Len == 0 {
			r.Release()
			break
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			return out, err
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		next := off
		for it.Next() {
			bt := it.Batch()
			recs, err := bt.Records(nil)
			if err != nil {
				return out, err
			}
			for _, rec := range recs {
				if rec.Offset < end {
					out = append(out, logEntry{rec.Offset, bt.PartitionLeaderEpoch(), string(rec.Value)})
				}
			}
			next = bt.LastOffset() + 1
		}
		if err := it.Err(); err != nil {
			return out, err
		}
		if next <= off {
			break
		}
		off = next
	}
	return out, nil
}

// converged reports whether the healed cluster is quiet: every broker up and
// live, every partition led with every replica in its ISR, and every
// replica at the leader's log end with the high watermark there.
func (s *Sim) converged() bool {
	for _, b := range s.Brokers[1:] {
		if !b.up || !s.Ctrl.Live(b.ID) {
			return false
		}
	}
	for _, ps := range s.Ctrl.Parts {
		if ps.Leader < 0 || len(ps.ISR) != len(ps.Replicas) {
			return false
		}
		lp := s.Brokers[ps.Leader].partition(ps.TP)
		if lp == nil || lp.Role() != replica.RoleLeader || lp.LeaderEpoch() != ps.LeaderEpoch || len(lp.ISR()) != len(ps.Replicas) {
			return false
		}
		leo := lp.Log().LogEndOffset()
		for _, r := range ps.Replicas {
			p := s.Brokers[r].partition(ps.TP)
			if p == nil || p.Log().LogEndOffset() != leo || p.HighWatermark() != leo || p.LeaderEpoch() != ps.LeaderEpoch {
				return false
			}
		}
	}
	return true
}

// finalCheck compares the replicas and the history once the cluster is
// quiet: internal/history's checks (lost, moved, inconsistent, lost and
// aborted reads, phantoms, divergent replicas) over every replica's records
// from the partition's common log start, and the simulation's own: every
// replica equal to the leader below the high watermark, batch epochs never
// going back along a log, no value twice (the producer never retries).
func (s *Sim) finalCheck() {
	var replicas []history.Replica
	for _, ps := range s.Ctrl.Parts {
		lp := s.Brokers[ps.Leader].partition(ps.TP)
		hw := lp.HighWatermark()
		// A log start is durable only at its checkpoint: after a crash it
		// may come back lower (in Kafka too). Compare where all hold records.
		start := int64(0)
		for _, r := range ps.Replicas {
			start = max(start, s.Brokers[r].partition(ps.TP).Log().LogStartOffset())
		}
		s.Hist.Checker.Deleted(ps.TP.Partition, start)
		logs := map[int32][]logEntry{}
		for _, r := range ps.Replicas {
			p := s.Brokers[r].partition(ps.TP)
			es, err := readAll(p.Log(), p.Log().LogEndOffset())
			if err != nil {
				s.fail("reading %s on broker %d: %v", ps.TP, r, err)
				continue
			}
			es = slices.DeleteFunc(es, func(e logEntry) bool { return e.offset < start })
			logs[r] = es
			hr := history.Replica{Broker: r, Partition: ps.TP.Partition, HighWatermark: p.HighWatermark()}
			for k, e := range es {
				hr.Records = append(hr.Records, history.Record{Offset: e.offset, Value: e.value})
				if k > 0 && e.epoch < es[k-1].epoch {
					s.fail("%s: broker %d's log goes from epoch %d back to %d at offset %d", ps.TP, r, es[k-1].epoch, e.epoch, e.offset)
				}
			}
			replicas = append(replicas, hr)
		}
		lead := slices.DeleteFunc(slices.Clone(logs[ps.Leader]), func(e logEntry) bool { return e.offset >= hw })
		for _, r := range ps.Replicas {
			committed := slices.DeleteFunc(slices.Clone(logs[r]), func(e logEntry) bool { return e.offset >= hw })
			if !slices.Equal(committed, lead) {
				s.fail("%s: broker %d's records below the high watermark %d differ from leader %d's: %s", ps.TP, r, hw, ps.Leader, firstDiff(committed, lead))
			}
		}
	}
	rep := s.Hist.Checker.Check(replicas)
	if err := rep.Err(); err != nil {
		s.fail("%v", err)
	}
	if rep.Duplicates > 0 {
		s.fail("%d values at more than one offset, with a producer that never retries (%s)", rep.Duplicates, rep.Summary())
	}
	if rep.Pending > 0 {
		s.fail("%d sends still pending at the end", rep.Pending)
	}
	s.report = rep
}

func firstDiff(a, b []logEntry) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %v vs %v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}
