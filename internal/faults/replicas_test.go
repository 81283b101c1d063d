package faults

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
	"github.com/stratalog/strata/tools"
)

// readReplica reads broker b's copy of partition p from its log dirs
// (the broker stopped): every batch of every segment, in offset order,
// straight from the .log files (nothing is opened for writing), and the
// high watermark in the replication-offset-checkpoint of its dir.
func readReplica(t testing.TB, b *broker, p int32) history.Replica {
	t.Helper()
	rep := history.Replica{Broker: b.id, Partition: p, Batches: []history.Batch{}}
	tp := replica.TopicPartition{Topic: topic, Partition: p}
	var dir string
	for _, d := range b.dirs() {
		if _, err := os.Stat(filepath.Join(d, tp.String())); err == nil {
			dir = d
		}
	}
	if dir == "" {
		t.Errorf("broker %d: no %s in %v", b.id, tp, b.dirs())
		return rep
	}
	hws, err := replica.ReadHighWatermarks(vfs.OS, dir)
	if err != nil {
		t.Errorf("broker %d: %s: replication-offset-checkpoint: %v", b.id, dir, err)
	}
	rep.HighWatermark = hws[tp]
	dir = filepath.Join(dir, tp.String())
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("broker %d: %v", b.id, err)
		return rep
	}
	var bases []int64
	for _, e := range ents {
		if base, suffix, ok := segment.ParseFileName(e.Name()); ok && suffix == ".log" {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	var rr record.RecordReader
	for _, base := range bases {
		path := segment.FilePath(dir, base, ".log")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("broker %d: %v", b.id, err)
			return rep
		}
		it := record.NewIterator(data, record.ScanOptions{})
		for it.Next() {
			batch := it.Batch()
			rep.Batches = append(rep.Batches, history.Batch{BaseOffset: batch.BaseOffset(), LastOffset: batch.LastOffset(),
				LeaderEpoch: batch.PartitionLeaderEpoch(), CRC: batch.CRC()})
			rr.Reset(batch, it.Pos())
			for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
				rep.Records = append(rep.Records, history.Record{Offset: rec.Offset, Value: string(rec.Value)})
			}
			if err := rr.Err(); err != nil {
				t.Errorf("broker %d: %s: %v", b.id, path, err)
			}
		}
		if err := it.Err(); err != nil {
			t.Errorf("broker %d: %s: %v", b.id, path, err)
		}
	}
	return rep
}

// verify runs `strata verify` on broker b's log dirs and returns its exit
// status and output.
func verify(b *broker) (int, string) {
	var out bytes.Buffer
	code := tools.Main(append([]string{"strata", "verify"}, b.dirs()...), &out, &out)
	return code, out.String()
}

// verifyDirs runs `strata verify` on broker b's log dirs: it must find
// nothing wrong.
func verifyDirs(t testing.TB, b *broker) {
	t.Helper()
	if code, out := verify(b); code != 0 {
		t.Errorf("strata verify %v (broker %d): exit status %d\n%s", b.dirs(), b.id, code, out)
	}
}

// checkSettledReplicas checks replicas read after the cluster settled
// (every replica held the whole log before the brokers stopped): for each
// partition, every replica holds the same batches, batch by batch, below
// the highest checkpointed high watermark, the partition's.
func checkSettledReplicas(t testing.TB, reps []history.Replica) {
	t.Helper()
	byPart := map[int32][]history.Replica{}
	for _, r := range reps {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for _, p := range keys(byPart) {
		rs := byPart[p]
		best := 0
		for i, r := range rs {
			if r.HighWatermark > rs[best].HighWatermark {
				best = i
			}
		}
		hw := rs[best].HighWatermark
		want := batchesBelow(rs[best].Batches, hw)
		if n := len(want); n > 0 && want[n-1].LastOffset+1 != hw {
			t.Errorf("partition %d: broker %d's batches below its high watermark %d end at %d", p, rs[best].Broker, hw, want[n-1].LastOffset+1)
		}
		for i, r := range rs {
			if i == best {
				continue
			}
			got := batchesBelow(r.Batches, hw)
			if len(got) != len(want) {
				t.Errorf("partition %d: broker %d holds %d batches below the high watermark %d, broker %d holds %d",
					p, r.Broker, len(got), hw, rs[best].Broker, len(want))
				continue
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("partition %d batch %d: broker %d holds %s, broker %d holds %s", p, k, r.Broker, got[k], rs[best].Broker, want[k])
					break
				}
			}
		}
	}
}

