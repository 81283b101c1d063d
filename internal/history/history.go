// Package history checks a replicated log against what its clients were told,
// after Jepsen's Kafka workload (jepsen/tests/kafka.clj) and Kafka's own
// replication system test: every send is recorded with its outcome, every read
// with where it was seen, and at the end the final contents of every partition
// (on every replica) are compared with both.
//
// What counts as a failure (reference: kafka-replication.md §10):
//
//   - lost: a send acknowledged as durable (acks=-1 with enough in-sync
//     replicas, unclean election off) is missing from the final log;
//   - moved: an acknowledged value is in the final log, but not at the offset
//     it was acknowledged at;
//   - inconsistent: two different values at one (partition, offset) in any
//     acknowledgement, read or replica;
//   - lost read: a value a consumer read at an offset is not there in the
//     final log (a consumer saw a record that was later taken back);
//   - aborted read: a value whose send failed definitely (refused before the
//     append) was read or is in a final log;
//   - phantom: a value that was never sent was read or is on any replica;
//   - non-monotonic: one reader's offsets on a partition went back, or
//     repeated, without a Reset (rebalance or seek) in between;
//   - divergent replicas: two replicas of a partition differ below the
//     smaller of their high watermarks: in their records, or, when both
//     replicas list their batches, in any batch starting below it (its
//     offsets, leader epoch or CRC: a batch copied as it is has them all
//     the same; a value-level comparison misses a batch appended again in
//     another leader epoch).
//
// Duplicates (one value at several offsets, from client retries) and sends
// with an unknown outcome are counted, not failures. A History is safe for
// concurrent use.
package history

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Outcome is what the client was told about a send.
type Outcome int

// Send outcomes.
const (
	Pending Outcome = iota // sent, no answer yet
	Acked                  // acknowledged at an offset
	Failed                 // refused before the append: definitely not written
	Unknown                // timed out, connection lost, or refused after the append
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return "pending"
}

// send is one value's record.
type send struct {
	partition int32
	outcome   Outcome
	offset    int64 // when Acked
	weak      bool  // acknowledged without a durability promise (acks=1, unclean election)
}

// Record is one record of a partition as read back: its offset and value.
type Record struct {
	Offset int64
	Value  string
}

// Batch is one record batch of a replica's log as its header says: the
// offsets it spans, the leader epoch it was appended in, and its CRC (which
// covers everything after the epoch: attributes, timestamps, producer
// fields and records).
type Batch struct {
	BaseOffset, LastOffset int64
	LeaderEpoch            int32
	CRC                    uint32
}

func (b Batch) String() string {
	return fmt.Sprintf("offsets %d-%d epoch %d crc %08x", b.BaseOffset, b.LastOffset, b.LeaderEpoch, b.CRC)
}

// Replica is the final contents of one partition on one replica.
type Replica struct {
	Broker        int32
	Partition     int32
	HighWatermark int64
	Records       []Record // ascending offsets
	Batches       []Batch  // ascending offsets; optional (nil: records only)
}

type readKey struct {
	reader    string
	partition int32
}

type observation struct {
	value string
	where string
}

// History records sends and reads.
type History struct {
	mu       sync.Mutex
	sends    map[string]*send
	reads    []read
	lastRead map[readKey]int64
	nonMono  []string
	deleted  map[int32]int64 // partition -> offset below which records were deleted
}

type read struct {
	reader    string
	partition int32
	offset    int64
	value     string
}

// New returns an empty history.
func New() *History {
	return &History{sends: map[string]*send{}, lastRead: map[readKey]int64{}, deleted: map[int32]int64{}}
}

// Send records that value is about to be sent to partition. Values must be
// unique across the history.
func (h *History) Send(value string, partition int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sends[value] = &send{partition: partition, outcome: Pending, offset: -1}
}

// Ack records that value was acknowledged at offset.
func (h *History) Ack(value string, offset int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sends[value]; s != nil {
		s.outcome, s.offset = Acked, offset
	}
}

