package server

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/security"
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

// TestMetricsClusterLeaderElectionTime: when the leader of a replicated
// partition fails (no controlled shutdown), the controller elects the
// other replica and times the event: LeaderElectionRateAndTimeMs has a
// count and a measured p99 on the controller (before, its quantiles were
// NaN).
func TestMetricsClusterLeaderElectionTime(t *testing.T) {
	c := startInprocCluster(t, 2, "strata.metrics.listener=127.0.0.1:0", "controlled.shutdown.enable=false")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 1, 2, nil, "elect"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("elect", 1, 2)
	leader := c.broker(1).cl.images.load().topics["elect"].parts[0].leader
	survivor := c.broker(3 - leader)
	c.broker(leader).Close()
	var body string
	waitFor(t, 60*time.Second, "the controller timing the election", func() bool {
		body = scrape(t, survivor, "/metrics")
		v, _ := sample(body, "kafka_controller_controllerstats_leaderelectionrateandtimems_count")
		return v >= 1
	})
	p99, ok := sample(body, `kafka_controller_controllerstats_leaderelectionrateandtimems{quantile="0.99"}`)
	if !ok || math.IsNaN(p99) || p99 <= 0 {
		t.Fatalf("leader election p99 %v (found %v)", p99, ok)
	}
	if sum, _ := sample(body, "kafka_controller_controllerstats_leaderelectionrateandtimems_sum"); sum <= 0 {
		t.Errorf("leader election time sum %v", sum)
	}
}

// TestMetricsClusterLagFollowed: the group coordinator reports consumer
// lag for a partition led by the other broker, from its follower replica's
// high watermark (before, only partitions led by the coordinator's broker
// had a lag series).
func TestMetricsClusterLagFollowed(t *testing.T) {
	c := startInprocCluster(t, 2, "strata.metrics.listener=127.0.0.1:0", "offsets.topic.replication.factor=2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 2, 2, nil, "lagged"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("lagged", 2, 2)
	cl := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 10; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lagged", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 4, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: 7, LeaderEpoch: -1})
	var commitErr error
	defer func() {
		if t.Failed() {
			t.Logf("last commit error: %v", commitErr)
		}
	}()
	waitFor(t, 30*time.Second, "the offsets commit (__consumer_offsets coming up)", func() bool {
		commitErr = adm.CommitAllOffsets(ctx, "watchers", offs)
		return commitErr == nil
	})
	coords := adm.FindGroupCoordinators(ctx, "watchers")
	co := coords.Sorted()
	if err := coords.Error(); err != nil || len(co) != 1 {
		t.Fatalf("coordinator: %v %v", co, err)
	}
	coord := c.broker(co[0].NodeID)
	leaders := c.broker(1).cl.images.load().topics["lagged"].parts
	elsewhere := -1
	for p := range leaders {
		if leaders[p].leader != co[0].NodeID {
			elsewhere = p
		}
	}
	if elsewhere < 0 {
		t.Fatalf("both partitions led by the coordinator's broker %d: placement did not spread leaders", co[0].NodeID)
	}
	want := map[int]float64{0: 6, 1: 3}
	var body string
	defer func() {
		if t.Failed() {
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "kafka_consumergroup") || strings.HasPrefix(l, "kafka_topic_partition_current") {
					t.Log(l)
				}
			}
		}
	}()
	waitFor(t, 30*time.Second, "lag of both partitions on the coordinator", func() bool {
		body = scrape(t, coord, "/metrics")
		for p, w := range want {
			if v, ok := sample(body, fmt.Sprintf(`kafka_consumergroup_lag{consumergroup="watchers",partition="%d",topic="lagged"}`, p)); !ok || v != w {
				return false
			}
		}
		return true
	})
}

// TestMetricsClusterLagRemote: with three brokers on a real ZooKeeper, a
// group whose coordinator's broker holds no replica of the consumed topic
// (replication factor 1, placed on another broker) has a lag series: the
// coordinator learns the high watermark from the leader (ListOffsets every
// strata.consumer.lag.refresh.ms). The lag is right after the consumer
// commits and stops, follows more records produced, and goes away (no
// stale value) when the leader's broker is gone. Before, that partition
// had no lag series at all.
func TestMetricsClusterLagRemote(t *testing.T) {
	testLagRemote(t, startInprocCluster(t, 3, "strata.metrics.listener=127.0.0.1:0", "strata.consumer.lag.refresh.ms=200"))
}

// TestMetricsClusterLagRemoteSASLSSL: the same with the inter-broker
// listener on SASL_SSL (SCRAM-SHA-256, client certificates required, ACLs
// on): the coordinator's ListOffsets to the leader goes over it,
// authenticated as the brokers' own user.
func TestMetricsClusterLagRemoteSASLSSL(t *testing.T) {
	p := newTestPKI(t)
	_, connect := testZK(t)
	addZKScramUser(t, connect, "admin", security.ScramSHA256, "admin-secret")
	testLagRemote(t, startInprocClusterAt(t, connect, 3, append(interBrokerSASLSSL(p, "admin-secret"),
		"strata.metrics.listener=127.0.0.1:0", "strata.consumer.lag.refresh.ms=200")...))
}

// testLagRemote runs TestMetricsClusterLagRemote on the three brokers of c
// (clients on their first listener).
func testLagRemote(t *testing.T, c *inprocCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const group, topic = "faraway", "remote-lag"
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	var co kadm.FindCoordinatorResponses
	waitFor(t, 60*time.Second, "the group's coordinator (__consumer_offsets coming up)", func() bool {
		co = adm.FindGroupCoordinators(ctx, group)
		return co.Error() == nil && len(co) == 1
	})
	coordID := co.Sorted()[0].NodeID
	coord := c.broker(coordID)
	other := coordID%3 + 1
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{other}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, clusterClient(t, c.addrs())); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.waitLed(topic, 1, 1)
	if coord.cl.rm.Partition(topic, 0) != nil {
		t.Fatalf("the coordinator's broker %d holds a replica of %s-0 (placed on %d)", coordID, topic, other)
	}
	prod := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(10)
	cons := clusterClient(t, c.addrs(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 10 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", got, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close() // leaves the group: the consumer is stopped
	series := fmt.Sprintf(`{consumergroup="%s",partition="0",topic="%s"}`, group, topic)
	var body string
	defer func() {
		if t.Failed() {
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "kafka_consumergroup") {
					t.Log(l)
				}
			}
		}
	}()
	wantLag := func(what string, lag float64) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() bool {
			body = scrape(t, coord, "/metrics")
			off, ok1 := sample(body, "kafka_consumergroup_current_offset"+series)
			v, ok2 := sample(body, "kafka_consumergroup_lag"+series)
			return ok1 && off == 10 && ok2 && v == lag
		})
	}
	wantLag("lag 0 after the consumer committed everything", 0)
	produce(7)
	wantLag("lag 7 after 7 more records", 7)
	produce(5)
	wantLag("lag 12 after 5 more records", 12)
	c.broker(other).Close()
	waitFor(t, 60*time.Second, "the lag series gone with the leader's broker", func() bool {
		body = scrape(t, coord, "/metrics")
		_, ok := sample(body, "kafka_consumergroup_lag"+series)
		off, okOff := sample(body, "kafka_consumergroup_current_offset"+series)
		return !ok && okOff && off == 10
	})
}
