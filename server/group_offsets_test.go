package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchCommitted returns the group's committed offsets of topic (v8 request
// through the coordinator), partition -> offset.
func fetchCommitted(t testing.TB, cl *kgo.Client, group, topic string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 16; p++ {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = []kmsg.OffsetFetchRequestTopic{rt}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("OffsetFetch: error %d", resp.ErrorCode)
	}
	out := map[int32]int64{}
	for _, tt := range resp.Topics {
		for _, p := range tt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("OffsetFetch %s/%d: error %d", tt.Topic, p.Partition, p.ErrorCode)
			}
			if p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out
}

func produceSpread(t testing.TB, cl *kgo.Client, topic string, parts int32, n, from int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32((from + i) % int(parts)), Value: fmt.Appendf(nil, "v%d", from+i)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitsSurviveRestart: a group commits, the broker is closed and
// started on the same dirs; the offsets and the group's generation come back
// from __consumer_offsets and a new member resumes after the commits.
func TestGroupCommitsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s := startGroupServer(t, dir)
	createTopic(t, s, "resume", 3)
	prod := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSpread(t, prod, "resume", 3, 30, 0)

	m := startMember(t, s, "a", "g-resume", "resume", kgo.DisableAutoCommit())
	waitFor(t, 20*time.Second, "30 records", func() bool { return len(m.records()) >= 30 })
	if err := m.cl.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	want := fetchCommitted(t, prod, "g-resume", "resume")
	if len(want) != 3 || want[0] != 10 || want[1] != 10 || want[2] != 10 {
		t.Fatalf("committed %v, want 10 on each of 3 partitions", want)
	}
	m.close()
	g := s.groups.get("g-resume")
	g.mu.Lock()
	gen, state := g.generation, g.state
	g.mu.Unlock()
	if state != groupEmpty || gen < 1 {
		t.Fatalf("group before restart: %s generation %d", state, gen)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := startGroupServer(t, dir)
	cl2 := newClient(t, s2, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if got := fetchCommitted(t, cl2, "g-resume", "resume"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart committed %v, want %v", got, want)
	}
	g2 := s2.groups.get("g-resume")
	g2.mu.Lock()
	gen2, state2 := g2.generation, g2.state
	g2.mu.Unlock()
	if gen2 != gen || state2 != groupEmpty {
		t.Fatalf("after restart group %s generation %d, want Empty generation %d", state2, gen2, gen)
	}
	produceSpread(t, cl2, "resume", 3, 6, 30)
	m2 := startMember(t, s2, "b", "g-resume", "resume")
	// Caught up to the last record of each partition in a settled group:
	// anything older would have come first, and nothing more can come.
	waitFor(t, 20*time.Second, "6 new records", func() bool {
		return len(m2.records()) >= 6 && m2.caughtUp(map[int32]int64{0: 11, 1: 11, 2: 11})
	})
	waitSettled(t, s2, "g-resume", m2)
	for _, r := range m2.records() {
		if r.Offset < 10 {
			t.Fatalf("resumed member got %s/%d@%d, below the committed offset 10", r.Topic, r.Partition, r.Offset)
		}
	}
	if n := len(m2.records()); n != 6 {
		t.Fatalf("resumed member got %d records, want the 6 new ones", n)
	}
	g3 := s2.groups.get("g-resume")
	g3.mu.Lock()
	gen3 := g3.generation
	g3.mu.Unlock()
	if gen3 <= gen {
		t.Fatalf("generation after restart and rejoin %d, want above %d", gen3, gen)
	}
}

// TestGroupDeliveryAcrossRebalances: members come and go while records are
// produced; no record is delivered to two members within one generation,
// and every produced record is consumed at least once.
func TestGroupDeliveryAcrossRebalances(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	const parts = 6
	createTopic(t, s, "churn", parts)
	prod := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))

	type owner struct {
		gen  int32
		part int32
	}
	owners := map[owner]string{}
	var violations []string
	members := []*groupMember{}
	start := func(name string) *groupMember {
		m := startMember(t, s, name, "g-churn", "churn", kgo.Balancers(kgo.RangeBalancer()), kgo.AutoCommitInterval(100*time.Millisecond))
		members = append(members, m)
		return m
	}
	// Records flow the whole time: a alone, a+b, a+b+c, a+c. Each phase
	// lasts until its split is in place in a Stable group and records were
	// consumed in its generation (not for a time: a loaded machine may
	// produce little in one).
	a := start("a")
	stop, done := make(chan struct{}), make(chan error, 1)
	var produced atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			r := &kgo.Record{Topic: "churn", Partition: int32(i % parts), Value: fmt.Appendf(nil, "v%d", i)}
			if err := prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				done <- err
				return
			}
			produced.Add(1)
			if i%parts == parts-1 {
				time.Sleep(5 * time.Millisecond) // pacing, not timing
			}
		}
	}()
	consumedIn := func(gen int32) int {
		k := 0
		for _, m := range members {
			m.mu.Lock()
			for _, g := range m.gens {
				if g == gen {
					k++
				}
			}
			m.mu.Unlock()
		}
		return k
	}
	phase := func(what string, split map[*groupMember]int) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() bool {
			gen, st := groupGeneration(s, "g-churn")
			if st != groupStable {
				return false
			}
			for m, want := range split {
				if len(m.ownedParts()) != want {
					return false
				}
			}
			return consumedIn(gen) >= 15
		})
	}
	phase("a alone", map[*groupMember]int{a: 6})
	b := start("b")
	phase("a and b", map[*groupMember]int{a: 3, b: 3})
	c := start("c")
	phase("a, b and c", map[*groupMember]int{a: 2, b: 2, c: 2})
	b.close()
	phase("a and c", map[*groupMember]int{a: 3, c: 3})
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := int(produced.Load())
	if n < 60 {
		t.Fatalf("only %d records produced", n)
	}
	seen := map[[2]int64]int{}
	waitFor(t, 30*time.Second, "every record consumed", func() bool {
		clear(seen)
		for _, m := range members {
			for _, r := range m.records() {
				seen[[2]int64{int64(r.Partition), r.Offset}]++
			}
		}
		return len(seen) == n
	})
	// Generation check: each member records, per poll, the generation it
	// was in before and after; unambiguous polls must not overlap.
	for _, m := range members {
		m.mu.Lock()
		for i, r := range m.recs {
			k := owner{m.gens[i], r.Partition}
			if m.gens[i] < 0 {
				continue
			}
			if o, ok := owners[k]; ok && o != m.name {
				violations = append(violations, fmt.Sprintf("partition %d in generation %d went to %s and %s", r.Partition, m.gens[i], o, m.name))
			}
			owners[k] = m.name
		}
		m.mu.Unlock()
	}
	if len(violations) > 0 {
		t.Fatalf("%d double deliveries within a generation, first: %s", len(violations), violations[0])
	}
	gens := map[int32]bool{}
	for k := range owners {
		gens[k.gen] = true
	}
	if len(gens) < 3 {
		t.Fatalf("records were consumed in %d generations, want the churn to have made at least 3", len(gens))
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("%d records, %d redelivered across rebalances, %d generations", n, dups, len(gens))
}
