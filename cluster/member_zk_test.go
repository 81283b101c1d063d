package cluster_test

import (
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/faultproxy"
	"github.com/stratalog/strata/internal/zktest"
)

// dialReal opens a session to a real ZooKeeper, through a proxy of its own
// when proxy is true (so the test can cut it).
func dialReal(t *testing.T, srv *zktest.Server, timeout time.Duration, proxy bool) (cluster.ZK, *faultproxy.Proxy) {
	t.Helper()
	addr := srv.Addr()
	var p *faultproxy.Proxy
	if proxy {
		var err error
		if p, err = faultproxy.New(addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		addr = p.Addr()
	}
	z, err := cluster.DialZK(cluster.ZKConfig{Connect: addr, SessionTimeout: timeout, ConnectionTimeout: 30 * time.Second,
		Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	return z, p
}

// TestMemberRealZK: against a real ZooKeeper, the registration's bytes are
// Kafka's (golden file), so are /controller's and /controller_epoch's; a
// second broker with the same broker.id is refused while the first keeps
// running (still registered, still the controller); a topic created
// through Admin (its multi proves no deletion pending) is led.
func TestMemberRealZK(t *testing.T) {
	srv := zktest.Start(t)
	z, _ := dialReal(t, srv, 20*time.Second, false)
	at := time.UnixMilli(1700000000000)
	cfg := cluster.MemberConfig{ZK: z, BrokerID: 1, Now: func() time.Time { return at }, Logger: testLog(t),
		Endpoints: []cluster.Endpoint{{Listener: "PLAINTEXT", Host: "b1", Port: 9092}}}
	m := startMember(t, cfg)
	waitFor(t, 20*time.Second, "the controller", m.IsController)

	obs, _ := dialReal(t, srv, 20*time.Second, false)
	defer obs.Close()
	for path, golden := range map[string]string{
		cluster.BrokerPath(1):  "broker_v5.json",
		cluster.ControllerPath: "controller_v1.json",
	} {
		want, err := os.ReadFile("testdata/znodes/" + golden)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := obs.Get(path)
		if err != nil || string(got) != strings.TrimSpace(string(want)) {
			t.Fatalf("%s: %s (%v)\nwant %s", path, got, err, want)
		}
	}
	if got, _, err := obs.Get(cluster.ControllerEpochPath); err != nil || string(got) != "1" {
		t.Fatalf("/controller_epoch %q %v", got, err)
	}
	_, st1, _ := obs.Get(cluster.BrokerPath(1))

	z2, _ := dialReal(t, srv, 20*time.Second, false)
	cfg2 := cfg
	cfg2.ZK = z2
	_, err := cluster.StartMember(cfg2)
	z2.Close()
	if !errors.Is(err, cluster.ErrBrokerIDTaken) || !strings.Contains(err.Error(), "broker.id 1 is already registered by another broker") {
		t.Fatalf("duplicate broker.id: %v", err)
	}
	if _, st, err := obs.Get(cluster.BrokerPath(1)); err != nil || st.Czxid != st1.Czxid || st.EphemeralOwner != st1.EphemeralOwner {
		t.Fatalf("the first registration changed: %+v -> %+v (%v)", st1, st, err)
	}
	if !m.IsController() || m.BrokerEpoch() != st1.Czxid {
		t.Fatal("the first broker stopped being the controller")
	}

	admin := cluster.NewAdmin(obs)
	if _, err := admin.CreateTopic("real", [][]int32{{1}, {1}}, map[string]string{"retention.ms": "5"}, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "real led", func() bool { return allLed(t, admin, "real", 2, map[int32]bool{1: true}) })
	if _, err := admin.CreateTopic("real", [][]int32{{1}}, nil, [16]byte{}); !errors.Is(err, cluster.ErrTopicExists) {
		t.Fatalf("creating it again: %v", err)
	}
	if err := admin.DeleteTopic("real"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic("real", [][]int32{{1}}, nil, [16]byte{}); !errors.Is(err, cluster.ErrTopicExists) ||
		!strings.Contains(err.Error(), "marked for deletion") {
		t.Fatalf("creating it while marked for deletion: %v", err)
	}
}

// TestMemberZooKeeperDownAtStart: with nothing answering, joining fails
// with ErrNoSession after zookeeper.connection.timeout.ms, not before.
func TestMemberZooKeeperDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = cluster.JoinCluster(cluster.ZKConfig{Connect: addr, ConnectionTimeout: 500 * time.Millisecond},
		cluster.MemberConfig{BrokerID: 1, Logger: quietLog})
	if !errors.Is(err, cluster.ErrNoSession) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("joining with ZooKeeper down: %v", err)
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Fatalf("gave up after %v, before zookeeper.connection.timeout.ms", el)
	}
}

// TestMemberZooKeeperRestart: ZooKeeper stops under a running member and
// comes back within the session timeout: the member keeps its
// registration (same broker epoch) and controllership, and the controller
// works on (a topic created afterwards is led).
func TestMemberZooKeeperRestart(t *testing.T) {
	srv := zktest.Start(t)
	// the server's longest session: a JVM restart on a loaded machine may
	// take a while, and the session must outlive it
	z, _ := dialReal(t, srv, 60*time.Second, false)
	b := startTestBroker(t, 1)
	cfg := memberConfig(t, z, b)
	m := startMember(t, cfg)
	waitFor(t, 20*time.Second, "controller", m.IsController)
	epoch := m.BrokerEpoch()
	srv.Stop()
	// while ZooKeeper is down the member answers without blocking
	done := make(chan struct{})
	go func() {
		_ = m.IsController()
		_ = m.ControllerID()
		_ = m.BrokerEpoch()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("member accessors blocked while ZooKeeper is down")
	}
	srv.Restart()
	obs, _ := dialReal(t, srv, 20*time.Second, false)
	defer obs.Close()
	admin := cluster.NewAdmin(obs)
	if _, err := admin.CreateTopic("after", [][]int32{{1}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "after led", func() bool { return allLed(t, admin, "after", 1, map[int32]bool{1: true}) })
	if m.BrokerEpoch() != epoch || !m.IsController() {
		t.Fatalf("broker epoch %d -> %d, controller %v", epoch, m.BrokerEpoch(), m.IsController())
	}
	if _, st, err := obs.Get(cluster.BrokerPath(1)); err != nil || st.Czxid != epoch {
		t.Fatalf("registration after the restart: %+v %v", st, err)
	}
}

// TestMemberRealSessionExpiry: three brokers over a real ZooKeeper; the
// controller's connection is cut until ZooKeeper expires its session. The
// others are told (its /controller is deleted) and one of them is the
// active controller within 1 s of that (this test prints the figure; the
// benchmark measures the same with 1,000 partitions); every partition is
// led by a live broker; when the connection comes back the old controller
// registers again with a new broker epoch and is no controller.
func TestMemberRealSessionExpiry(t *testing.T) {
	srv := zktest.Start(t)
	const timeout = 4 * time.Second
	var members []*cluster.Member
	var proxies []*faultproxy.Proxy
	for i := int32(1); i <= 3; i++ {
		z, p := dialReal(t, srv, timeout, true)
		b := startTestBroker(t, i)
		members, proxies = append(members, startMember(t, memberConfig(t, z, b))), append(proxies, p)
	}
	var old *cluster.Member
	waitFor(t, 20*time.Second, "controller", func() bool { old = controllerOf(t, members); return old != nil })
	obs, _ := dialReal(t, srv, 20*time.Second, false)
	defer obs.Close()
	admin := cluster.NewAdmin(obs)
	var assign [][]int32
	for p := 0; p < 12; p++ {
		assign = append(assign, []int32{int32(p%3 + 1), int32((p+1)%3 + 1), int32((p+2)%3 + 1)})
	}
	if _, err := admin.CreateTopic("x", assign, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	all := map[int32]bool{1: true, 2: true, 3: true}
	waitFor(t, 20*time.Second, "x led", func() bool { return allLed(t, admin, "x", len(assign), all) })
	oldEpoch := old.BrokerEpoch()
	i := slices.Index(members, old)

	_, _, gone, err := obs.ExistsW(cluster.ControllerPath)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	proxies[i].Refuse()
	select {
	case <-gone:
	case <-time.After(60 * time.Second):
		t.Fatal("the controller's session did not expire")
	}
	seen := time.Now()
	var next *cluster.Member
	waitFor(t, 20*time.Second, "a new controller", func() bool {
		for _, m := range members {
			if m != old && m.IsController() {
				next = m
				return true
			}
		}
		return false
	})
	took := time.Since(seen)
	t.Logf("session cut to expiry seen: %v (session timeout %v); expiry seen to new controller active: %v",
		seen.Sub(cut), timeout, took)
	if took > time.Second {
		t.Errorf("new controller active %v after the expiry was seen, want within 1 s", took)
	}
	liveNow := map[int32]bool{1: true, 2: true, 3: true}
	delete(liveNow, old.BrokerID())
	waitFor(t, 20*time.Second, "x led by live brokers", func() bool { return allLed(t, admin, "x", len(assign), liveNow) })

	proxies[i].Unblock()
	waitFor(t, 30*time.Second, "the old controller registered again", func() bool {
		e := old.BrokerEpoch()
		return e != 0 && e != oldEpoch
	})
	if old.IsController() || controllerOf(t, members) != next {
		t.Fatal("the controller changed after the old one came back")
	}
	if data, _, err := obs.Get(cluster.ControllerEpochPath); err != nil || string(data) != "2" {
		t.Fatalf("/controller_epoch %s %v, want 2", data, err)
	}
}
