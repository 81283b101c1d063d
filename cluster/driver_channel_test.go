package cluster_test

import (
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestChannelManagerRetries: the controller's requests to a broker whose
// listener is not up yet, and to one that swallows a request without
// answering (controller.socket.timeout.ms passes), are sent again on a new
// connection until answered: both brokers end up told their partitions'
// states.
func TestChannelManagerRetries(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	b1 := startTestBroker(t, 1)
	// broker 2: a port with nothing listening yet
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// broker 3 swallows its first request
	b3 := startTestBroker(t, 3)
	var swallowed atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before b3 closes
	b3.mu.Lock()
	b3.answer = func(req kmsg.Request) kmsg.Response {
		if swallowed.Add(1) == 1 {
			<-release // no answer: the controller times out and reconnects
		}
		return nil
	}
	b3.mu.Unlock()
	var ms []*cluster.Member
	for _, b := range []*testBroker{b1, {id: 2}, b3} {
		cfg := memberConfig(t, srv.Connect(), b1)
		cfg.BrokerID = b.id
		cfg.ControllerSocketTimeout = 300 * time.Millisecond
		if b.id == 2 {
			cfg.Endpoints = []cluster.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: int32(port)}}
		} else {
			cfg.Endpoints = []cluster.Endpoint{b.endpoint()}
		}
		ms = append(ms, startMember(t, cfg))
	}
	waitFor(t, 10*time.Second, "a controller", func() bool { return controllerOf(t, ms) != nil })
	h := srv.Connect()
	defer h.Close()
	admin := cluster.NewAdmin(h)
	if _, err := admin.CreateTopic("r", [][]int32{{1, 2, 3}, {2, 3, 1}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "led", func() bool { return allLed(t, admin, "r", 2, map[int32]bool{1: true, 2: true, 3: true}) })
	// broker 2 comes up on its port
	ln2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", port, err)
	}
	b2 := &testBroker{id: 2, ln: ln2, parts: map[cluster.TopicPartition]brokerPart{}, changed: make(chan struct{}),
		conns: map[net.Conn]bool{}}
	b2.wg.Add(1)
	go b2.accept()
	t.Cleanup(b2.close)
	for _, b := range []*testBroker{b2, b3} {
		waitFor(t, 20*time.Second, "the partitions' states at the late and the silent broker", func() bool {
			parts, _, _ := b.state()
			for p := int32(0); p < 2; p++ {
				st, _ := admin.PartitionState("r", p)
				got, ok := parts[cluster.TopicPartition{Topic: "r", Partition: p}]
				if !ok || st == nil || got.leader != st.Leader || got.leaderEpoch != st.LeaderEpoch {
					return false
				}
			}
			return true
		})
	}
	if n := swallowed.Load(); n < 2 {
		t.Fatalf("broker 3 saw %d requests, want the swallowed one sent again", n)
	}
	if !slices.ContainsFunc(b2.requests(), func(r kmsg.Request) bool { _, ok := r.(*kmsg.UpdateMetadataRequest); return ok }) {
		t.Fatal("broker 2 got no UpdateMetadata")
	}
}

// TestAutoLeaderRebalance: with auto.leader.rebalance.enable, the
// controller's timer moves leadership back to the preferred replica once it
// is in the ISR again.
func TestAutoLeaderRebalance(t *testing.T) {
	c := newSimCluster(t, 2, func(cfg *cluster.MemberConfig) {
		cfg.AutoLeaderRebalanceEnable = true
		cfg.LeaderImbalanceCheckInterval = 20 * time.Millisecond
	})
	c.waitController(t)
	if _, err := c.admin.CreateTopic("p", [][]int32{{1, 2}}, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "led by 1", func() bool {
		st, _ := c.admin.PartitionState("p", 0)
		return st != nil && st.Leader == 1
	})
	// broker 1 gone for a while: broker 2 leads alone
	oldEpoch := c.members[0].BrokerEpoch()
	c.handles[0].Disconnect()
	c.srv.ExpireSession(c.handles[0].SessionID())
	waitFor(t, 10*time.Second, "led by 2", func() bool {
		st, _ := c.admin.PartitionState("p", 0)
		return st != nil && st.Leader == 2 && slices.Equal(st.ISR, []int32{2})
	})
	c.handles[0].Reconnect()
	// Back means registered in a new session: until broker 1 sees its old
	// session expired it still holds the old broker epoch and believes it
	// is the controller.
	waitFor(t, 10*time.Second, "broker 1 back in a new session", func() bool {
		e := c.members[0].BrokerEpoch()
		return e != 0 && e != oldEpoch
	})
	// broker 1 caught up: the leader asks for it in the ISR
	var resp *kmsg.AlterPartitionResponse
	waitFor(t, 10*time.Second, "the ISR grown", func() bool {
		st, _ := c.admin.PartitionState("p", 0)
		ctrl := controllerOf(t, c.members)
		if ctrl == nil {
			return false
		}
		ctx, cancel := contextWithTimeout(5 * time.Second)
		defer cancel()
		var err error
		resp, err = ctrl.AlterPartition(ctx, alterISR("p", 0, 2, c.members[1].BrokerEpoch(), st, []int32{2, 1}))
		return err == nil && resp.ErrorCode == 0 && resp.Topics[0].Partitions[0].ErrorCode == 0
	})
	waitFor(t, 10*time.Second, "leadership back at broker 1", func() bool {
		st, _ := c.admin.PartitionState("p", 0)
		return st != nil && st.Leader == 1
	})
}