// AckWeak records that value was acknowledged at offset without a promise
// of durability (acks=1, or a topic with unclean election): its loss is
// counted (Report.WeakLost), not a failure.
func (h *History) AckWeak(value string, offset int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sends[value]; s != nil {
		s.outcome, s.offset, s.weak = Acked, offset, true
	}
}

// Fail records that value was refused; definite says it was refused before
// the append (so it must never appear), otherwise its outcome is unknown.
func (h *History) Fail(value string, definite bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sends[value]; s != nil && s.outcome == Pending {
		s.outcome = Unknown
		if definite {
			s.outcome = Failed
		}
	}
}

// Read records that reader saw value at (partition, offset) in one poll.
func (h *History) Read(reader string, partition int32, offset int64, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := readKey{reader, partition}
	if last, ok := h.lastRead[k]; ok && offset <= last {
		h.nonMono = append(h.nonMono, fmt.Sprintf("reader %s partition %d: offset %d after %d", reader, partition, offset, last))
	}
	h.lastRead[k] = offset
	h.reads = append(h.reads, read{reader, partition, offset, value})
}

// Deleted records that the records of partition below offset were deleted
// on purpose (retention, DeleteRecords): acknowledged values and reads below
// it are not looked for in the final log.
func (h *History) Deleted(partition int32, below int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deleted[partition] = max(h.deleted[partition], below)
}

// Reset forgets reader's position on every partition (a rebalance or a seek),
// so its next read may go back.
func (h *History) Reset(reader string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.lastRead {
		if k.reader == reader {
			delete(h.lastRead, k)
		}
	}
}

// Counts summarises the sends.
type Counts struct {
	Sent, Acked, Failed, Unknown, Pending int
}

// Report is the outcome of Check.
type Report struct {
	Counts
	Lost          []string
	Moved         []string
	Inconsistent  []string
	LostReads     []string
	AbortedReads  []string
	Phantoms      []string
	NonMonotonic  []string
	Divergent     []string
	WeakAcked     int // of Acked, acknowledged weakly
	WeakLost      int // weakly acknowledged values missing or moved
	Duplicates    int // values found at more than one offset
	UnknownFound  int // sends of unknown outcome that are in the final log
	Reads         int
	FinalRecords  int // records in the authoritative replica of each partition
	CheckedAcked  int // acknowledged values checked against the final log
	ReplicasCheck int // replica pairs compared
	BatchesCheck  int // batch pairs compared (replicas that list batches)
}

// OK reports whether the history holds no failure.
func (r *Report) OK() bool { return r.Err() == nil }

