package cluster

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadSnapshot reads a cluster with malformed znodes: the bad broker
// registration and the topics with a bad assignment, config or state are
// skipped and named; everything else is read, including znodes beyond the
// assignment and missing state znodes.
func TestLoadSnapshot(t *testing.T) {
	w := newWorld(t, 1, nil)
	w.register(1, 2)
	w.zk.mustCreate(ctrlBrokerPath(7), []byte(`{"endpoints":[`), Ephemeral)
	w.zk.mustCreate("/brokers/ids/x", []byte(`{}`), Ephemeral)
	id := w.createTopic("good", [][]int32{{1, 2}, {2, 1}}, map[string]string{UncleanLeaderElectionConfig: "true"})
	w.zk.mustCreate(ctrlTopicPath("badjson"), []byte(`{"partitions":`), Persistent)
	w.zk.mustCreate(ctrlTopicPath("dup"), []byte(`{"version":1,"partitions":{"0":[1,1]}}`), Persistent)
	w.zk.mustCreate(ctrlTopicPath("gap"), []byte(`{"version":1,"partitions":{"0":[1],"2":[1]}}`), Persistent)
	w.createTopic("badcfg", [][]int32{{1}}, nil)
	w.zk.mustSet(ctrlTopicConfigPath("badcfg"), []byte(`nope`))
	w.createTopic("badstate", [][]int32{{1}}, nil)
	w.zk.mustCreate(ctrlPartitionsPath("badstate"), nil, Persistent)
	w.zk.mustCreate(ctrlPartitionPath("badstate", 0), nil, Persistent)
	w.zk.mustCreate(ctrlStatePath("badstate", 0), []byte(`{"leader":1}`), Persistent)
	w.zk.mustCreate(ctrlPartitionsPath("good"), nil, Persistent)
	w.zk.mustCreate(ctrlPartitionPath("good", 0), nil, Persistent)
	w.zk.mustCreate(ctrlStatePath("good", 0), []byte(`{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":5,"isr":[2,1]}`), Persistent)
	w.zk.mustSet(ctrlStatePath("good", 0), []byte(`{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":5,"isr":[2,1]}`))
	w.zk.mustCreate(ctrlPartitionPath("good", 9), nil, Persistent)
	w.zk.mustCreate(ctrlStatePath("good", 9), []byte(`{}`), Persistent)
	w.zk.mustCreate(ctrlDeleteTopicPath("good"), nil, Persistent)
	w.zk.mustCreate(ctrlLogDirEventPath("log_dir_event_0000000003"), []byte(`{"version":1,"broker":2,"event":1}`), Persistent)

	if _, err := LoadSnapshot(w.zk, 1); !errors.Is(err, ErrNotController) {
		t.Fatalf("no /controller: %v", err)
	}
	w.zk.mustCreate(ctrlControllerEpochPath, []byte("4"), Persistent)
	w.zk.mustSet(ctrlControllerEpochPath, []byte("5"))
	w.zk.mustCreate(ctrlControllerPath, []byte(`{"version":1,"brokerid":2,"timestamp":"1"}`), Ephemeral)
	if _, err := LoadSnapshot(w.zk, 1); !errors.Is(err, ErrNotController) {
		t.Fatalf("/controller names 2: %v", err)
	}
	w.zk.mustSet(ctrlControllerPath, []byte(`{"version":1,"brokerid":1,"timestamp":"1"}`))
	w.zk.session++ // another session owns it
	if _, err := LoadSnapshot(w.zk, 1); !errors.Is(err, ErrNotController) {
		t.Fatalf("/controller of another session: %v", err)
	}
	w.zk.session--

	s, err := LoadSnapshot(w.zk, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.ControllerEpoch != 5 || s.EpochVersion != 1 {
		t.Fatalf("epoch %d version %d", s.ControllerEpoch, s.EpochVersion)
	}
	if len(s.Brokers) != 2 || s.Brokers[0].ID != 1 || s.Brokers[1].Epoch != w.epochOf(2) ||
		s.Brokers[1].Endpoints[0] != (Endpoint{Listener: "PLAINTEXT", Host: "b2", Port: 9092}) {
		t.Fatalf("brokers %+v", s.Brokers)
	}
	if len(s.Topics) != 1 || s.Topics[0].Name != "good" {
		t.Fatalf("topics %+v", s.Topics)
	}
	g := s.Topics[0]
	if g.ID != id || g.Configs[UncleanLeaderElectionConfig] != "true" || !g.PartitionsNode ||
		!g.PartitionNodes[0] || g.PartitionNodes[1] || g.States[1] != nil ||
		fmtState(g.States[0]) != "leader=2 epoch=5 isr=[2 1] v=1" {
		t.Fatalf("topic good: %+v", g)
	}
	if strings.Join(g.ExtraNodes, " ") != ctrlStatePath("good", 9)+" "+ctrlPartitionPath("good", 9) {
		t.Fatalf("extra nodes %v", g.ExtraNodes)
	}
	skipped := strings.Join(s.Skipped, "\n")
	for _, want := range []string{"broker 7", `"x"`, "topic badjson", "topic dup", "topic gap", "topic badcfg", "topic badstate partition 0"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped does not name %s:\n%s", want, skipped)
		}
	}
	if strings.Join(s.DeleteTopics, ",") != "good" || strings.Join(s.LogDirEvents, ",") != "log_dir_event_0000000003" {
		t.Fatalf("deletions %v, log dir events %v", s.DeleteTopics, s.LogDirEvents)
	}

	// Activated with it, the controller deletes the topic, znodes beyond
	// the assignment included, and the stale notification.
	w.step(Activate{Snapshot: s})
	for _, p := range []string{ctrlTopicPath("good"), ctrlPartitionPath("good", 9), ctrlLogDirEventPath("log_dir_event_0000000003")} {
		if ok, _, _ := w.zk.Exists(p); ok {
			t.Errorf("%s still exists", p)
		}
	}
}
