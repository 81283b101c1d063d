package history

import (
	"strings"
	"sync"
	"testing"
)

// clean builds a history of three acked values on partition 0 and the
// matching replicas on brokers 1 and 2.
func clean() (*History, []Replica) {
	h := New()
	recs := []Record{{0, "a"}, {1, "b"}, {2, "c"}}
	for _, r := range recs {
		h.Send(r.Value, 0)
		h.Ack(r.Value, r.Offset)
		h.Read("c1", 0, r.Offset, r.Value)
	}
	return h, []Replica{
		{Broker: 1, Partition: 0, HighWatermark: 3, Records: recs},
		{Broker: 2, Partition: 0, HighWatermark: 3, Records: append([]Record(nil), recs...)},
	}
}

func TestCleanHistory(t *testing.T) {
	h, rs := clean()
	rep := h.Check(rs)
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 3 || rep.Acked != 3 || rep.CheckedAcked != 3 || rep.Reads != 3 || rep.FinalRecords != 3 || rep.ReplicasCheck != 1 {
		t.Fatalf("counts: %+v", rep)
	}
}

// Each failure kind is found, and only that kind.
func TestFailureKinds(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History, rs []Replica) []Replica
		field  func(r *Report) []string
	}{
		{"lost", func(h *History, rs []Replica) []Replica {
			h.Send("d", 0)
			h.Ack("d", 3)
			return rs
		}, func(r *Report) []string { return r.Lost }},
		{"moved", func(h *History, rs []Replica) []Replica {
			h.Send("d", 0)
			h.Ack("d", 7)
			for i := range rs {
				rs[i].Records = append(rs[i].Records, Record{3, "d"})
				rs[i].HighWatermark = 4
			}
			return rs
		}, func(r *Report) []string { return r.Moved }},
		{"lost read", func(h *History, rs []Replica) []Replica {
			h.Send("d", 0)
			h.Fail("d", false)
			h.Read("c2", 0, 3, "d") // read, then truncated away
			return rs
		}, func(r *Report) []string { return r.LostReads }},
		{"aborted read", func(h *History, rs []Replica) []Replica {
			h.Send("d", 0)
			h.Fail("d", true)
			for i := range rs {
				rs[i].Records = append(rs[i].Records, Record{3, "d"})
				rs[i].HighWatermark = 4
			}
			return rs
		}, func(r *Report) []string { return r.AbortedReads }},
		{"phantom", func(h *History, rs []Replica) []Replica {
			rs[0].Records = append(rs[0].Records, Record{3, "zz"})
			rs[0].HighWatermark = 4
			rs[1].Records = append(rs[1].Records, Record{3, "zz"})
			rs[1].HighWatermark = 4
			return rs
		}, func(r *Report) []string { return r.Phantoms }},
		{"non-monotonic", func(h *History, rs []Replica) []Replica {
			h.Read("c1", 0, 1, "b")
			return rs
		}, func(r *Report) []string { return r.NonMonotonic }},
		{"divergent", func(h *History, rs []Replica) []Replica {
			rs[1].Records = []Record{{0, "a"}, {1, "x"}, {2, "c"}}
			return rs
		}, func(r *Report) []string { return r.Divergent }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, rs := clean()
			rs = c.mutate(h, rs)
			rep := h.Check(rs)
			if len(c.field(rep)) == 0 {
				t.Fatalf("%s not found: %v", c.name, rep.Err())
			}
			if rep.OK() || !strings.Contains(rep.Err().Error(), c.name) {
				t.Fatalf("Err does not name %s: %v", c.name, rep.Err())
			}
		})
	}
}

// Duplicates and unknown outcomes are counted, not failures; a reset lets a
// reader go back; weak acknowledgements are measured.
func TestCountedNotFailed(t *testing.T) {
	h, rs := clean()
	h.Send("d", 0)
	h.Fail("d", false) // timed out but written, twice (a retry)
	h.Send("e", 0)
	h.AckWeak("e", 9) // acks=1, lost
	h.Reset("c1")
	h.Read("c1", 0, 0, "a")
	for i := range rs {
		rs[i].Records = append(rs[i].Records, Record{3, "d"}, Record{4, "d"})
		rs[i].HighWatermark = 5
	}
	rep := h.Check(rs)
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.Duplicates != 1 || rep.UnknownFound != 1 || rep.WeakLost != 1 || rep.WeakAcked != 1 {
		t.Fatalf("counts: %s", rep.Summary())
	}
}

