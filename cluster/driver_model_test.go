package cluster_test

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerModel runs three brokers' controller drivers (the
// Controller with the driver's election, watches, reloads and request
// queues) over zksim, one step at a time in an order a seeded PRNG picks:
// events handled in random interleavings, watch and session events held
// back and delivered late (zksim Hold/Deliver), requests lost or answered
// lost (zksim Fault: ErrConnectionLoss, applied or not), sessions expiring,
// brokers cut off from ZooKeeper and back, control requests answered late
// or dropped, topics created, grown, reconfigured and deleted by an admin,
// ISR changes and preferred elections from the brokers.
//
// After every step: every controller write that lands (a multi starting
// with the /controller_epoch check) comes from the only broker that ever
// wrote at that epoch version, versions of landing writes never go back,
// and at the write /controller is owned by the writer's session or
// absent (no write of a deposed controller lands); leader epochs and
// partition epochs in ZooKeeper only grow. At random points the model
// settles (faults off, everything delivered and answered, one broker
// possibly left down) and checks: exactly one active controller, owning
// /controller at the current epoch; every partition of a topic not being
// deleted has a state, and one with a live ISR member has a live leader
// in its ISR; deletions with all replicas live completed; every live
// broker was told the leader and leader epoch ZooKeeper holds for each of
// its replicas.
//
// 12 seeds of 400 steps by default (STRATA_MODEL_SEEDS, STRATA_MODEL_STEPS
// for more); a failing seed is printed and STRATA_MODEL_SEED=n replays it
// alone (with STRATA_MODEL_LOG=1, every broker's log).
func TestControllerModel(t *testing.T) {
	seeds, steps := 12, 400
	if v, err := strconv.Atoi(os.Getenv("STRATA_MODEL_SEEDS")); err == nil {
		seeds = v
	}
	if v, err := strconv.Atoi(os.Getenv("STRATA_MODEL_STEPS")); err == nil {
		steps = v
	}
	first := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("STRATA_MODEL_SEED"), 10, 64); err == nil {
		first, seeds = v, 1
	}
	for seed := first; seed < first+uint64(seeds); seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			m := newModel(t, seed)
			defer func() {
				if t.Failed() {
					t.Logf("last actions:\n  %s", strings.Join(m.trail, "\n  "))
					t.Logf("replay with: STRATA_MODEL_SEED=%d STRATA_MODEL_STEPS=%d go test ./cluster -run TestControllerModel -v", seed, steps)
				}
			}()
			for i := 0; i < steps && !t.Failed(); i++ {
				m.act()
				m.checkStep()
			}
			if !t.Failed() {
				m.settle(false)
			}
			t.Logf("%d controller writes landed at %d epoch versions, %d settles checked, %d expiries",
				m.writes, len(m.writer), m.settles, m.expiries)
		})
	}
}

const modelBrokers = 3

type model struct {
	t       *testing.T
	r       *rand.Rand
	srv     *zksim.Server
	nodes   []*cluster.ModelNode // nodes[i] is broker i+1
	handles []*zksim.Session
	down    []bool // disconnected
	obs     *zksim.Session
	admin   *cluster.Admin
	safe    map[int]bool   // clients never faulted or held (observer, admin)
	safeIDs map[int64]bool // their sessions
	faults  bool
	trail   []string

	maxLeaderEpoch map[string]int32
	maxVersion     map[string]int32
	writer         map[int32]int // /controller_epoch version -> node that wrote at it
	lastVersion    int32
	views          []*brokerView
	nextID         uint64
	deleted        map[[16]byte]bool // topic ids the admin marked for deletion
	writes         int               // controller writes that landed
	settles        int
	expiries       int
}

// brokerView is what a broker holds from the LeaderAndIsr and StopReplica
// it applied.
type brokerView struct {
	maxEpoch int32
	parts    map[cluster.TopicPartition][2]int32 // leader, leader epoch
}