func batchesBelow(bs []history.Batch, limit int64) []history.Batch {
	i := sort.Search(len(bs), func(i int) bool { return bs[i].BaseOffset >= limit })
	return bs[:i]
}

// finish ends a scenario: the producer stops, the cluster settles (full
// ISRs, high watermarks at the log ends), the consumer drains, every
// broker stops with SIGTERM; then every log dir passes `strata verify`,
// the replicas agree batch by batch up to the high watermark, and the
// history finds nothing wrong. It returns the history's report and the
// replicas read.
func (c *cluster) finish(l *load) (*history.Report, []history.Replica) {
	c.t.Helper()
	l.stopProducing()
	c.settle()
	st, _, _ := c.state()
	c.final = map[int32][]int32{}
	for p, pv := range st {
		c.final[p] = pv.replicas
	}
	l.drain(st)
	l.close()
	l.report()
	c.stopAll()
	return c.checkStopped(l.h)
}

// checkStopped is finish's checks on the stopped brokers' log dirs.
func (c *cluster) checkStopped(h *history.History) (*history.Report, []history.Replica) {
	t := c.t
	t.Helper()
	var reps []history.Replica
	for _, b := range c.b {
		verifyDirs(t, b)
		for p := int32(0); p < numParts; p++ {
			if c.final != nil && !slices.Contains(c.final[p], b.id) {
				continue // not a replica of p (moved away by a reassignment)
			}
			reps = append(reps, readReplica(t, b, p))
		}
	}
	checkSettledReplicas(t, reps)
	c.checkLogs()
	rep := h.Check(reps)
	if err := rep.Err(); err != nil {
		t.Errorf("%v", err)
	}
	var hws []string
	for _, r := range reps {
		hws = append(hws, fmt.Sprintf("b%d/p%d=%d", r.Broker, r.Partition, r.HighWatermark))
	}
	t.Logf("history: %s; %d replica pairs, %d batch pairs compared; high watermarks %v", rep.Summary(), rep.ReplicasCheck, rep.BatchesCheck, hws)
	return rep, reps
}

// valuesWithPrefix lists the values starting with prefix held by any
// replica, with where.
func valuesWithPrefix(reps []history.Replica, prefix string) []string {
	var out []string
	for _, r := range reps {
		for _, rec := range r.Records {
			if strings.HasPrefix(rec.Value, prefix) {
				out = append(out, fmt.Sprintf("%q on broker %d at %d@%d", rec.Value, r.Broker, r.Partition, rec.Offset))
			}
		}
	}
	return out
}

// maxIneligibleRefusals bounds the ISR expansions the controller may refuse
// for an ineligible replica in one scenario: a leader proposes only
// followers its metadata cache lists alive (replica.Config.IsrEligible), so
// a refusal needs the leader's cache and the controller to disagree for a
// moment; before that check, every fetch of a healed follower the
// controller did not know again drew a refused proposal (thousands a
// second).
const maxIneligibleRefusals = 20

// checkLogs checks what the brokers logged: no replica truncated below its
// high watermark (with unclean election off a committed record is never
// cut: KIP-101; the replica package warns "truncating below the high
// watermark"), and few ISR changes refused for an ineligible replica.
func (c *cluster) checkLogs() {
	c.t.Helper()
	n := 0
	for _, b := range c.b {
		n += b.logCount("ISR change refused: ineligible replica")
		if k := b.logCount(`msg="truncating below the high watermark"`); k > 0 {
			c.t.Errorf("broker %d truncated below its high watermark %d times", b.id, k)
		}
	}
	if n > maxIneligibleRefusals {
		c.t.Errorf("%d ISR changes refused for an ineligible replica (at most %d expected): leaders propose followers the controller does not count online", n, maxIneligibleRefusals)
	} else if n > 0 {
		c.t.Logf("%d ISR changes refused for an ineligible replica", n)
	}
}
