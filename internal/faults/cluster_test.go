package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	zkc "github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/faultproxy"
	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/internal/zktest"
)

// Test-sized Kafka timeouts (doc.go) and the test's deadlines: generous,
// the machine is shared and loaded.
const (
	sessionTimeoutMs = 6000
	lagTimeMaxMs     = 2500
	startTimeout     = 90 * time.Second
	stopTimeout      = 90 * time.Second
	settleTimeout    = 180 * time.Second
	faultTimeout     = 90 * time.Second

	topic     = "faults"
	numParts  = 3
	nBrokers  = 3
	ackWindow = 30 // acknowledgements per partition that show writes going on
)

// chroots numbers the clusters of one test binary on the shared ZooKeeper.
var chroots atomic.Int64

// cluster is three brokers in child processes on a real ZooKeeper, with
// a proxy on each broker's inter-broker listener and ZooKeeper connection
// (doc.go, Topology).
type cluster struct {
	t      *testing.T
	zs     *zktest.Server
	chroot string
	base   string
	zk     zkc.ZK    // the test's own session, straight to ZooKeeper
	b      []*broker // b[id-1]

	pidMu sync.Mutex
	pids  map[int]int32 // broker process id -> broker id

	n     int               // brokers (clusterOpts.brokers, else nBrokers)
	final map[int32][]int32 // finish: each partition's replicas when settled
}

// clusterOpts shape a cluster: where each broker keeps its log dirs (nil
// or "": a temp dir) and extra overrides for every broker.
type clusterOpts struct {
	dir     func(id int32) string
	extra   []string
	brokers int // 0: nBrokers
}

