package replica

import (
	"errors"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestReadyFetch: a fetcher that handed back an outcome gets its target's
// next Fetch straight from the Manager (from the new log end), only its
// own target's partitions, never a second one in flight (nor from Ready
// meanwhile), and nothing while its partitions back off after a failure or
// once the Manager is closed.
func TestReadyFetch(t *testing.T) {
	m1, m2 := newTestManager(t, 1, vfs.NewMem()), newTestManager(t, 2, vfs.NewMem())
	// Broker 2 follows broker 1 for partitions 0 and 2 and broker 3 for
	// partition 1.
	req := lisr(1, 5, lisrPart(0, 1, 0, []int32{1, 2}, 1, 2), lisrPart(1, 3, 0, []int32{3, 2}, 3, 2), lisrPart(2, 1, 0, []int32{1, 2}, 1, 2))
	m2.LeaderAndIsr(req, t0)
	m1.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 0, []int32{1, 2}, 1, 2), lisrPart(2, 1, 0, []int32{1, 2}, 1, 2)), t0)
	if _, err := m1.Partition(testTopic, 0).AppendAsLeader(batch(t, "a", "b"), 1, 1, t0); err != nil {
		t.Fatal(err)
	}
	to1 := FetchTarget{Broker: 1}
	r := m2.Ready(t0)
	if len(r.Fetches) != 2 || r.Fetches[0].Target != to1 {
		t.Fatalf("fetches %+v", r.Fetches)
	}
	if _, ok := m2.ReadyFetch(to1, t0); ok {
		t.Fatal("ReadyFetch while the target's fetch is in flight")
	}
	m2.FetchResponse(to1, r.Fetches[0].Req, m1.HandleFetch(r.Fetches[0].Req, t0), nil, t0)
	next, ok := m2.ReadyFetch(to1, t0)
	if !ok || next.Target != to1 || len(next.Req.Topics) != 1 || len(next.Req.Topics[0].Partitions) != 2 {
		t.Fatalf("ReadyFetch after the outcome: %v %+v", ok, next)
	}
	if p := next.Req.Topics[0].Partitions[0]; p.Partition != 0 || p.FetchOffset != 2 {
		t.Fatalf("next fetch of partition 0 from offset %d, want 2 (the new log end): %+v", p.FetchOffset, p)
	}
	if p := next.Req.Topics[0].Partitions[1]; p.Partition != 2 {
		t.Fatalf("next fetch holds partition %d, want 2 (broker 3's partition 1 is not this target's)", p.Partition)
	}
	if r := m2.Ready(t0); len(r.Fetches) != 0 {
		t.Fatalf("Ready hands out a second fetch to a target ReadyFetch took: %+v", r.Fetches)
	}
	if _, ok := m2.ReadyFetch(to1, t0); ok {
		t.Fatal("a second ReadyFetch while the first is in flight")
	}
	// A failed fetch backs the target's partitions off: nothing until
	// replica.fetch.backoff.ms has passed.
	m2.FetchResponse(to1, next.Req, nil, errors.New("timeout"), t0+1)
	if _, ok := m2.ReadyFetch(to1, t0+1); ok {
		t.Fatal("ReadyFetch during the backoff")
	}
	if _, ok := m2.ReadyFetch(to1, t0+1+m2.cfg.ReplicaFetchBackoffMs); !ok {
		t.Fatal("no ReadyFetch after the backoff")
	}
	m2.FetchResponse(to1, next.Req, nil, errors.New("timeout"), t0+2)
	m2.Close()
	if _, ok := m2.ReadyFetch(to1, t0+1e6); ok {
		t.Fatal("ReadyFetch from a closed Manager")
	}
}
