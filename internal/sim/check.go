package sim

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/internal/vfs"
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

// checkStep checks the invariants that hold after every event: on every
// broker a partition's leader epoch never goes back and a leader's high
// watermark never goes back within its epoch; no two brokers lead one
// partition in the same epoch. (ZooKeeper's side is checked as writes land:
// zk.go.)
func (s *Sim) checkStep() {
	for _, b := range s.Brokers[1:] {
		if !b.up {
			continue
		}
		for len(s.obs[b.ID]) < len(s.Parts) {
			s.obs[b.ID] = append(s.obs[b.ID], observation{})
		}
		for i, sp := range s.Parts {
			p := b.partition(sp.TP)
			if p == nil {
				continue
			}
			role, epoch, hw := p.Role(), p.LeaderEpoch(), p.HighWatermark()
			o := s.obs[b.ID][i]
			if o.inc == b.inc {
				if epoch < o.epoch {
					s.fail("broker %d: leader epoch of %s went back from %d to %d", b.ID, sp.TP, o.epoch, epoch)
				}
				if role == replica.RoleLeader && o.role == replica.RoleLeader && epoch == o.epoch && hw < o.hw {
					s.fail("broker %d: high watermark of %s went back from %d to %d as leader in epoch %d", b.ID, sp.TP, o.hw, hw, epoch)
				}
			}
			if role == replica.RoleLeader && (o.role != role || o.epoch != epoch || o.inc != b.inc) {
				lk := leaderKey{i, epoch}
				if other, ok := s.leaderOf[lk]; ok && other != b.ID {
					s.fail("%s: brokers %d and %d both led epoch %d", sp.TP, other, b.ID, epoch)
				}
				s.leaderOf[lk] = b.ID
			}
			s.obs[b.ID][i] = observation{inc: b.inc, role: role, epoch: epoch, hw: hw}
		}
	}
}

// converged reports whether the healed cluster is quiet: every broker up and
// registered; one active controller, the one /controller names, at the
// latest epoch; every partition led with every replica in its ISR in
// ZooKeeper, the brokers agreeing (roles, epochs, metadata), and every
// replica at the leader's log end with the high watermark there.
func (s *Sim) converged() bool {
	if s.cl.open > 0 {
		return false // the clients wait for answers
	}
	for _, b := range s.Brokers[1:] {
		if !b.up || b.member.session == 0 || b.member.session != b.member.zk.SessionID() {
			return false
		}
	}
	m := s.activeController()
	if m == nil || s.controllerNow() != m.b.ID || m.ctrlEpoch != s.maxCtrlEpoch || m.writing || len(m.writes) > 0 {
		return false
	}
	for _, t := range s.Topics {
		if !t.created {
			return false
		}
	}
	for _, sp := range s.Parts {
		st, ok := s.zkState[sp.TP]
		if !ok || st.Leader < 1 || len(st.ISR) != len(sp.Replicas) {
			return false
		}
		lp := s.Brokers[st.Leader].partition(sp.TP)
		if lp == nil || lp.Role() != replica.RoleLeader || lp.LeaderEpoch() != st.LeaderEpoch || len(lp.ISR()) != len(sp.Replicas) {
			return false
		}
		leo := lp.Log().LogEndOffset()
		for _, r := range sp.Replicas {
			p := s.Brokers[r].partition(sp.TP)
			if p == nil || p.Log().LogEndOffset() != leo || p.HighWatermark() != leo || p.LeaderEpoch() != st.LeaderEpoch {
				return false
			}
		}
		for _, b := range s.Brokers[1:] {
			if pm, ok := b.meta.parts[sp.TP]; !ok || pm.Leader != st.Leader || pm.LeaderEpoch != st.LeaderEpoch {
				return false
			}
		}
	}
	return true
}

// segBatch is one batch of a replica's segment files.
type segBatch struct {
	base, last int64
	epoch      int32
	raw        []byte
}

// readSegmentFiles reads every batch of a stopped partition's .log files,
// in order (CRC checked).
func readSegmentFiles(fsys vfs.FS, dir string) ([]segBatch, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []segBatch
	for _, n := range names {
		if !strings.HasSuffix(n, segment.LogSuffix) {
			continue
		}
		f, err := fsys.Open(path.Join(dir, n))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		it := record.NewIterator(data, record.ScanOptions{VerifyCRC: true})
		for it.Next() {
			b := it.Batch()
			out = append(out, segBatch{base: b.BaseOffset(), last: b.LastOffset(), epoch: b.PartitionLeaderEpoch(), raw: slices.Clone(it.Entry())})
		}
		if err := it.Err(); err != nil {
			return out, fmt.Errorf("%s: %w", n, err)
		}
	}
	return out, nil
}

