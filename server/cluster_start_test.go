package server

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// TestClusterStart: a broker given zookeeper.connect registers
// /brokers/ids/N (ephemeral, its endpoints), creates /cluster/id, writes
// meta.properties version 0 with that cluster id and its broker.id, and
// advertises the inter-broker APIs; Close takes the registration away at
// once.
func TestClusterStart(t *testing.T) {
	_, connect := testZK(t)
	dir := t.TempDir()
	s := startClusterBroker(t, connect, 3, dir)
	z := testZKConn(t, connect)
	data, st, err := z.Get(cluster.BrokerPath(3))
	if err != nil {
		t.Fatalf("registration: %v", err)
	}
	reg, err := cluster.DecodeBrokerRegistration(3, data)
	if err != nil || st.EphemeralOwner == 0 || len(reg.Endpoints) != 1 || reg.Endpoints[0].Port != int32(s.Addr().(*net.TCPAddr).Port) {
		t.Fatalf("registration %+v %v (owner %d)", reg, err, st.EphemeralOwner)
	}
	idData, _, err := z.Get(cluster.ClusterIDPath)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := cluster.DecodeClusterID(idData)
	if id == "" || s.ClusterID() != id {
		t.Fatalf("cluster id %q, broker says %q", id, s.ClusterID())
	}
	meta, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if err != nil || !strings.Contains(string(meta), "broker.id=3\n") || !strings.Contains(string(meta), "version=0\n") ||
		!strings.Contains(string(meta), "cluster.id="+id+"\n") {
		t.Fatalf("meta.properties %q %v", meta, err)
	}
	r := dialRaw(t, s)
	r.send(kmsg.NewPtrApiVersionsRequest(), 1)
	resp := kmsg.NewPtrApiVersionsResponse()
	frame, err := r.readFrame()
	if err != nil || resp.ReadFrom(frame[4:]) != nil {
		t.Fatal(err)
	}
	keys := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = true
	}
	for _, k := range []kmsg.Key{kmsg.LeaderAndISR, kmsg.UpdateMetadata, kmsg.StopReplica, kmsg.ControlledShutdown, kmsg.OffsetForLeaderEpoch, kmsg.DescribeCluster} {
		if !keys[int16(k)] {
			t.Errorf("ApiVersions lacks %s", kmsg.NameForKey(int16(k)))
		}
	}
	s.Close()
	if ok, _, err := z.Exists(cluster.BrokerPath(3)); ok || err != nil {
		t.Fatalf("registration after Close: %v %v", ok, err)
	}
}

// TestSingleNodeAdvertisesNoClusterAPIs: without zookeeper.connect the
// inter-broker APIs are neither advertised nor served.
func TestSingleNodeAdvertisesNoClusterAPIs(t *testing.T) {
	s := startServer(t, t.TempDir())
	for _, k := range clusterAPIs {
		if _, ok := s.versionRange(k.key); ok {
			t.Errorf("single node serves %s", kmsg.NameForKey(k.key))
		}
	}
}

// TestClusterZooKeeperDown: with nothing at zookeeper.connect the broker
// gives up after zookeeper.connection.timeout.ms with an error that says
// so, and leaves its log dirs unlocked.
func TestClusterZooKeeperDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	dir := t.TempDir()
	start := time.Now()
	_, err = tryClusterBroker(addr, 1, dir, "zookeeper.connection.timeout.ms=1500")
	took := time.Since(start)
	if !errors.Is(err, ErrCluster) || !errors.Is(err, cluster.ErrNoSession) || !strings.Contains(err.Error(), "zookeeper.connection.timeout.ms") {
		t.Fatalf("error %v", err)
	}
	if took < 1400*time.Millisecond {
		t.Fatalf("gave up after %v, before the connection timeout", took)
	}
	// The log dir is free: a single node starts on it.
	startServer(t, dir)
}

// TestClusterSameBrokerID: a second broker with a broker.id already
// registered is refused; the first keeps its registration and serves.
func TestClusterSameBrokerID(t *testing.T) {
	_, connect := testZK(t)
	first := startClusterBroker(t, connect, 1, t.TempDir())
	_, err := tryClusterBroker(connect, 1, t.TempDir())
	if !errors.Is(err, ErrCluster) || !strings.Contains(err.Error(), "broker.id 1 is already registered") {
		t.Fatalf("second broker 1: %v", err)
	}
	z := testZKConn(t, connect)
	if ok, _, err := z.Exists(cluster.BrokerPath(1)); !ok || err != nil {
		t.Fatalf("the first broker's registration: %v %v", ok, err)
	}
	r := dialRaw(t, first)
	r.send(kmsg.NewPtrApiVersionsRequest(), 1)
	if _, err := r.readFrame(); err != nil {
		t.Fatalf("the first broker stopped serving: %v", err)
	}
}

// TestClusterInconsistentClusterID: log dirs whose meta.properties names
// another cluster are refused before recovery opens them (Kafka's
// InconsistentClusterIdException), and so are a broker.id that disagrees
// with meta.properties and data of a single node.
func TestClusterInconsistentClusterID(t *testing.T) {
	_, connect := testZK(t)
	dir := t.TempDir()
	s := startClusterBroker(t, connect, 1, dir)
	s.Close()
	// Another cluster (a new chroot) with the same data.
	_, err := tryClusterBroker(connect+"-other", 1, dir)
	if !errors.Is(err, ErrInconsistentClusterID) || !strings.Contains(err.Error(), "another cluster") {
		t.Fatalf("another cluster's data: %v", err)
	}
	// Same cluster, another broker.id.
	if _, err := tryClusterBroker(connect, 2, dir); !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), "does not match broker.id 1") {
		t.Fatalf("broker.id 2 on broker 1's data: %v", err)
	}
	// broker.id -1 takes meta.properties' id.
	s = startClusterBroker(t, connect, -1, dir)
	if s.NodeID() != 1 {
		t.Fatalf("broker.id -1 on broker 1's data: id %d", s.NodeID())
	}
	s.Close()
	// A single node's data dir.
	single := t.TempDir()
	startServer(t, single).Close()
	if _, err := tryClusterBroker(connect, 0, single); !errors.Is(err, ErrInconsistentClusterID) {
		t.Fatalf("a single node's data: %v", err)
	}
}

// TestClusterGeneratedBrokerID: broker.id -1 with empty log dirs takes an
// id from /brokers/seqid above reserved.broker.max.id, and keeps it across
// restarts through meta.properties.
func TestClusterGeneratedBrokerID(t *testing.T) {
	_, connect := testZK(t)
	dir := t.TempDir()
	cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "zookeeper.connect=" + connect}, nil)
	if err != nil || cfg.NodeID != -1 {
		t.Fatalf("%v %d", err, cfg.NodeID)
	}
	s, err := Start(cfg, &Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	id := s.NodeID()
	s.Close()
	if id <= cluster.ReservedBrokerMaxID {
		t.Fatalf("generated id %d", id)
	}
	s2, err := Start(cfg, &Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.NodeID() != id {
		t.Fatalf("restart: id %d, first %d", s2.NodeID(), id)
	}
}