// checkedZK is a node's session: every controller write that lands is
// checked against who holds /controller.
type checkedZK struct {
	*zksim.Session
	m    *model
	node int
}

func (z *checkedZK) Multi(ops ...cluster.Op) ([]cluster.OpResult, error) {
	res, err := z.Session.Multi(ops...)
	if err == nil && len(ops) > 0 && ops[0].Kind == cluster.OpCheck && ops[0].Path == cluster.ControllerEpochPath {
		z.m.landed(z.node, ops[0].Version)
	}
	return res, err
}

func newModel(t *testing.T, seed uint64) *model {
	m := &model{t: t, r: rand.New(rand.NewPCG(seed, 0x6d6f64656c)), safe: map[int]bool{}, faults: true,
		maxLeaderEpoch: map[string]int32{}, maxVersion: map[string]int32{}, writer: map[int32]int{},
		deleted: map[[16]byte]bool{}}
	m.srv = zksim.NewServer(zksim.Options{
		Hold: func(d zksim.Delivery) bool {
			return m.faults && !m.safe[d.Client] && m.r.IntN(5) == 0
		},
		Fault: func(c zksim.Call) zksim.Fault {
			if !m.faults || m.isSafeSession(c.Session) {
				return zksim.NoFault
			}
			switch m.r.IntN(50) {
			case 0:
				return zksim.LoseRequest
			case 1:
				return zksim.LoseResponse
			}
			return zksim.NoFault
		},
	})
	m.obs = m.srv.Connect()
	adm := m.srv.Connect()
	m.safe[m.obs.Client()], m.safe[adm.Client()] = true, true
	m.safeIDs = map[int64]bool{m.obs.SessionID(): true, adm.SessionID(): true}
	m.admin = cluster.NewAdmin(adm)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("STRATA_MODEL_LOG") != "" {
		log = testLog(t)
	}
	opts := &cluster.ControllerOptions{DeleteTopicEnable: true, Rand: rand.New(rand.NewPCG(seed, 7))}
	m.faults = false // registration at start goes through
	for i := 0; i < modelBrokers; i++ {
		h := m.srv.Connect()
		n, err := cluster.NewModelNode(&checkedZK{Session: h, m: m, node: i}, int32(i+1), opts, log.With("broker", i+1))
		if err != nil {
			t.Fatal(err)
		}
		m.nodes, m.handles, m.down = append(m.nodes, n), append(m.handles, h), append(m.down, false)
		m.views = append(m.views, &brokerView{parts: map[cluster.TopicPartition][2]int32{}})
	}
	m.faults = true
	return m
}

func (m *model) isSafeSession(id int64) bool { return m.safeIDs[id] }

func (m *model) note(format string, args ...any) {
	m.trail = append(m.trail, fmt.Sprintf(format, args...))
	if len(m.trail) > 40 {
		m.trail = m.trail[1:]
	}
}

// landed checks a controller write that applied: /controller is absent
// (the writer's session just ended, nobody else was elected yet: the epoch
// did not move) or owned by the session the writer registered in.
func (m *model) landed(node int, version int32) {
	session := m.nodes[node].Registered()
	t := m.t
	if w, ok := m.writer[version]; ok && w != node {
		t.Errorf("broker %d wrote at /controller_epoch version %d, where broker %d wrote: two controllers acted", node+1, version, w+1)
	}
	m.writer[version] = node
	m.writes++
	if version < m.lastVersion {
		t.Errorf("broker %d wrote at /controller_epoch version %d after a write at version %d: a deposed controller's write landed",
			node+1, version, m.lastVersion)
	}
	m.lastVersion = version
	if _, st, err := m.obs.Get(cluster.ControllerPath); err == nil && st.EphemeralOwner != session {
		t.Errorf("broker %d's write landed while /controller belongs to session 0x%x (it registered in 0x%x)", node+1, st.EphemeralOwner, session)
	}
}

