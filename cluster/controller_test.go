package cluster

import (
	"strings"
	"testing"
)

// TestNewTopic: a new topic's partitions are led by their first live
// replica with the live replicas as ISR and leader epoch 0; the state
// znodes (and their parents) are created; replicas get LeaderAndIsr with
// is_new, every live broker UpdateMetadata with the dead replica offline.
// A partition with no live replica stays without state until one starts.
func TestNewTopic(t *testing.T) {
	w := newWorld(t, 1, nil)
	w.register(1, 2, 3)
	w.elect()
	w.kill(3)
	w.step(w.brokersEvent())
	_, mark := w.since(0)

	w.createTopic("t", [][]int32{{3, 1, 2}, {2, 3, 1}, {3}}, nil)
	w.step(w.topicsEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2] v=0")
	wantState(t, w, "t", 1, "leader=2 epoch=0 isr=[2 1] v=0")
	wantState(t, w, "t", 2, "none")
	got, mark := w.since(mark)
	wantLines(t, "requests", got,
		"lisr->1 t-0:L1/E0/[1 2]/v0/new t-1:L2/E0/[2 1]/v0/new",
		"um->1 brokers=1,2 t-0:L1/E0/[1 2]/v0/off[3] t-1:L2/E0/[2 1]/v0/off[3]",
		"lisr->2 t-0:L1/E0/[1 2]/v0/new t-1:L2/E0/[2 1]/v0/new",
		"um->2 brokers=1,2 t-0:L1/E0/[1 2]/v0/off[3] t-1:L2/E0/[2 1]/v0/off[3]",
	)
	if !strings.Contains(strings.Join(w.logs, "\n"), "new partition t-2: no assigned replica [3] is online") {
		t.Fatalf("no log of the partition without a live replica: %q", w.logs)
	}

	// Broker 3 comes back: it gets the full metadata and its replicas'
	// states; t-2 is created led by it (is_new); the others keep their
	// leaders (3 is not in their ISRs).
	w.register(3)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2] v=0")
	wantState(t, w, "t", 2, "leader=3 epoch=0 isr=[3] v=0")
	got, _ = w.since(mark)
	wantLines(t, "requests after broker 3 returned", got,
		"um->1 brokers=1,2,3 t-0:L1/E0/[1 2]/v0 t-1:L2/E0/[2 1]/v0 t-2:L3/E0/[3]/v0",
		"um->2 brokers=1,2,3 t-0:L1/E0/[1 2]/v0 t-1:L2/E0/[2 1]/v0 t-2:L3/E0/[3]/v0",
		"lisr->3 t-0:L1/E0/[1 2]/v0 t-1:L2/E0/[2 1]/v0 t-2:L3/E0/[3]/v0/new",
		"um->3 brokers=1,2,3 t-0:L1/E0/[1 2]/v0 t-1:L2/E0/[2 1]/v0 t-2:L3/E0/[3]/v0",
	)
}