// finalCheck stops the converged cluster cleanly and compares the
// replicas' segment files and the history: every replica holds the same
// batches, byte for byte, from the partitions' common log start to the high
// watermark; leader epochs never decrease along a log; loading each
// stopped log finds nothing to cut; and internal/history's checks (lost,
// moved, inconsistent, lost and aborted reads, phantoms, divergent
// replicas) with no value twice (the producer retries only what was
// refused before the append).
func (s *Sim) finalCheck() {
	type partEnd struct{ hw, start int64 }
	ends := make([]partEnd, len(s.Parts))
	for i, sp := range s.Parts {
		lp := s.Brokers[s.zkState[sp.TP].Leader].partition(sp.TP)
		ends[i].hw = lp.HighWatermark()
		// A log start is durable only at its checkpoint: after a crash it
		// may come back lower (in Kafka too), and what it uncovers was
		// deleted and may differ between replicas. Compare from the
		// highest log start and DeleteRecords offset.
		ends[i].start = s.deleted[sp.TP]
		for _, r := range sp.Replicas {
			ends[i].start = max(ends[i].start, s.Brokers[r].partition(sp.TP).Log().LogStartOffset())
		}
	}
	for _, b := range s.Brokers[1:] {
		if err := b.stop(); err != nil {
			s.fail("broker %d: clean stop: %v", b.ID, err)
		}
	}
	var replicas []history.Replica
	for i, sp := range s.Parts {
		hw, start := ends[i].hw, ends[i].start
		s.Hist.Checker.Deleted(int32(i), start)
		var first []segBatch
		for k, r := range sp.Replicas {
			fsys := s.Brokers[r].FS
			dir := path.Join(LogDir, sp.TP.String())
			if rep, err := segment.Inspect(dir, &segment.Options{FS: fsys, Logger: quiet}); err != nil {
				s.fail("inspecting %s on broker %d: %v", sp.TP, r, err)
			} else if rep.BytesTruncated > 0 || rep.SegmentsRemoved > 0 || len(rep.TempFilesRemoved) > 0 {
				s.fail("%s on broker %d after a clean stop: loading would cut %d bytes, remove %d segments, %v", sp.TP, r, rep.BytesTruncated, rep.SegmentsRemoved, rep.TempFilesRemoved)
			}
			bs, err := readSegmentFiles(fsys, dir)
			if err != nil {
				s.fail("reading %s's segment files on broker %d: %v", sp.TP, r, err)
			}
			hr := history.Replica{Broker: r, Partition: int32(i), HighWatermark: hw}
			var kept []segBatch
			prev := int32(-1)
			for _, bt := range bs {
				if bt.last < start {
					continue // deleted: what a crash uncovers below the log start may be anything
				}
				if bt.epoch < prev {
					s.fail("%s: broker %d's log goes from epoch %d back to %d at offset %d", sp.TP, r, prev, bt.epoch, bt.base)
				}
				prev = bt.epoch
				if bt.last >= hw {
					continue
				}
				if bt.base >= start {
					// A batch across the log start may be whole on one
					// replica and absent on one that started over there.
					kept = append(kept, bt)
				}
				recs, err := record.Batch(bt.raw).Records(nil)
				if err != nil {
					s.fail("%s on broker %d: batch at %d: %v", sp.TP, r, bt.base, err)
					continue
				}
				for _, rec := range recs {
					if rec.Offset >= start {
						hr.Records = append(hr.Records, history.Record{Offset: rec.Offset, Value: string(rec.Value)})
					}
				}
			}
			replicas = append(replicas, hr)
			if k == 0 {
				first = kept
				continue
			}
			if d := diffBatches(first, kept); d != "" {
				s.fail("%s: broker %d's segment files differ from broker %d's below the high watermark %d: %s", sp.TP, r, sp.Replicas[0], hw, d)
			}
		}
	}
	rep := s.Hist.Checker.Check(replicas)
	if err := rep.Err(); err != nil {
		s.fail("%v", err)
	}
	if rep.Duplicates > 0 {
		s.fail("%d values at more than one offset, with a producer that retries only refusals (%s)", rep.Duplicates, rep.Summary())
	}
	if rep.Pending > 0 {
		s.fail("%d sends still pending at the end", rep.Pending)
	}
	s.report = rep
}

func diffBatches(a, b []segBatch) string {
	for i := range min(len(a), len(b)) {
		if !bytes.Equal(a[i].raw, b[i].raw) {
			return fmt.Sprintf("batch %d: [%d, %d] epoch %d vs [%d, %d] epoch %d", i, a[i].base, a[i].last, a[i].epoch, b[i].base, b[i].last, b[i].epoch)
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d batches vs %d", len(a), len(b))
	}
	return ""
}
