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

// threeBrokers: brokers 1, 2, 3 live, controller 1 active, topic t with
// partitions [1 2 3] and [2 3 1] created.
func threeBrokers(t *testing.T, opts *ControllerOptions, configs map[string]string) (*world, int) {
	w := newWorld(t, 1, opts)
	w.register(1, 2, 3)
	w.elect()
	w.createTopic("t", [][]int32{{1, 2, 3}, {2, 3, 1}}, configs)
	w.step(w.topicsEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2 3] v=0")
	wantState(t, w, "t", 1, "leader=2 epoch=0 isr=[2 3 1] v=0")
	_, mark := w.since(0)
	return w, mark
}

// TestBrokerDeath: the partitions a dead broker led move to the next live
// ISR member in assignment order with leader epoch + 1 and the ISR's live
// members; where it followed, it leaves the ISR with leader epoch + 1.
// LeaderAndIsr goes to the live replicas, UpdateMetadata to every live
// broker (the dead one offline).
func TestBrokerDeath(t *testing.T) {
	w, mark := threeBrokers(t, nil, nil)
	w.kill(2)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 3] v=1")
	wantState(t, w, "t", 1, "leader=3 epoch=1 isr=[3 1] v=1")
	got, mark := w.since(mark)
	wantLines(t, "requests", got,
		"lisr->1 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->1 brokers=1,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
		"lisr->3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->3 brokers=1,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
	)

	// 3 dies: t-1 moves to 1; then 1 is alone. Then 1 dies too (it is the
	// controller's broker, but the controller only sees registrations):
	// no ISR member is live, so the partitions have no leader and keep 1
	// as their one-member ISR.
	w.kill(3)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=2 isr=[1] v=2")
	wantState(t, w, "t", 1, "leader=1 epoch=2 isr=[1] v=2")
	w.kill(1)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=-1 epoch=3 isr=[1] v=3")
	wantState(t, w, "t", 1, "leader=-1 epoch=3 isr=[1] v=3")

	// 2 returns: not in the ISR, unclean election off: still no leader.
	// Then 1 returns: it leads again.
	w.register(2)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=-1 epoch=3 isr=[1] v=3")
	w.register(1)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=4 isr=[1] v=4")
	wantState(t, w, "t", 1, "leader=1 epoch=4 isr=[1] v=4")
	_, mark = w.since(mark)
	_ = mark
}

// TestUncleanElection: with unclean.leader.election.enable on the topic, a
// partition whose ISR is all dead is led by the first live replica, alone
// in the ISR, and the loss is logged; enabling it by a config change
// elects at once.
func TestUncleanElection(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.kill(2, 3)
	w.step(w.brokersEvent())
	w.kill(1)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=-1 epoch=2 isr=[1] v=2")
	w.register(3)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=-1 epoch=2 isr=[1] v=2")
	w.step(TopicConfigChanged{Topic: "t", Configs: map[string]string{UncleanLeaderElectionConfig: "true"}})
	wantState(t, w, "t", 0, "leader=3 epoch=3 isr=[3] v=3")
	wantState(t, w, "t", 1, "leader=3 epoch=3 isr=[3] v=3")
	if !strings.Contains(strings.Join(w.logs, "\n"), "unclean leader election for t-0: 3 leads outside the ISR [1]") {
		t.Fatalf("unclean election not logged: %q", w.logs)
	}
}

// TestBouncedBroker: a registration with the same id and a larger epoch is
// a failure then a startup: the broker's leaderships move, then it gets
// the full metadata and LeaderAndIsr for its replicas, with its new broker
// epoch.
func TestBouncedBroker(t *testing.T) {
	w, mark := threeBrokers(t, nil, nil)
	w.kill(2)
	w.register(2)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 3] v=1")
	wantState(t, w, "t", 1, "leader=3 epoch=1 isr=[3 1] v=1")
	got, _ := w.since(mark)
	wantLines(t, "requests", got,
		"lisr->1 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->1 brokers=1,2,3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"lisr->2 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->2 brokers=1,2,3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"lisr->3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->3 brokers=1,2,3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
	)
	epoch := w.epochOf(2)
	for _, r := range w.sent[mark:] {
		if r.Broker == 2 && brokerEpochOf(r) != epoch {
			t.Fatalf("request to the bounced broker carries broker epoch %d, want %d", brokerEpochOf(r), epoch)
		}
	}
}

// TestUncleanEnabledByTopicRead: a TopicsChanged whose config read enables
// unclean election elects like a config notification would.
func TestUncleanEnabledByTopicRead(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.kill(2, 3)
	w.step(w.brokersEvent())
	w.kill(1)
	w.step(w.brokersEvent())
	w.register(3)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 0, "leader=-1 epoch=2 isr=[1] v=2")
	w.zk.mustSet(ctrlTopicConfigPath("t"), []byte(`{"version":1,"config":{"unclean.leader.election.enable":"true"}}`))
	w.step(w.topicsEvent())
	wantState(t, w, "t", 0, "leader=3 epoch=3 isr=[3] v=3")
}
