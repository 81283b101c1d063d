package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/internal/zktest"
)

// zkChroots numbers the chroots of one test binary: brokers of different
// tests on one ZooKeeper never see each other.
var zkChroots atomic.Int64

// testZK starts a real ZooKeeper for t (internal/zktest) and returns a
// zookeeper.connect with a chroot of its own.
func testZK(t testing.TB) (*zktest.Server, string) {
	t.Helper()
	zs := zktest.Start(t)
	return zs, fmt.Sprintf("%s/strata-%d", zs.Addr(), zkChroots.Add(1))
}

// startClusterBroker starts broker id of the cluster at connect, with its
// data in dir; extra are key=value overrides.
func startClusterBroker(t testing.TB, connect string, id int32, dir string, extra ...string) *Server {
	t.Helper()
	s, err := tryClusterBroker(connect, id, dir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func tryClusterBroker(connect string, id int32, dir string, extra ...string) (*Server, error) {
	return tryClusterBrokerWith(connect, id, dir, nil, extra...)
}

// tryClusterBrokerWith starts a cluster broker with opts (its Logger set
// when nil).
func tryClusterBrokerWith(connect string, id int32, dir string, opts *Options, extra ...string) (*Server, error) {
	ov := append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "zookeeper.connect=" + connect,
		"broker.id=" + strconv.Itoa(int(id)), "zookeeper.session.timeout.ms=4000", "zookeeper.connection.timeout.ms=10000",
		"controlled.shutdown.enable=false", "group.initial.rebalance.delay.ms=0", "strata.metrics.listener=127.0.0.1:0"}, extra...)
	cfg, err := LoadConfig("", ov, nil)
	if err != nil {
		return nil, err
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = testLogger()
	}
	return Start(cfg, &o)
}

// testZKConn is a ZooKeeper session of the test's own, on the chroot.
func testZKConn(t testing.TB, connect string) cluster.ZK {
	t.Helper()
	z, err := cluster.DialZK(cluster.ZKConfig{Connect: connect, SessionTimeout: 4 * time.Second, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

// fakeController plays Kafka's controller for tests that drive brokers
// with hand-made control requests: it holds /controller (so no broker's
// member is elected while it lives) and sends over kwire.
type fakeController struct {
	t     testing.TB
	zk    cluster.ZK
	id    int32
	epoch int32
	// ghosts are brokers the test plays itself (a follower that fetches by
	// hand): UpdateMetadata lists them live at 127.0.0.1:1.
	ghosts []int32
}

func newFakeController(t testing.TB, connect string) *fakeController {
	t.Helper()
	z := testZKConn(t, connect)
	for _, p := range []string{cluster.ClusterPath, cluster.BrokersPath, cluster.BrokerIDsPath} {
		_, _ = z.Create(p, nil, cluster.Persistent)
	}
	if _, err := z.Create(cluster.ControllerPath, cluster.EncodeController(999, time.Now().UnixMilli()), cluster.Ephemeral); err != nil {
		t.Fatalf("fake controller: %v", err)
	}
	return &fakeController{t: t, zk: z, id: 999, epoch: 5}
}

// send sends req to s and returns the response.
func (fc *fakeController) send(s *Server, req kmsg.Request) kmsg.Response {
	fc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := kwire.Dial(ctx, s.Addr().String(), kwire.Options{ClientID: "fake-controller"})
	if err != nil {
		fc.t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Request(ctx, req)
	if err != nil {
		fc.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// partState is one partition of a LeaderAndIsr or UpdateMetadata.
type partState struct {
	topic       string
	id          [16]byte
	partition   int32
	leader      int32
	leaderEpoch int32
	isr         []int32
	replicas    []int32
	zkVersion   int32
}

// leaderAndIsr sends LeaderAndIsr v5 for parts to s (brokers are the live
// leaders' endpoints).
func (fc *fakeController) leaderAndIsr(s *Server, brokers []*Server, parts ...partState) *kmsg.LeaderAndISRResponse {
	fc.t.Helper()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 5
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = fc.id, fc.epoch, -1
	for _, p := range parts {
		if n := len(req.TopicStates); n == 0 || req.TopicStates[n-1].Topic != p.topic {
			ts := kmsg.NewLeaderAndISRRequestTopicState()
			ts.Topic, ts.TopicID = p.topic, p.id
			req.TopicStates = append(req.TopicStates, ts)
		}
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = p.partition, fc.epoch, p.leader, p.leaderEpoch
		ps.ISR, ps.Replicas, ps.ZKVersion = p.isr, p.replicas, p.zkVersion
		ts := &req.TopicStates[len(req.TopicStates)-1]
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	for _, b := range brokers {
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		host, port := hostPort(b.Addr())
		l.BrokerID, l.Host, l.Port = b.NodeID(), host, port
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	return fc.send(s, req).(*kmsg.LeaderAndISRResponse)
}

// updateMetadata sends UpdateMetadata v7 with brokers live and parts.
func (fc *fakeController) updateMetadata(s *Server, brokers []*Server, parts ...partState) *kmsg.UpdateMetadataResponse {
	fc.t.Helper()
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 7
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = fc.id, fc.epoch, -1
	for _, p := range parts {
		if n := len(req.TopicStates); n == 0 || req.TopicStates[n-1].Topic != p.topic {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic, ts.TopicID = p.topic, p.id
			req.TopicStates = append(req.TopicStates, ts)
		}
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = p.partition, fc.epoch, p.leader, p.leaderEpoch
		ps.ISR, ps.Replicas, ps.ZKVersion, ps.OfflineReplicas = p.isr, p.replicas, p.zkVersion, []int32{}
		ts := &req.TopicStates[len(req.TopicStates)-1]
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	for _, b := range brokers {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = b.NodeID()
		host, port := hostPort(b.Addr())
		e := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		e.Host, e.Port, e.ListenerName, e.SecurityProtocol = host, port, "PLAINTEXT", 0
		lb.Endpoints = append(lb.Endpoints, e)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	for _, id := range fc.ghosts {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		e := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		e.Host, e.Port, e.ListenerName = "127.0.0.1", 1, "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, e)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	return fc.send(s, req).(*kmsg.UpdateMetadataResponse)
}

func hostPort(a net.Addr) (string, int32) {
	ta := a.(*net.TCPAddr)
	return ta.IP.String(), int32(ta.Port)
}

func kwireDial(ctx context.Context, addr string) (*kwire.Conn, error) {
	return kwire.Dial(ctx, addr, kwire.Options{ClientID: "test"})
}