// Err is nil for a clean history, or an error listing the first failures of
// each kind.
func (r *Report) Err() error {
	var b strings.Builder
	for _, f := range []struct {
		name string
		list []string
	}{
		{"lost", r.Lost}, {"moved", r.Moved}, {"inconsistent", r.Inconsistent},
		{"lost read", r.LostReads}, {"aborted read", r.AbortedReads}, {"phantom", r.Phantoms},
		{"non-monotonic", r.NonMonotonic}, {"divergent replicas", r.Divergent},
	} {
		if len(f.list) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%d %s: %s", len(f.list), f.name, strings.Join(f.list[:min(len(f.list), 5)], "; "))
		if len(f.list) > 5 {
			b.WriteString("; ...")
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return nil
	}
	return fmt.Errorf("history: %s(%s)", b.String(), r.Summary())
}

// Summary is a one-line account of the history.
func (r *Report) Summary() string {
	return fmt.Sprintf("%d sent: %d acked (%d weakly, lost %d), %d failed, %d unknown (%d of them written), %d pending; %d reads; %d final records; %d duplicates",
		r.Sent, r.Acked, r.WeakAcked, r.WeakLost, r.Failed, r.Unknown, r.UnknownFound, r.Pending, r.Reads, r.FinalRecords, r.Duplicates)
}

// Check compares the history with the final replicas. For each partition the
// replica with the highest high watermark is authoritative (ties: the longest
// log); acknowledged values must be in it at their offsets. Replicas are
// compared pairwise below the smaller of their high watermarks.
func (h *History) Check(replicas []Replica) *Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	rep := &Report{Reads: len(h.reads)}
	rep.NonMonotonic = append(rep.NonMonotonic, h.nonMono...)
	for _, s := range h.sends {
		rep.Sent++
		switch s.outcome {
		case Acked:
			rep.Acked++
			if s.weak {
				rep.WeakAcked++
			}
		case Failed:
			rep.Failed++
		case Unknown:
			rep.Unknown++
		default:
			rep.Pending++
		}
	}

	byPart := map[int32][]Replica{}
	for _, r := range replicas {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })

	// at[p][offset] = value in the authoritative replica; where[value] = offsets.
	at := map[int32]map[int64]string{}
	where := map[string][]string{}
	for _, p := range parts {
		rs := byPart[p]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Broker < rs[j].Broker })
		best := 0
		for i, r := range rs {
			b := rs[best]
			if r.HighWatermark > b.HighWatermark || (r.HighWatermark == b.HighWatermark && len(r.Records) > len(b.Records)) {
				best = i
			}
		}
		for i, r := range rs {
			if i == best {
				continue // checked below with the final log
			}
			for _, rec := range r.Records {
				if h.sends[rec.Value] == nil {
					rep.Phantoms = append(rep.Phantoms, fmt.Sprintf("%q on broker %d at %d@%d was never sent", rec.Value, r.Broker, p, rec.Offset))
				}
			}
		}
		m := map[int64]string{}
		for _, rec := range rs[best].Records {
			m[rec.Offset] = rec.Value
			where[rec.Value] = append(where[rec.Value], fmt.Sprintf("%d@%d", p, rec.Offset))
			rep.FinalRecords++
		}
		at[p] = m
		h.compareReplicas(rep, p, rs)
	}

	// Values in the final logs: never-sent, definitely failed, duplicated.
	vals := make([]string, 0, len(where))
	for v := range where {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	for _, v := range vals {
		locs := where[v]
		if len(locs) > 1 {
			rep.Duplicates++
		}
		s := h.sends[v]
		switch {
		case s == nil:
			rep.Phantoms = append(rep.Phantoms, fmt.Sprintf("%q in the log at %s was never sent", v, locs[0]))
		case s.outcome == Failed:
			rep.AbortedReads = append(rep.AbortedReads, fmt.Sprintf("%q failed definitely but is in the log at %s", v, locs[0]))
		case s.outcome == Unknown:
			rep.UnknownFound++
		}
	}

	// Acknowledged values: present, and where they were acknowledged.
	acked := make([]string, 0, rep.Acked)
	for v, s := range h.sends {
		if s.outcome == Acked {
			acked = append(acked, v)
		}
	}
	sort.Strings(acked)
	for _, v := range acked {
		s := h.sends[v]
		if s.offset < h.deleted[s.partition] {
			continue
		}
		rep.CheckedAcked++
		got, ok := at[s.partition][s.offset]
		if s.weak {
			if !ok || got != v {
				rep.WeakLost++
			}
			continue
		}
		switch {
		case ok && got == v:
		case len(where[v]) == 0:
			rep.Lost = append(rep.Lost, fmt.Sprintf("%q acked at %d@%d", v, s.partition, s.offset))
		default:
			rep.Moved = append(rep.Moved, fmt.Sprintf("%q acked at %d@%d, found at %s", v, s.partition, s.offset, strings.Join(where[v], ",")))
		}
		if ok && got != v {
			rep.Inconsistent = append(rep.Inconsistent, fmt.Sprintf("%d@%d: acked %q, log holds %q", s.partition, s.offset, v, got))
		}
	}

	// Reads: what a consumer saw must stay where it saw it.
	seen := map[int32]map[int64]observation{}
	for _, r := range h.reads {
		s := h.sends[r.value]
		switch {
		case s == nil:
			rep.Phantoms = append(rep.Phantoms, fmt.Sprintf("%s read %q at %d@%d, never sent", r.reader, r.value, r.partition, r.offset))
		case s.outcome == Failed:
			rep.AbortedReads = append(rep.AbortedReads, fmt.Sprintf("%s read %q at %d@%d, which failed definitely", r.reader, r.value, r.partition, r.offset))
		}
		if got, ok := at[r.partition][r.offset]; r.offset >= h.deleted[r.partition] && (!ok || got != r.value) {
			rep.LostReads = append(rep.LostReads, fmt.Sprintf("%s read %q at %d@%d, final log holds %q", r.reader, r.value, r.partition, r.offset, got))
		}
		m := seen[r.partition]
		if m == nil {
			m = map[int64]observation{}
			seen[r.partition] = m
		}
		if o, ok := m[r.offset]; ok && o.value != r.value {
			rep.Inconsistent = append(rep.Inconsistent, fmt.Sprintf("%d@%d: %s read %q, %s read %q", r.partition, r.offset, o.where, o.value, r.reader, r.value))
		} else if !ok {
			m[r.offset] = observation{r.value, r.reader}
		}
	}
	return rep
}

