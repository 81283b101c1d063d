package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMetricsClusterUnderReplicated: in a two-broker cluster on a real
// ZooKeeper, exactly one broker reports itself the active controller;
// stopping the follower of a replicated partition makes its leader report
// the partition under-replicated, and the follower's return an ISR
// expansion. (The shrink on a broker's failure is the controller's, sent
// in LeaderAndIsr: like Kafka, IsrShrinksPerSec counts only the leader's
// own shrinks.)
func TestMetricsClusterUnderReplicated(t *testing.T) {
	c := startInprocCluster(t, 2, "strata.metrics.listener=127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 1, 2, nil, "urp"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("urp", 1, 2)
	cl := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "urp", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "one active controller in the scrapes", func() bool {
		var n float64
		for _, b := range c.brokers {
			v, _ := sample(scrape(t, b, "/metrics"), "kafka_controller_kafkacontroller_activecontrollercount")
			n += v
		}
		return n == 1
	})
	leader := c.broker(1).cl.images.load().topics["urp"].parts[0].leader
	follower := 3 - leader
	lb := c.broker(leader)
	body := scrape(t, lb, "/metrics")
	wantSample(t, body, `kafka_server_replicamanager_underreplicatedpartitions`, 0)
	wantSample(t, body, `kafka_cluster_partition_underreplicated{partition="0",topic="urp"}`, 0)
	c.broker(follower).Close()
	waitFor(t, 60*time.Second, "the leader reporting urp-0 under-replicated", func() bool {
		body = scrape(t, lb, "/metrics")
		v, _ := sample(body, `kafka_cluster_partition_underreplicated{partition="0",topic="urp"}`)
		return v == 1
	})
	if v, _ := sample(body, "kafka_server_replicamanager_underreplicatedpartitions"); v < 1 {
		t.Errorf("underreplicatedpartitions %v, want at least 1", v)
	}
	wantSample(t, body, "kafka_server_replicamanager_isrexpands_total", 0)
	startClusterBroker(t, c.connect, follower, c.dirs[follower-1], "replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200",
		"offsets.topic.num.partitions=5", "strata.metrics.listener=127.0.0.1:0")
	waitFor(t, 60*time.Second, "the leader reporting the follower back in the ISR", func() bool {
		body = scrape(t, lb, "/metrics")
		v, _ := sample(body, "kafka_server_replicamanager_isrexpands_total")
		u, _ := sample(body, "kafka_server_replicamanager_underreplicatedpartitions")
		return v >= 1 && u == 0
	})
}