// act does one random thing.
func (m *model) act() {
	r := m.r
	i := r.IntN(modelBrokers)
	n := m.nodes[i]
	switch k := r.IntN(100); {
	case k < 35:
		if n.Queued() == 0 {
			n.PollShuffled(r.Shuffle)
		}
		if n.Step() {
			m.note("broker %d handled an event", i+1)
		}
	case k < 47:
		m.note("broker %d polled %d arrivals", i+1, n.PollShuffled(r.Shuffle))
	case k < 59:
		m.answerOne(i)
	case k < 65:
		if c := n.Timers(); c > 0 {
			n.FireTimer(r.IntN(c))
			m.note("broker %d: a timer fired", i+1)
		}
	case k < 73:
		if p := m.srv.Pending(); len(p) > 0 {
			d := p[r.IntN(len(p))]
			m.srv.Deliver(d.Seq)
			m.note("delivered held event %d (client %d)", d.Seq, d.Client)
		}
	case k < 85:
		m.adminOp()
	case k < 93:
		if r.IntN(4) > 0 { // mostly to the controller, as a leader would
			for j, n := range m.nodes {
				if n.Active() {
					i = j
				}
			}
		}
		m.alterPartition(i)
	case k < 94:
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType = 1, 0
		m.nextID++
		n.Control(cluster.ElectLeaders{ID: m.nextID, Req: req})
		m.note("broker %d: ElectLeaders (preferred, all)", i+1)
	case k < 96:
		if !m.down[i] {
			m.srv.ExpireSession(m.handles[i].SessionID())
			m.expiries++
			m.note("broker %d: session expired", i+1)
		}
	case k < 98:
		if m.down[i] {
			m.handles[i].Reconnect()
			m.down[i] = false
			m.note("broker %d: reconnected", i+1)
		} else if m.downCount() < modelBrokers-1 {
			m.handles[i].Disconnect()
			m.down[i] = true
			if r.IntN(2) == 0 {
				m.srv.ExpireSession(m.handles[i].SessionID())
				m.note("broker %d: cut off, its session expired", i+1)
			} else {
				m.note("broker %d: cut off", i+1)
			}
		}
	default:
		m.settle(r.IntN(3) == 0)
	}
	for _, n := range m.nodes {
		n.TakeReplies() // replies are not checked beyond what ZooKeeper holds
	}
}

func (m *model) downCount() int {
	c := 0
	for _, d := range m.down {
		if d {
			c++
		}
	}
	return c
}

var topicNames = []string{"t0", "t1", "t2", "t3"}

// adminOp creates, deletes, grows or reconfigures a topic (the admin's
// session has no faults).
func (m *model) adminOp() {
	r := m.r
	name := topicNames[r.IntN(len(topicNames))]
	k := r.IntN(25)
	if k == 24 {
		k = 4
	} else {
		k %= 4
	}
	switch k {
	case 4:
		// an operator forcing a new election (zkCli.sh delete /controller)
		err := m.obsDelete(cluster.ControllerPath)
		m.note("admin: delete /controller: %v", err)
	case 0, 1:
		parts, rf := 1+r.IntN(3), 1+r.IntN(modelBrokers)
		var assign [][]int32
		for p := 0; p < parts; p++ {
			perm := r.Perm(modelBrokers)
			rs := make([]int32, rf)
			for j := range rs {
				rs[j] = int32(perm[j] + 1)
			}
			assign = append(assign, rs)
		}
		_, err := m.admin.CreateTopic(name, assign, nil, [16]byte{})
		m.note("admin: create %s %v: %v", name, assign, err)
	case 2:
		ta, _, rerr := m.admin.ReadAssignment(name)
		err := m.admin.DeleteTopic(name)
		if err == nil && rerr == nil {
			m.deleted[ta.TopicID] = true
		}
		m.note("admin: delete %s: %v", name, err)
	case 3:
		if r.IntN(2) == 0 {
			ta, _, err := m.admin.ReadAssignment(name)
			if err == nil {
				err = m.admin.AddPartitions(name, len(ta.Partitions)+1, nil, r)
			}
			m.note("admin: add a partition to %s: %v", name, err)
		} else {
			on := strconv.FormatBool(r.IntN(2) == 0)
			err := m.admin.ChangeTopicConfig(name, map[string]string{cluster.UncleanLeaderElectionConfig: on})
			if err == nil {
				for _, n := range m.nodes {
					n.ConfigChanged(name)
				}
			}
			m.note("admin: %s unclean=%s: %v", name, on, err)
		}
	}
}