// compareReplicas checks that every pair of replicas of partition p holds the
// same records below the smaller of their high watermarks.
func (h *History) compareReplicas(rep *Report, p int32, rs []Replica) {
	for i := 0; i < len(rs); i++ {
		for j := i + 1; j < len(rs); j++ {
			rep.ReplicasCheck++
			a, b := rs[i], rs[j]
			limit := min(a.HighWatermark, b.HighWatermark)
			am, bm := below(a.Records, limit), below(b.Records, limit)
			if len(am) != len(bm) {
				rep.Divergent = append(rep.Divergent, fmt.Sprintf("partition %d: broker %d holds %d records below %d, broker %d holds %d",
					p, a.Broker, len(am), limit, b.Broker, len(bm)))
				continue
			}
			same := true
			for k := range am {
				if am[k] != bm[k] {
					rep.Divergent = append(rep.Divergent, fmt.Sprintf("partition %d offset %d: broker %d holds %q at %d, broker %d holds %q at %d",
						p, am[k].Offset, a.Broker, am[k].Value, am[k].Offset, b.Broker, bm[k].Value, bm[k].Offset))
					same = false
					break
				}
			}
			if same && a.Batches != nil && b.Batches != nil {
				compareBatches(rep, p, a, b, limit)
			}
		}
	}
}

// compareBatches checks that a and b hold the same batches among those
// starting below limit.
func compareBatches(rep *Report, p int32, a, b Replica, limit int64) {
	ab, bb := batchesBelow(a.Batches, limit), batchesBelow(b.Batches, limit)
	for k := 0; k < max(len(ab), len(bb)); k++ {
		switch {
		case k >= len(ab):
			rep.Divergent = append(rep.Divergent, fmt.Sprintf("partition %d below %d: broker %d has no batch where broker %d has %s",
				p, limit, a.Broker, b.Broker, bb[k]))
			return
		case k >= len(bb):
			rep.Divergent = append(rep.Divergent, fmt.Sprintf("partition %d below %d: broker %d has no batch where broker %d has %s",
				p, limit, b.Broker, a.Broker, ab[k]))
			return
		}
		rep.BatchesCheck++
		if ab[k] != bb[k] {
			rep.Divergent = append(rep.Divergent, fmt.Sprintf("partition %d batch %d below %d: broker %d holds %s, broker %d holds %s",
				p, k, limit, a.Broker, ab[k], b.Broker, bb[k]))
			return
		}
	}
}

// batchesBelow returns the batches starting below limit.
func batchesBelow(bs []Batch, limit int64) []Batch {
	i := sort.Search(len(bs), func(i int) bool { return bs[i].BaseOffset >= limit })
	return bs[:i]
}

// below returns the records with offsets below limit.
func below(recs []Record, limit int64) []Record {
	i := sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= limit })
	return recs[:i]
}
