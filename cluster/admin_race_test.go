package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
)

// racingZK runs before (once) just before the first multi that creates
// /brokers/topics/T: another client's write landing between the Admin's
// checks and its multi.
type racingZK struct {
	*zksim.Session
	topic  string
	before func()
}

func (z *racingZK) Multi(ops ...cluster.Op) ([]cluster.OpResult, error) {
	for _, op := range ops {
		if z.before != nil && op.Kind == cluster.OpCreate && op.Path == cluster.TopicPath(z.topic) {
			f := z.before
			z.before = nil
			f()
		}
	}
	return z.Session.Multi(ops...)
}

// TestAdminCreateRacesDeletion: a deletion of the name is requested
// (/admin/delete_topics/T created: the old topic's deletion still going
// on, its /brokers/topics/T already removed by an earlier write batch of
// the controller) after CreateTopic checked for one and before its multi.
// The multi itself proves the marker absent, so the creation fails whole
// with ErrTopicExists ("marked for deletion"): no /brokers/topics/T, no
// /config/topics/T, the marker left for the controller. Once the deletion
// is done (the marker gone) the same creation succeeds.
func TestAdminCreateRacesDeletion(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	other := srv.Connect()
	defer other.Close()
	s := srv.Connect()
	defer s.Close()
	for _, p := range cluster.PersistentPaths {
		if _, err := other.Create(p, nil, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	z := &racingZK{Session: s, topic: "t", before: func() {
		if _, err := other.Create(cluster.DeleteTopicPath("t"), nil, cluster.Persistent); err != nil {
			t.Fatal(err)
		}
	}}
	admin := cluster.NewAdmin(z)
	_, err := admin.CreateTopic("t", [][]int32{{1, 2}}, map[string]string{"retention.ms": "1000"}, [16]byte{})
	if !errors.Is(err, cluster.ErrTopicExists) || !strings.Contains(err.Error(), "marked for deletion") {
		t.Fatalf("creation racing a deletion: %v", err)
	}
	if z.before != nil {
		t.Fatal("the deletion was not requested during the creation")
	}
	for _, p := range []string{cluster.TopicPath("t"), cluster.TopicConfigPath("t")} {
		if ok, _, err := other.Exists(p); err != nil || ok {
			t.Fatalf("%s written by a creation that failed: %v %v", p, ok, err)
		}
	}
	if ok, _, err := other.Exists(cluster.DeleteTopicPath("t")); err != nil || !ok {
		t.Fatalf("the deletion request is gone: %v %v", ok, err)
	}
	// The deletion done: the name is free.
	if err := other.Delete(cluster.DeleteTopicPath("t"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic("t", [][]int32{{1, 2}}, nil, [16]byte{}); err != nil {
		t.Fatalf("creation after the deletion: %v", err)
	}
}