// Replicas are compared only below the smaller high watermark, and the
// authoritative replica is the one with the highest.
func TestReplicaLimits(t *testing.T) {
	h, rs := clean()
	h.Send("d", 0)
	h.Ack("d", 3)
	rs[0].Records = append(rs[0].Records, Record{3, "d"})
	rs[0].HighWatermark = 4
	rs[1].Records = append(rs[1].Records, Record{3, "other"}) // above its HW of 3
	if err := h.Check(rs).Err(); err == nil || !strings.Contains(err.Error(), "phantom") {
		t.Fatalf("a never-sent value on any replica, even above its high watermark, is a phantom: %v", err)
	}
	h2, rs2 := clean()
	h2.Send("d", 0)
	h2.Ack("d", 3)
	rs2[0].Records = append(rs2[0].Records, Record{3, "d"})
	rs2[0].HighWatermark = 4
	rs2[1].Records = rs2[1].Records[:2] // a lagging follower
	rs2[1].HighWatermark = 2
	if err := h2.Check(rs2).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUse(t *testing.T) {
	h := New()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				v := string(rune('a'+w)) + string(rune('0'+i%10)) + string(rune('0'+i/10))
				h.Send(v, int32(w))
				h.Ack(v, int64(i))
			}
		}()
	}
	wg.Wait()
	var rs []Replica
	for w := 0; w < 4; w++ {
		r := Replica{Broker: 1, Partition: int32(w), HighWatermark: 100}
		for i := 0; i < 100; i++ {
			r.Records = append(r.Records, Record{int64(i), string(rune('a'+w)) + string(rune('0'+i%10)) + string(rune('0'+i/10))})
		}
		rs = append(rs, r)
	}
	rep := h.Check(rs)
	if err := rep.Err(); err != nil || rep.CheckedAcked != 400 {
		t.Fatal(err, rep.Summary())
	}
}

// TestDeleted: records deleted on purpose are not lost.
func TestDeleted(t *testing.T) {
	h, rs := clean()
	for i := range rs {
		rs[i].Records = rs[i].Records[2:] // offsets 0 and 1 deleted
	}
	if err := h.Check(rs).Err(); err == nil {
		t.Fatal("records gone without a deletion are not reported")
	}
	h.Deleted(0, 2)
	if err := h.Check(rs).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestDivergentBatches: replicas holding the same values below their high
// watermarks but in different batches (a batch appended again in another
// leader epoch, or split differently) are divergent when both list their
// batches; batches starting at or above the limit are not compared.
func TestDivergentBatches(t *testing.T) {
	batches := func() []Batch {
		return []Batch{{0, 1, 0, 0xaaaa}, {2, 2, 0, 0xbbbb}}
	}
	cases := []struct {
		name   string
		mutate func(b []Batch) []Batch
		ok     bool
	}{
		{"same", func(b []Batch) []Batch { return b }, true},
		{"epoch", func(b []Batch) []Batch { b[1].LeaderEpoch = 1; return b }, false},
		{"crc", func(b []Batch) []Batch { b[0].CRC = 0xcccc; return b }, false},
		{"split", func(b []Batch) []Batch { return []Batch{{0, 0, 0, 1}, {1, 1, 0, 2}, b[1]} }, false},
		{"missing", func(b []Batch) []Batch { return b[:1] }, false},
		{"above the limit", func(b []Batch) []Batch { return append(b, Batch{3, 3, 1, 0xdddd}) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, rs := clean()
			rs[0].Batches = batches()
			rs[1].Batches = c.mutate(batches())
			rep := h.Check(rs)
			if c.ok {
				if err := rep.Err(); err != nil || rep.BatchesCheck < 2 {
					t.Fatalf("%v (%d batch pairs compared)", err, rep.BatchesCheck)
				}
				return
			}
			if len(rep.Divergent) == 0 {
				t.Fatalf("not found: %s", rep.Summary())
			}
			t.Log(rep.Divergent[0])
		})
	}
	// Replicas that do not list batches are compared by records only.
	h, rs := clean()
	rs[0].Batches = batches()
	if err := h.Check(rs).Err(); err != nil {
		t.Fatal(err)
	}
}