func (m *model) obsDelete(p string) error { return m.obs.Delete(p, -1) }

// alterPartition sends an ISR change from a partition's leader to broker
// i (whoever it is: a non-controller answers NOT_CONTROLLER).
func (m *model) alterPartition(i int) {
	r := m.r
	names, _ := m.admin.ListTopics()
	if len(names) == 0 {
		return
	}
	name := names[r.IntN(len(names))]
	ta, _, err := m.admin.ReadAssignment(name)
	if err != nil || len(ta.Partitions) == 0 {
		return
	}
	p := int32(r.IntN(len(ta.Partitions)))
	st, err := m.admin.PartitionState(name, p)
	if err != nil || st == nil || st.Leader < 0 {
		return
	}
	_, bst, err := m.obs.Get(cluster.BrokerPath(st.Leader))
	if err != nil {
		return
	}
	isr := slices.Clone(st.ISR)
	if others := slices.DeleteFunc(slices.Clone(isr), func(b int32) bool { return b == st.Leader }); len(others) > 0 && r.IntN(2) == 0 {
		drop := others[r.IntN(len(others))]
		isr = slices.DeleteFunc(isr, func(b int32) bool { return b == drop })
	} else {
		for _, b := range ta.Partitions[p] {
			if !slices.Contains(isr, b) {
				isr = append(isr, b)
				break
			}
		}
	}
	stale := *st
	if r.IntN(5) == 0 && stale.Version > 0 {
		stale.Version--
	}
	m.nextID++
	m.nodes[i].Control(cluster.AlterPartition{ID: m.nextID, Req: alterISR(name, p, st.Leader, bst.Czxid, &stale, isr)})
	m.note("broker %d leads %s-%d: AlterPartition isr %v (partition epoch %d) to broker %d", st.Leader, name, p, isr, stale.Version, i+1)
}

// answerOne answers the oldest request of a random broker queue of node
// i, as that broker would. (A request is never answered with an error
// while its queue lives: the channel manager retries until the broker
// answers or its queue is dropped, which the model's queues do.)
func (m *model) answerOne(i int) {
	n := m.nodes[i]
	out := n.Outstanding()
	if len(out) == 0 {
		return
	}
	b := out[m.r.IntN(len(out))]
	req := n.Head(b)
	n.Answer(b, m.brokerAnswer(b, req.Msg), nil)
	m.note("broker %d's %s %d to broker %d answered", i+1, kmsg.NameForKey(req.Msg.Key()), req.ID, b)
}

