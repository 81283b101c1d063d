package server

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stratalog/strata/cluster"
)

// TestClusterQuotasInZooKeeper: in cluster mode a quota altered through
// broker 1 lands in /config/users/<user>/clients/<client> (parents made,
// Kafka's format, a /config/changes notification) and broker 2 enforces
// it without a restart; one written straight into ZooKeeper (as
// kafka-configs.sh --zookeeper does) reaches both; a user's quota keys sit
// beside its SCRAM credential in /config/users/<user>, neither clobbering
// the other; removal through broker 2 reaches broker 1; a broker started
// later loads them all; a malformed quota znode is skipped, not fatal.
func TestClusterQuotasInZooKeeper(t *testing.T) {
	c := startInprocCluster(t, 2)
	b1, b2 := c.broker(1), c.broker(2)
	admin := secureClient(t, b1, "PLAINTEXT", nil, nil)
	alice, c1 := "alice", "c1"
	entity := kadm.ClientQuotaEntity{{Type: "user", Name: &alice}, {Type: "client-id", Name: &c1}}
	res, err := kadm.NewClient(admin).AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{
		{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: quotaProducerByteRate, Value: 1048576}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: quotaConsumerByteRate, Value: 2048}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v", r.Entity, r.Err)
		}
	}
	zk := testZKConn(t, c.connect)
	for p, want := range map[string]string{
		"/config/users/alice/clients/c1": `{"version":1,"config":{"producer_byte_rate":"1048576"}}`,
		"/config/clients/<default>":      `{"version":1,"config":{"consumer_byte_rate":"2048"}}`,
	} {
		if data, _, err := zk.Get(p); err != nil || string(data) != want {
			t.Fatalf("%s: %s %v, want %s", p, data, err, want)
		}
	}
	waitFor(t, 20*time.Second, "broker 2 to load the quotas", func() bool {
		b, _, ok := b2.quotas.q.resolve(quotaProduce, "alice", "c1")
		f, _, ok2 := b2.quotas.q.resolve(quotaFetch, "bob", "any")
		return ok && b == 1048576 && ok2 && f == 2048
	})
	// Straight into ZooKeeper, as kafka-configs.sh --zookeeper writes.
	if err := cluster.NewAdmin(zk).ChangeEntityConfig(cluster.ConfigTypeClient, "c9", map[string]string{quotaRequestPercentage: "25.0"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*Server{b1, b2} {
		waitFor(t, 20*time.Second, "a ZooKeeper-written quota to load", func() bool {
			v, _, ok := b.quotas.q.resolve(quotaRequest, "x", "c9")
			return ok && v == 25
		})
	}
	// A user's SCRAM credential and quota share /config/users/alice.
	addScramUser(t, admin, "alice", "alice-secret", kadm.ScramSha256)
	setQuota(t, b1, kadm.ClientQuotaEntity{{Type: "user", Name: &alice}}, quotaConsumerByteRate, 5000, false)
	addScramUser(t, admin, "alice", "alice-secret2", kadm.ScramSha512)
	data, _, err := zk.Get("/config/users/alice")
	if err != nil || !strings.Contains(string(data), `"SCRAM-SHA-256":"salt=`) || !strings.Contains(string(data), `"SCRAM-SHA-512":"salt=`) ||
		!strings.Contains(string(data), `"consumer_byte_rate":"5000"`) {
		t.Fatalf("/config/users/alice: %s %v", data, err)
	}
	// Removal through broker 2 reaches broker 1.
	setQuota(t, b2, entity, quotaProducerByteRate, 0, true)
	waitFor(t, 20*time.Second, "broker 1 to drop the removed quota", func() bool {
		_, _, ok := b1.quotas.q.resolve(quotaProduce, "alice", "c1")
		return !ok
	})
	// A malformed quota znode is skipped with a log line.
	if _, err := zk.Create("/config/clients/junk", []byte(`{"version":1,"config":{"producer_byte_rate":"lots"}}`), cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := zk.Create(cluster.ConfigChangeCreatePath(), cluster.EncodeConfigChange("clients/junk"), cluster.PersistentSequential); err != nil {
		t.Fatal(err)
	}
	// A broker started now loads what is stored (and skips the junk).
	b3 := startClusterBroker(t, c.connect, 3, t.TempDir(), "replica.lag.time.max.ms=4000")
	if v, _, ok := b3.quotas.q.resolve(quotaFetch, "alice", "other"); !ok || v != 5000 {
		t.Fatalf("broker 3 at start: users/alice consumer_byte_rate %v %v", v, ok)
	}
	if v, _, ok := b3.quotas.q.resolve(quotaRequest, "x", "c9"); !ok || v != 25 {
		t.Fatalf("broker 3 at start: clients/c9 request_percentage %v %v", v, ok)
	}
	if _, _, ok := b3.quotas.q.resolve(quotaProduce, "x", "junk"); ok {
		t.Fatal("broker 3 loaded the junk quota")
	}
	d, err := kadm.NewClient(secureClient(t, b2, "PLAINTEXT", nil, nil)).DescribeClientQuotas(testCtx(t), false, nil)
	if err != nil || len(d) != 3 {
		t.Fatalf("describe through broker 2: %+v %v", d, err)
	}
}
