package server

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/security"
)

// interBrokerSASLSSL are the properties of a cluster whose brokers talk to
// each other over SASL_SSL with SCRAM-SHA-256 as user admin (password
// pass), TLS client certificates required, ACLs on with admin a super
// user; clients of the test use the PLAINTEXT listener (ANONYMOUS, also a
// super user).
func interBrokerSASLSSL(p *testPKI, pass string) []string {
	return []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name=SASL_SSL",
		"ssl.keystore.type=PEM", "ssl.keystore.location=" + p.keyFile,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + p.caFile,
		"listener.name.sasl_ssl.ssl.client.auth=required",
		"sasl.enabled.mechanisms=SCRAM-SHA-256",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256",
		`listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + pass + `";`,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"super.users=User:admin;User:ANONYMOUS",
		"connection.failed.authentication.delay.ms=20",
	}
}

// addZKScramUser writes a SCRAM credential to /config/users/<user> as
// kafka-configs --zookeeper does, before any broker runs.
func addZKScramUser(t *testing.T, connect, user, mech, pass string) {
	t.Helper()
	m, _ := security.ScramMechanismByName(mech)
	cred := m.NewCredential(pass, 4096)
	zk := testZKConn(t, connect)
	if err := cluster.EnsurePersistentPaths(zk, time.Now().Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := cluster.NewAdmin(zk).ChangeEntityConfig(cluster.ConfigTypeUser, user,
		map[string]string{mech: cred.String()}); err != nil {
		t.Fatal(err)
	}
}

// partState0 is topic-partition 0 as broker b's metadata cache has it.
func partState0(b *Server, topic string) (metaPartition, bool) {
	im := b.cl.images.load()
	tp := im.topics[topic]
	if tp == nil || len(tp.parts) == 0 {
		return metaPartition{}, false
	}
	return tp.parts[0], true
}

// TestInterBrokerSASLSSL: three brokers whose inter-broker listener is
// SASL_SSL (SCRAM-SHA-256, client certificates required, ACLs on):
// LeaderAndIsr reaches them, followers replicate into a full ISR, and when
// the leader stops another is elected and serves every acknowledged
// record, and acks=all goes on with the two left. A fourth broker with a
// wrong inter-broker password logs the authentication failure and never
// replicates a partition assigned to it: its replica leaves the ISR and
// its log stays empty.
func TestInterBrokerSASLSSL(t *testing.T) {
	p := newTestPKI(t)
	_, connect := testZK(t)
	addZKScramUser(t, connect, "admin", security.ScramSHA256, "admin-secret")
	c := startInprocClusterAt(t, connect, 3, interBrokerSASLSSL(p, "admin-secret")...)
	admin := secureClient(t, c.broker(1), "PLAINTEXT", nil, nil)
	if _, err := kadm.NewClient(admin).CreateTopic(testCtx(t), 1, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	c.waitLed("t", 1, 3)
	mk := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DisableIdempotentWrite(), kgo.RetryTimeout(30 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	roundTripRecords(t, mk, "t", 20)
	// every follower holds the 20 records: replicated over SASL_SSL
	waitFor(t, 30*time.Second, "followers at offset 20", func() bool {
		for _, b := range c.brokers {
			if rp := b.cl.rm.Partition("t", 0); rp == nil || rp.Log().LogEndOffset() != 20 {
				return false
			}
		}
		return true
	})

	mp, _ := partState0(c.broker(1), "t")
	old := mp.leader
	c.broker(old).Close()
	waitFor(t, 60*time.Second, "a new leader of t-0 and ISR 2", func() bool {
		for _, b := range c.brokers {
			if b.closing.Load() {
				continue
			}
			mp, ok := partState0(b, "t")
			if !ok || mp.leader == old || mp.leader < 0 || len(mp.isr) != 2 {
				return false
			}
		}
		return true
	})
	p2 := mk()
	for i := 20; i < 30; i++ {
		if err := p2.ProduceSync(testCtx(t), &kgo.Record{Topic: "t", Value: []byte(fmt.Sprintf("t-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce after failover: %v", err)
		}
	}
	cons := mk(kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 30; {
		fs := cons.PollFetches(testCtx(t))
		if err := testCtx(t).Err(); err != nil {
			t.Fatalf("consumed %d of 30 after failover", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("t-%d", got); string(r.Value) != want {
				t.Fatalf("record %d: %q, want %q", got, r.Value, want)
			}
			got++
		})
	}

	// broker 4 with the wrong password
	var logs logBuffer
	b4, err := tryClusterBrokerWith(connect, 4, t.TempDir(), &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		append([]string{"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5"},
			interBrokerSASLSSL(p, "wrong-secret")...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b4.Close() })
	live := c.addrs()
	waitFor(t, 60*time.Second, "broker 4 registered", func() bool {
		return len(metadataOf(t, live, "").Brokers) == 3
	})
	leader := int32(-1)
	for _, b := range c.brokers {
		if !b.closing.Load() {
			leader = b.NodeID()
			break
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "w", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{leader, 4}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), admin)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create w: %v %+v", err, resp)
	}
	pw := mk(kgo.RequiredAcks(kgo.LeaderAck()))
	for i := 0; i < 5; i++ {
		if err := pw.ProduceSync(testCtx(t), &kgo.Record{Topic: "w", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to w: %v", err)
		}
	}
	const failed = "inter-broker authentication failed"
	waitFor(t, 60*time.Second, "broker 4 to log its failed authentication three times and leave w-0's ISR", func() bool {
		mp, ok := partState0(c.broker(leader), "w")
		return strings.Count(logs.String(), failed) >= 3 && ok && slices.Equal(mp.isr, []int32{leader})
	})
	if !strings.Contains(logs.String(), "SCRAM-SHA-256") {
		t.Fatalf("the log does not name the mechanism:\n%s", logs.String())
	}
	if rp := b4.cl.rm.Partition("w", 0); rp == nil || rp.Log().LogEndOffset() != 0 {
		t.Fatalf("broker 4 should hold an empty replica of w-0 (the controller's LeaderAndIsr reached it) and replicate nothing: %v", rp)
	}
	if mp, _ := partState0(c.broker(leader), "w"); slices.Contains(mp.isr, 4) {
		t.Fatalf("broker 4 in w-0's ISR: %v", mp.isr)
	}
}

// TestInterBrokerConfigAccepted: security.inter.broker.protocol names the
// inter-broker listener; PLAIN's credentials come from the listener's JAAS
// username/password options (the user_ options are the server side).
func TestInterBrokerConfigAccepted(t *testing.T) {
	cfg, err := LoadConfig("", []string{"zookeeper.connect=zk:2181", "listeners=PLAINTEXT://h:1,SASL_PLAINTEXT://h:2",
		"security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + testPlainJAAS}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.interBrokerListener(); l != "SASL_PLAINTEXT" {
		t.Fatalf("inter-broker listener %s", l)
	}
	sec, err := interBrokerSecurity(cfg)
	if err != nil || sec.TLS != nil || sec.SASL == nil || sec.SASL.Name() != "PLAIN" {
		t.Fatalf("%+v %v", sec, err)
	}
	sess, msg, err := sec.SASL.Authenticate(testCtx(t), "h:2")
	if err != nil || string(msg) != "\x00admin\x00admin-secret" || sess == nil {
		t.Fatalf("PLAIN message %q %v", msg, err)
	}
}