// brokerAnswer is broker b's handling of a control request: requests of a
// controller epoch below the highest seen are refused; LeaderAndIsr states
// with a leader epoch below the broker's are ignored.
func (m *model) brokerAnswer(b int32, msg kmsg.Request) kmsg.Response {
	v := m.views[b-1]
	switch r := msg.(type) {
	case *kmsg.LeaderAndISRRequest:
		resp := kmsg.NewPtrLeaderAndISRResponse()
		resp.Version = r.Version
		if r.ControllerEpoch < v.maxEpoch {
			resp.ErrorCode = 11
			return resp
		}
		v.maxEpoch = r.ControllerEpoch
		for _, ts := range r.TopicStates {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = ts.TopicID
			for _, ps := range ts.PartitionStates {
				tp := cluster.TopicPartition{Topic: ts.Topic, Partition: ps.Partition}
				if cur, ok := v.parts[tp]; !ok || ps.LeaderEpoch >= cur[1] {
					v.parts[tp] = [2]int32{ps.Leader, ps.LeaderEpoch}
				}
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Partition = ps.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.StopReplicaRequest:
		resp := kmsg.NewPtrStopReplicaResponse()
		resp.Version = r.Version
		if r.ControllerEpoch < v.maxEpoch {
			resp.ErrorCode = 11
			return resp
		}
		v.maxEpoch = r.ControllerEpoch
		for _, t := range r.Topics {
			for _, p := range t.PartitionStates {
				if p.Delete {
					delete(v.parts, cluster.TopicPartition{Topic: t.Topic, Partition: p.Partition})
				}
				rp := kmsg.NewStopReplicaResponsePartition()
				rp.Topic, rp.Partition = t.Topic, p.Partition
				resp.Partitions = append(resp.Partitions, rp)
			}
		}
		return resp
	case *kmsg.UpdateMetadataRequest:
		resp := kmsg.NewPtrUpdateMetadataResponse()
		resp.Version = r.Version
		if r.ControllerEpoch < v.maxEpoch {
			resp.ErrorCode = 11
		} else {
			v.maxEpoch = r.ControllerEpoch
		}
		return resp
	}
	resp := msg.ResponseKind()
	resp.SetVersion(msg.GetVersion())
	return resp
}

// partitionKey names a partition by topic id, so a topic deleted and made
// again under its name is another.
func partitionKey(id [16]byte, p int) string { return cluster.UUIDString(id) + "/" + strconv.Itoa(p) }

// checkStep checks what must hold after every step: leader and partition
// epochs in ZooKeeper never go back.
func (m *model) checkStep() {
	names, _, err := m.obs.Children(cluster.TopicsPath)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, name := range names {
		ta, _, err := m.admin.ReadAssignment(name)
		if err != nil {
			continue
		}
		for p := range ta.Partitions {
			st, err := m.admin.PartitionState(name, p)
			if err != nil || st == nil {
				continue
			}
			k := partitionKey(ta.TopicID, int(p))
			if e, ok := m.maxLeaderEpoch[k]; ok && st.LeaderEpoch < e {
				m.t.Errorf("%s-%d: leader epoch went back from %d to %d", name, p, e, st.LeaderEpoch)
			}
			if v, ok := m.maxVersion[k]; ok && st.Version < v {
				m.t.Errorf("%s-%d: partition epoch went back from %d to %d", name, p, v, st.Version)
			}
			m.maxLeaderEpoch[k], m.maxVersion[k] = st.LeaderEpoch, st.Version
		}
	}
}

// settle turns faults off, reconnects the brokers (all, or all but one
// when leaveOneDown, whose session then expires), and runs everything
// until nothing is left to do; then it checks the settled cluster.
func (m *model) settle(leaveOneDown bool) {
	t := m.t
	m.faults = false
	defer func() { m.faults = true }()
	downIdx := -1
	if leaveOneDown {
		downIdx = m.r.IntN(modelBrokers)
	}
	for i := range m.nodes {
		if i == downIdx {
			if !m.down[i] {
				m.handles[i].Disconnect()
				m.down[i] = true
			}
			m.srv.ExpireSession(m.handles[i].SessionID())
		} else if m.down[i] {
			m.handles[i].Reconnect()
			m.down[i] = false
		}
	}
	m.note("settle (broker %d left down)", downIdx+1)
	for round := 0; ; round++ {
		if round == 1000 {
			t.Fatalf("no quiescence after %d rounds", round)
		}
		progress := m.srv.DeliverAll() > 0
		for i, n := range m.nodes {
			if i == downIdx {
				continue // cut off: its retries would spin
			}
			if n.PollShuffled(m.r.Shuffle) > 0 {
				progress = true
			}
			for n.Step() {
				progress = true
			}
			for c := n.Timers(); c > 0; c-- {
				n.FireTimer(0)
				progress = true
			}
			for _, b := range n.Outstanding() {
				n.Answer(b, m.brokerAnswer(b, n.Head(b).Msg), nil)
				progress = true
			}
			n.TakeReplies()
		}
		if !progress {
			break
		}
	}
	m.checkSettled(downIdx)
}

func (m *model) checkSettled(downIdx int) {
	t := m.t
	m.settles++
	live := map[int32]bool{}
	for i, n := range m.nodes {
		if i == downIdx {
			continue
		}
		if n.Registered() == 0 {
			t.Errorf("broker %d is not registered after settling", i+1)
		}
		live[int32(i+1)] = true
	}
	var active []int
	for i, n := range m.nodes {
		if n.Active() && i != downIdx { // the one cut off cannot know it was deposed
			active = append(active, i)
		}
	}
	data, cst, err := m.obs.Get(cluster.ControllerPath)
	_, est, eerr := m.obs.Get(cluster.ControllerEpochPath)
	switch {
	case len(active) != 1:
		t.Errorf("%d active controllers after settling (brokers %v)", len(active), active)
	case err != nil || eerr != nil:
		t.Errorf("/controller: %v %v", err, eerr)
	default:
		ci, _ := cluster.DecodeController(data)
		a := active[0]
		_, version := m.nodes[a].Epoch()
		if ci.BrokerID != int32(a+1) || cst.EphemeralOwner != m.nodes[a].Registered() || version != est.Version {
			t.Errorf("active controller broker %d (epoch version %d) but /controller names %d (owner 0x%x), /controller_epoch at version %d",
				a+1, version, ci.BrokerID, cst.EphemeralOwner, est.Version)
		}
	}
	marked, _ := m.admin.TopicsMarkedForDeletion()
	names, _ := m.admin.ListTopics()
	for _, name := range names {
		ta, _, err := m.admin.ReadAssignment(name)
		if err != nil {
			t.Errorf("topic %s: %v", name, err)
			continue
		}
		allLive := true
		for p := 0; p < len(ta.Partitions); p++ {
			for _, b := range ta.Partitions[int32(p)] {
				allLive = allLive && live[b]
			}
		}
		if slices.Contains(marked, name) || m.deleted[ta.TopicID] {
			if allLive {
				t.Errorf("topic %s (marked for deletion: %v) deleted by the admin with every replica live, not deleted",
					name, slices.Contains(marked, name))
			}
			continue
		}
		for p := int32(0); p < int32(len(ta.Partitions)); p++ {
			st, err := m.admin.PartitionState(name, p)
			if err != nil {
				t.Errorf("%s-%d: %v", name, p, err)
				continue
			}
			anyLive := slices.ContainsFunc(ta.Partitions[p], func(b int32) bool { return live[b] })
			if st == nil {
				if anyLive {
					t.Errorf("%s-%d has live replicas %v but no state", name, p, ta.Partitions[p])
				}
				continue
			}
			liveISR := slices.ContainsFunc(st.ISR, func(b int32) bool { return live[b] })
			if liveISR && (!live[st.Leader] || !slices.Contains(st.ISR, st.Leader)) {
				t.Errorf("%s-%d: ISR %v has a live member but the leader is %d", name, p, st.ISR, st.Leader)
			}
			for _, b := range ta.Partitions[p] {
				if !live[b] {
					continue
				}
				got, ok := m.views[b-1].parts[cluster.TopicPartition{Topic: name, Partition: p}]
				if !ok || got[0] != st.Leader || got[1] != st.LeaderEpoch {
					t.Errorf("broker %d holds %s-%d as leader %d epoch %d (known %v), ZooKeeper has leader %d epoch %d",
						b, name, p, got[0], got[1], ok, st.Leader, st.LeaderEpoch)
				}
			}
		}
	}
}
