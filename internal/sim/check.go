package sim

import (
	"fmt"
	"slices"

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
// quiet.
func (s *Sim) finalCheck() {
	seen := map[string]string{} // value -> where, across partitions
	for _, ps := range s.Ctrl.Parts {
		lp := s.Brokers[ps.Leader].partition(ps.TP)
		hw, start := lp.HighWatermark(), lp.Log().LogStartOffset()
		lead, err := readAll(lp.Log(), lp.Log().LogEndOffset())
		if err != nil {
			s.fail("reading %s on leader %d: %v", ps.TP, ps.Leader, err)
			continue
		}
		// Below the log start records were deleted (DeleteRecords).
		lead = slices.DeleteFunc(lead, func(e logEntry) bool { return e.offset < start })
		byOffset := map[int64]logEntry{}
		for _, e := range lead {
			byOffset[e.offset] = e
		}
		for _, r := range ps.Replicas {
			p := s.Brokers[r].partition(ps.TP)
			es, err := readAll(p.Log(), p.Log().LogEndOffset())
			if err != nil {
				s.fail("reading %s on broker %d: %v", ps.TP, r, err)
				continue
			}
			// A log start is durable only at its checkpoint: after a crash it
			// may come back lower (Kafka too). Compare where both hold records.
			from := max(start, p.Log().LogStartOffset())
			es = slices.DeleteFunc(es, func(e logEntry) bool { return e.offset < from })
			committed := slices.DeleteFunc(slices.Clone(es), func(e logEntry) bool { return e.offset >= hw })
			want := slices.DeleteFunc(slices.Clone(lead), func(e logEntry) bool { return e.offset >= hw || e.offset < from })
			if !slices.Equal(committed, want) {
				s.fail("%s: broker %d's records below the high watermark %d differ from leader %d's: %s", ps.TP, r, hw, ps.Leader, firstDiff(committed, want))
			}
			for k := 1; k < len(es); k++ {
				if es[k].epoch < es[k-1].epoch {
					s.fail("%s: broker %d's log goes from epoch %d back to %d at offset %d", ps.TP, r, es[k-1].epoch, es[k].epoch, es[k].offset)
					break
				}
			}
			for _, e := range es {
				if s.Hist.Refused[e.value] {
					s.fail("%s: broker %d holds %q at %d, whose produce was refused", ps.TP, r, e.value, e.offset)
				}
			}
		}
		for _, e := range lead {
			where := fmt.Sprintf("%s@%d", ps.TP, e.offset)
			if old, dup := seen[e.value]; dup {
				s.fail("value %q at %s and at %s", e.value, old, where)
			}
			seen[e.value] = where
		}
		check := func(what string, m map[int64]string) {
			offs := make([]int64, 0, len(m))
			for o := range m {
				offs = append(offs, o)
			}
			slices.Sort(offs)
			for _, o := range offs {
				if o < start {
					continue // deleted
				}
				if e, ok := byOffset[o]; !ok || e.value != m[o] || o >= hw {
					s.fail("%s record %q at %s@%d is lost (leader %d has %q, high watermark %d)", what, m[o], ps.TP, o, ps.Leader, e.value, hw)
				}
			}
		}
		check("acknowledged", s.Hist.Acked[ps.TP])
		check("consumed", s.Hist.Read[ps.TP])
	}
}

func firstDiff(a, b []logEntry) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %v vs %v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}