// newCluster lays out and starts three brokers on zs and waits until they
// are all registered and one is the controller.
func newCluster(t *testing.T, zs *zktest.Server, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t, zs: zs, chroot: fmt.Sprintf("/faults-%d", chroots.Add(1)), base: t.TempDir(), pids: map[int]int32{}, n: nBrokers}
	if o.brokers > 0 {
		c.n = o.brokers
	}
	z, err := zkc.DialZK(zkc.ZKConfig{Connect: zs.Addr() + c.chroot, SessionTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	c.zk = z
	for id := int32(1); id <= int32(c.n); id++ {
		dir := filepath.Join(c.base, fmt.Sprintf("data-%d", id))
		if o.dir != nil && o.dir(id) != "" {
			dir = o.dir(id)
		}
		c.b = append(c.b, c.newBroker(id, dir, o.extra...))
	}
	for _, b := range c.b {
		b.launch()
	}
	for _, b := range c.b {
		if !b.waitListening() {
			b.newPorts()
			b.launchListening()
		}
	}
	c.waitLive("every broker registered and known live by the controller")
	return c
}

// waitLive waits until every broker is registered and every broker's
// metadata (the controller's UpdateMetadata) lists all of them and the
// controller.
func (c *cluster) waitLive(what string) {
	c.t.Helper()
	c.waitFor(startTimeout, what, func() (bool, string) {
		ids, err := c.registered()
		if err != nil || len(ids) != c.n {
			return false, fmt.Sprintf("registered %v %v", ids, err)
		}
		for _, b := range c.b {
			v, err := c.viewOf(b)
			if err != nil || len(v.brokers) != c.n || v.controller < 1 {
				return false, fmt.Sprintf("broker %d sees brokers %v, controller %d: %v", b.id, v.brokers, v.controller, err)
			}
		}
		return true, ""
	})
}

func (c *cluster) broker(id int32) *broker { return c.b[id-1] }

// others are the brokers other than those given.
func (c *cluster) others(not ...int32) []*broker {
	var out []*broker
	for _, b := range c.b {
		if !slices.Contains(not, b.id) {
			out = append(out, b)
		}
	}
	return out
}

func (c *cluster) setPID(pid int, id int32) {
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	c.pids[pid] = id
}

// sourceOf labels a connection to an inter-broker proxy with the broker
// process that opened it ("broker-N"), else "other".
func (c *cluster) sourceOf(conn net.Conn) string {
	pid, err := faultproxy.PeerPID(conn)
	if err != nil {
		return "other"
	}
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	if id, ok := c.pids[pid]; ok {
		return fmt.Sprintf("broker-%d", id)
	}
	return "other"
}

// clientAddrs are the brokers' client listeners (clients never pass a
// proxy).
func (c *cluster) clientAddrs() []string {
	var out []string
	for _, b := range c.b {
		out = append(out, b.clientAddr())
	}
	return out
}

// registered lists the broker ids in /brokers/ids.
func (c *cluster) registered() ([]int32, error) {
	kids, _, err := c.zk.Children(zkc.BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, k := range kids {
		if id, err := strconv.Atoi(k); err == nil {
			ids = append(ids, int32(id))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// controller is the broker id in /controller, -1 if none.
func (c *cluster) controller() int32 {
	data, _, err := c.zk.Get(zkc.ControllerPath)
	if err != nil {
		return -1
	}
	info, err := zkc.DecodeController(data)
	if err != nil {
		return -1
	}
	return info.BrokerID
}

// partView is one partition as a broker's metadata shows it.
type partView struct {
	leader, epoch int32
	isr, replicas []int32
	offline       []int32
	err           int16
}

func (p partView) String() string {
	s := fmt.Sprintf("leader %d epoch %d isr %v", p.leader, p.epoch, p.isr)
	if len(p.offline) > 0 {
		s += fmt.Sprintf(" offline %v", p.offline)
	}
	if p.err != 0 {
		s += " " + kerr.ErrorForCode(p.err).Error()
	}
	return s
}

// view is a broker's metadata: the controller, the live brokers, and the
// topic's partitions.
type view struct {
	controller int32
	brokers    []int32
	parts      map[int32]partView
}

// request sends req to addr over a connection of its own.
func request(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	conn, err := kwire.Dial(ctx, addr, kwire.Options{ClientID: "faults-test", DialTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Request(ctx, req)
}

// viewOf asks broker b (its client listener) for the topic's metadata.
func (c *cluster) viewOf(b *broker) (view, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 11
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := request(ctx, b.clientAddr(), req)
	if err != nil {
		return view{}, err
	}
	md := resp.(*kmsg.MetadataResponse)
	v := view{controller: md.ControllerID, parts: map[int32]partView{}}
	for _, mb := range md.Brokers {
		v.brokers = append(v.brokers, mb.NodeID)
	}
	slices.Sort(v.brokers)
	for _, mt := range md.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		for _, mp := range mt.Partitions {
			isr := slices.Clone(mp.ISR)
			slices.Sort(isr)
			v.parts[mp.Partition] = partView{leader: mp.Leader, epoch: mp.LeaderEpoch, isr: isr, replicas: mp.Replicas,
				offline: mp.OfflineReplicas, err: mp.ErrorCode}
		}
	}
	return v, nil
}

// views are the metadata of every running broker not in skip that
// answers.
func (c *cluster) views(skip ...int32) map[int32]view {
	out := map[int32]view{}
	for _, b := range c.b {
		if !b.is(running) || slices.Contains(skip, b.id) {
			continue
		}
		if v, err := c.viewOf(b); err == nil {
			out[b.id] = v
		}
	}
	return out
}

// agreed is a partition's state when every view in vs shows the same
// leader and epoch with a leader that is in want (nil: any), false
// otherwise; with no views it is false.
func agreed(vs map[int32]view, p int32) (partView, bool) {
	var first partView
	n := 0
	for _, v := range vs {
		pv, ok := v.parts[p]
		if !ok || pv.err != 0 || pv.leader < 0 {
			return pv, false
		}
		if n > 0 && (pv.leader != first.leader || pv.epoch != first.epoch || !slices.Equal(pv.isr, first.isr)) {
			return pv, false
		}
		first = pv
		n++
	}
	return first, n > 0
}

func describe(vs map[int32]view) string {
	ids := make([]int32, 0, len(vs))
	for id := range vs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		v := vs[id]
		fmt.Fprintf(&b, "[broker %d: controller %d live %v", id, v.controller, v.brokers)
		for p := int32(0); p < numParts; p++ {
			fmt.Fprintf(&b, "; p%d %s", p, v.parts[p])
		}
		b.WriteString("] ")
	}
	return b.String()
}

// state is the partitions as the running brokers not in skip all see
// them, ok when they agree on every partition.
func (c *cluster) state(skip ...int32) (map[int32]partView, bool, string) {
	vs := c.views(skip...)
	out := map[int32]partView{}
	for p := int32(0); p < numParts; p++ {
		pv, ok := agreed(vs, p)
		if !ok {
			return nil, false, describe(vs)
		}
		out[p] = pv
	}
	return out, true, describe(vs)
}

// waitState waits until the running brokers not in skip agree on every
// partition and cond holds for their common view.
func (c *cluster) waitState(timeout time.Duration, what string, cond func(map[int32]partView) bool, skip ...int32) map[int32]partView {
	c.t.Helper()
	var got map[int32]partView
	c.waitFor(timeout, what, func() (bool, string) {
		st, ok, desc := c.state(skip...)
		if !ok || !cond(st) {
			return false, desc
		}
		got = st
		return true, ""
	})
	return got
}

// waitFullISR waits until every partition is led with all its replicas
// in sync, as every running broker sees it.
func (c *cluster) waitFullISR(what string) map[int32]partView {
	c.t.Helper()
	return c.waitState(settleTimeout, what, func(st map[int32]partView) bool {
		for _, pv := range st {
			if len(pv.isr) != len(pv.replicas) {
				return false
			}
		}
		return true
	})
}

// offsets asks the leader of p for its high watermark (a consumer's
// latest) and log end (a replica's latest).
func (c *cluster) offsets(leader int32, p int32) (hw, leo int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	get := func(replicaID int32) (int64, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 4
		req.ReplicaID = replicaID
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := request(ctx, c.broker(leader).clientAddr(), req)
		if err != nil {
			return -1, err
		}
		lp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if lp.ErrorCode != 0 {
			return -1, kerr.ErrorForCode(lp.ErrorCode)
		}
		return lp.Offset, nil
	}
	if hw, err = get(-1); err != nil {
		return
	}
	leo, err = get(leader)
	return
}

// settle waits until every partition is led with a full ISR and its high
// watermark at its log end: every replica then holds every record.
func (c *cluster) settle() {
	c.t.Helper()
	c.waitFor(settleTimeout, "every partition in sync (full ISR, high watermark at the log end)", func() (bool, string) {
		st, ok, desc := c.state()
		if !ok {
			return false, desc
		}
		for p, pv := range st {
			if len(pv.isr) != len(pv.replicas) {
				return false, desc
			}
			hw, leo, err := c.offsets(pv.leader, p)
			if err != nil || hw != leo {
				return false, fmt.Sprintf("p%d on leader %d: hw %d leo %d %v; %s", p, pv.leader, hw, leo, err, desc)
			}
		}
		return true, ""
	})
}

// stopAll stops every broker with SIGTERM, one after the other.
func (c *cluster) stopAll() {
	c.t.Helper()
	for _, b := range c.b {
		b.term()
	}
}

// createTopic creates the topic (three partitions of three replicas,
// min.insync.replicas=2, unclean election off; assignment, when given,
// places the replicas, the preferred leader first) and waits until every
// partition is led with a full ISR.
func (c *cluster) createTopic(assignment [][]int32) map[int32]partView {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.clientAddrs()...), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	if assignment == nil {
		rt.NumPartitions, rt.ReplicationFactor = numParts, nBrokers
	} else {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p, reps := range assignment {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(p), reps
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
	}
	for k, v := range map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "false"} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		c.t.Fatalf("create %s: %v", topic, err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 && code != kerr.RequestTimedOut.Code {
		c.t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(code))
	}
	return c.waitFullISR("the topic led with full ISRs")
}

// cut isolates broker b from the other brokers and from ZooKeeper: its
// inter-broker proxy (everything inbound) and, in the others' proxies,
// the connections its process opened (everything outbound), and its
// ZooKeeper proxy. Its client listener stays reachable.
func (c *cluster) cut(b *broker) {
	b.ib.Block()
	for _, o := range c.others(b.id) {
		o.ib.BlockSource(b.label())
	}
	b.zk.Block()
}

// heal undoes cut.
func (c *cluster) heal(b *broker) {
	b.zk.Unblock()
	for _, o := range c.others(b.id) {
		o.ib.UnblockSource(b.label())
	}
	b.ib.Unblock()
}

// waitFor polls cond until it holds, failing the test after timeout with
// what and cond's last account of the state.
func (c *cluster) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	waitFor(c.t, timeout, what, cond)
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %s", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keys returns m's keys in order.
func keys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
