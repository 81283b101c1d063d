package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterRackAwarePlacement: broker.rack travels from the broker's
// config through its registration and the controller's UpdateMetadata to
// every broker: Metadata and DescribeCluster (key 60) at any broker list
// every live broker with its rack, the cluster id and the controller; and
// CreateTopics places replicas rack-aware: with brokers 1 and 2 in rack a
// and 3 in rack b, every partition of replication factor 2 has a replica
// in each rack (Kafka's placement without racks pairs 1 and 2 for some
// partition whatever its random start).
func TestClusterRackAwarePlacement(t *testing.T) {
	_, connect := testZK(t)
	racks := map[int32]string{1: "a", 2: "a", 3: "b"}
	var bs []*Server
	var addrs []string
	for id := int32(1); id <= 3; id++ {
		s := startClusterBroker(t, connect, id, t.TempDir(), "broker.rack="+racks[id], "offsets.topic.num.partitions=1")
		bs, addrs = append(bs, s), append(addrs, s.Addr().String())
	}
	waitFor(t, 60*time.Second, "every broker knows the three and a controller", func() bool {
		for _, b := range bs {
			im := b.cl.images.load()
			if len(im.brokers) != 3 || im.controllerID < 1 {
				return false
			}
		}
		return true
	})
	for _, b := range bs {
		c := client(t, b)
		md := call[*kmsg.MetadataResponse](t, c, &kmsg.MetadataRequest{Version: 11})
		dc := call[*kmsg.DescribeClusterResponse](t, c, kmsg.NewPtrDescribeClusterRequest())
		if dc.ErrorCode != 0 || dc.ClusterID != b.ClusterID() || md.ClusterID == nil || *md.ClusterID != b.ClusterID() ||
			dc.ControllerID != md.ControllerID || dc.ControllerID < 1 || len(dc.Brokers) != 3 || len(md.Brokers) != 3 {
			t.Fatalf("broker %d: DescribeCluster %+v, Metadata cluster %v controller %d, %d brokers", b.NodeID(), dc, md.ClusterID, md.ControllerID, len(md.Brokers))
		}
		for i, db := range dc.Brokers {
			mb := md.Brokers[i]
			want := bs[db.NodeID-1]
			host, port := hostPort(want.Addr())
			if db.Rack == nil || *db.Rack != racks[db.NodeID] || db.Host != host || db.Port != port ||
				mb.NodeID != db.NodeID || mb.Rack == nil || *mb.Rack != racks[mb.NodeID] || mb.Host != host || mb.Port != port {
				t.Fatalf("broker %d lists broker %d as %+v (DescribeCluster), %+v (Metadata); want %s:%d rack %s",
					b.NodeID(), db.NodeID, db, mb, host, port, racks[db.NodeID])
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, addrs))
	for i := range 3 {
		topic := fmt.Sprintf("racks-%d", i)
		if res, err := adm.CreateTopic(ctx, 6, 2, nil, topic); err != nil || res.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, res.Err)
		}
		waitFor(t, 30*time.Second, topic+" in the metadata cache", func() bool {
			ok, n := bs[0].cl.images.load().led(topic)
			return ok && n == 6
		})
		for p, mp := range bs[0].cl.images.load().topics[topic].parts {
			if len(mp.replicas) != 2 || racks[mp.replicas[0]] == racks[mp.replicas[1]] {
				t.Fatalf("%s-%d replicas %v: not one per rack (%v)", topic, p, mp.replicas, racks)
			}
		}
	}
}
