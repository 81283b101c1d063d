package cluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerProperties drives the controller through random histories
// over the in-test ZooKeeper: brokers dying, returning and bouncing; topics
// created, grown, deleted and re-created under the same name; ISR changes,
// controlled shutdowns, elections, rebalances, log dir failures; responses
// late, lost, reordered and duplicated; writes failing with and without
// effect; another controller fencing this one; stale and repeated events.
// After every step it checks: leader epochs never go back (in the view and
// in ZooKeeper); a leader is in the ISR and the assignment; the ISR is
// within the assignment and never empty; a partition with a usable ISR
// member (or, unclean, any usable replica) has a usable leader; a
// partition without state has no online replica; with no write in flight
// the view equals ZooKeeper; every write batch starts with the epoch
// check; every request carries the current controller epoch and states no
// newer than ZooKeeper's; every AlterPartition success is in ZooKeeper.
//
// 100 seeds of 150 steps by default. A failing seed is printed;
// STRATA_CTRL_SEED=n replays it alone,
// STRATA_CTRL_SEEDS and STRATA_CTRL_STEPS run more.
func TestControllerProperties(t *testing.T) {
	seeds, steps := 100, 150
	if testing.Short() {
		seeds = 50
	}
	if v, err := strconv.Atoi(os.Getenv("STRATA_CTRL_SEEDS")); err == nil {
		seeds = v
	}
	if v, err := strconv.Atoi(os.Getenv("STRATA_CTRL_STEPS")); err == nil {
		steps = v
	}
	first := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("STRATA_CTRL_SEED"), 10, 64); err == nil {
		first, seeds = v, 1
	}
	for seed := first; seed < first+uint64(seeds); seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay with: STRATA_CTRL_SEED=%d go test ./cluster -run 'TestControllerProperties' -v", seed)
				}
			}()
			runProperty(t, seed, steps)
		})
	}
}

type propWorld struct {
	*world
	r           *rand.Rand
	maxEpoch    map[string]int32 // topic id + partition -> highest leader epoch seen
	history     []Event          // events stepped, for stale replays
	delivered   []RequestResult
	nextID      uint64
	lastAction  string
	checkedSent int
}

func runProperty(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 0x51))
	opts := &ControllerOptions{DeleteTopicEnable: r.IntN(5) > 0, UncleanLeaderElectionEnable: r.IntN(4) == 0,
		MaxWriteBatchBytes: 256 + r.IntN(4096), Rand: rand.New(rand.NewPCG(seed, 3))}
	p := &propWorld{world: newWorld(t, 1, opts), r: r, maxEpoch: map[string]int32{}}
	p.manualResponses = true
	p.check = p.checkInvariants
	for _, id := range []int32{1, 2, 3, 4} {
		if r.IntN(4) > 0 {
			p.register(id)
		}
	}
	p.elect()
	for i := 0; i < steps; i++ {
		p.act()
		if p.resigned {
			p.lastAction += "; re-elected"
			p.elect()
		}
		p.checkInvariants()
		if t.Failed() {
			t.Fatalf("step %d: %s", i, p.lastAction)
		}
	}
}

func (p *propWorld) fresh(ev Event) {
	p.history = append(p.history, ev)
	p.step(ev)
}

func (p *propWorld) liveIDs() []int32 {
	var ids []int32
	for id := int32(1); id <= 5; id++ {
		if ok, _, _ := p.zk.Exists(ctrlBrokerPath(id)); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func (p *propWorld) pick(ids []int32) int32 { return ids[p.r.IntN(len(ids))] }

func (p *propWorld) act() {
	r := p.r
	live := p.liveIDs()
	switch k := r.IntN(20); {
	case k < 3: // broker set changes
		id := int32(1 + r.IntN(5))
		up, _, _ := p.zk.Exists(ctrlBrokerPath(id))
		switch {
		case !up:
			p.register(id)
			p.lastAction = fmt.Sprintf("broker %d registers", id)
		case r.IntN(2) == 0:
			p.kill(id)
			p.lastAction = fmt.Sprintf("broker %d dies", id)
		default:
			p.kill(id)
			p.register(id)
			p.lastAction = fmt.Sprintf("broker %d bounces", id)
		}
		p.fresh(p.brokersEvent())
	case k < 5: // topic creation (a name whose znode is gone: CreateTopics refuses others)
		name := string(rune('a' + r.IntN(4)))
		if ok, _, _ := p.zk.Exists(ctrlTopicPath(name)); ok {
			p.lastAction = "create " + name + " refused: exists"
			return
		}
		if ok, _, _ := p.zk.Exists(ctrlTopicConfigPath(name)); ok {
			_ = p.zk.Delete(ctrlTopicConfigPath(name), -1)
		}
		var a [][]int32
		rf := 1 + r.IntN(3)
		for n := 1 + r.IntN(4); n > 0; n-- {
			perm := r.Perm(5)[:rf]
			rs := make([]int32, rf)
			for i, b := range perm {
				rs[i] = int32(b + 1)
			}
			a = append(a, rs)
		}
		cfg := map[string]string{}
		if r.IntN(4) == 0 {
			cfg[UncleanLeaderElectionConfig] = "true"
		}
		p.createTopic(name, a, cfg)
		p.lastAction = fmt.Sprintf("create %s %v", name, a)
		p.fresh(p.topicsEvent())
	case k < 6: // partitions added
		names, _ := children(p.zk, ctrlTopicsPath)
		if len(names) == 0 {
			return
		}
		name := names[r.IntN(len(names))]
		data, _, _ := p.zk.Get(ctrlTopicPath(name))
		id, a, err := decodeAssignment(name, data)
		if err != nil {
			p.t.Fatal(err)
		}
		a = append(a, []int32{int32(1 + r.IntN(5))})
		p.zk.mustSet(ctrlTopicPath(name), appendAssignmentJSON(nil, id, a))
		p.lastAction = fmt.Sprintf("add a partition to %s", name)
		p.fresh(p.topicsEvent())
	case k < 7: // deletion requested
		names, _ := children(p.zk, ctrlTopicsPath)
		if len(names) == 0 {
			return
		}
		name := names[r.IntN(len(names))]
		if ok, _, _ := p.zk.Exists(ctrlDeleteTopicPath(name)); !ok {
			p.zk.mustCreate(ctrlDeleteTopicPath(name), nil, Persistent)
		}
		p.lastAction = "delete " + name
		p.fresh(p.deletionsEvent())
	case k < 10: // AlterPartition from a leader, sometimes stale or wrong
		p.alter()
	case k < 11:
		if len(live) == 0 {
			return
		}
		id := p.pick(live)
		p.nextID++
		p.lastAction = fmt.Sprintf("controlled shutdown of %d", id)
		p.step(ControlledShutdown{ID: p.nextID, Req: shutdownReq(3, id, p.epochOf(id))})
	case k < 12:
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType = 2, int8(r.IntN(2))
		p.nextID++
		p.lastAction = fmt.Sprintf("elect leaders type %d", req.ElectionType)
		p.step(ElectLeaders{ID: p.nextID, Req: req})
	case k < 13:
		p.lastAction = "rebalance tick"
		p.step(RebalanceTick{})
	case k < 14: // a log dir fails on a live broker
		if len(live) == 0 || len(p.c.names) == 0 {
			return
		}
		b := p.pick(live)
		name := p.c.names[r.IntN(len(p.c.names))]
		if n := len(p.c.topics[name].parts); n > 0 {
			p.storageErr[b] = append(p.storageErr[b], TopicPartition{name, int32(r.IntN(n))})
		}
		node := fmt.Sprintf("log_dir_event_%010d", p.nextID)
		p.nextID++
		p.zk.mustCreate(ctrlLogDirEventPath(node), nil, Persistent)
		kids, _ := children(p.zk, ctrlLogDirEventsPath)
		var evs []LogDirEvent
		for _, n := range kids {
			evs = append(evs, LogDirEvent{Node: n, Broker: b})
		}
		p.lastAction = fmt.Sprintf("log dir failure on %d", b)
		p.fresh(LogDirEvents{Events: evs})
	case k < 17: // responses: some, in random order, some lost, some repeated
		r.Shuffle(len(p.pending), func(i, j int) { p.pending[i], p.pending[j] = p.pending[j], p.pending[i] })
		n := r.IntN(len(p.pending) + 1)
		batch := p.pending[:n]
		p.pending = slices.Clone(p.pending[n:])
		p.lastAction = fmt.Sprintf("%d responses", n)
		for _, req := range batch {
			res := p.respond(req)
			if r.IntN(10) == 0 {
				res = RequestResult{Request: req.ID, Err: fmt.Errorf("connection reset")}
			}
			p.delivered = append(p.delivered, res)
			p.step(res)
		}
		if len(p.delivered) > 0 && r.IntN(3) == 0 {
			p.step(p.delivered[r.IntN(len(p.delivered))])
		}
	case k < 18: // the next write fails, with or without effect
		applied := r.IntN(2) == 0
		p.zk.failNext = func([]Op) (bool, error) { return applied, ErrConnectionLoss }
		p.lastAction = fmt.Sprintf("next write fails (applied %v)", applied)
	case k < 19: // another controller bumps the epoch; ours is fenced at its next write
		data, _, _ := p.zk.Get(ctrlControllerEpochPath)
		e, _ := strconv.Atoi(string(data))
		p.zk.mustSet(ctrlControllerEpochPath, []byte(strconv.Itoa(e+1)))
		p.lastAction = "another controller bumped the epoch"
		// Something to write, so the fence is noticed.
		p.step(RebalanceTick{})
		p.fresh(p.brokersEvent())
		if p.c.Active() && len(p.c.inflight) == 0 {
			// Nothing was written: resign as the /controller watch would.
			p.step(Resign{Reason: "controller moved"})
		}
	default: // a stale or repeated event, a late write result, a config change
		switch r.IntN(3) {
		case 0:
			if len(p.history) > 0 {
				p.lastAction = "stale event replayed"
				p.step(p.history[r.IntN(len(p.history))])
			}
		case 1:
			p.lastAction = "late write result"
			p.step(WriteResult{Batch: uint64(r.IntN(int(p.c.lastBatch) + 1)), Err: ErrBadVersion})
		default:
			if len(p.c.names) > 0 {
				name := p.c.names[r.IntN(len(p.c.names))]
				cfg := map[string]string{UncleanLeaderElectionConfig: strconv.FormatBool(r.IntN(2) == 0)}
				p.lastAction = fmt.Sprintf("config of %s: %v", name, cfg)
				p.zk.mustSet(ctrlTopicConfigPath(name), []byte(fmt.Sprintf(`{"version":1,"config":{%q:%q}}`, UncleanLeaderElectionConfig, cfg[UncleanLeaderElectionConfig])))
				p.step(TopicConfigChanged{Topic: name, Configs: cfg})
			}
		}
	}
}

func (p *propWorld) alter() {
	r := p.r
	if len(p.c.names) == 0 {
		return
	}
	t := p.c.topics[p.c.names[r.IntN(len(p.c.names))]]
	if len(t.parts) == 0 {
		return
	}
	pi := int32(r.IntN(len(t.parts)))
	part := t.parts[pi]
	if !part.hasState || part.st.Leader < 0 || p.c.brokers[part.st.Leader] == nil {
		return
	}
	isr := []int32{part.st.Leader}
	for _, rep := range part.replicas {
		if rep != part.st.Leader && r.IntN(2) == 0 {
			isr = append(isr, rep)
		}
	}
	le, pe := part.st.LeaderEpoch, part.st.Version
	switch r.IntN(6) {
	case 0:
		le--
	case 1:
		pe--
	}
	p.nextID++
	id := p.nextID
	p.lastAction = fmt.Sprintf("alter %s-%d to %v (leader epoch %d, partition epoch %d)", t.name, pi, isr, le, pe)
	p.step(AlterPartition{ID: id, Req: alterReq(p.world, int16(r.IntN(4)), part.st.Leader, p.c.brokers[part.st.Leader].Epoch, t.name, pi, le, pe, isr...)})
	for _, rep := range p.replies {
		if rep.ID != id {
			continue
		}
		resp := rep.Msg.(*kmsg.AlterPartitionResponse)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					continue
				}
				_, st, err := p.zk.Get(ctrlStatePath(t.name, rp.Partition))
				if err == nil && st.Version < rp.PartitionEpoch {
					p.t.Fatalf("AlterPartition answered partition epoch %d, ZooKeeper has %d", rp.PartitionEpoch, st.Version)
				}
			}
		}
	}
}

func (p *propWorld) checkInvariants() {
	c := p.c
	if !c.Active() {
		return
	}
	for _, name := range c.names {
		tp := c.topics[name]
		for pi := range tp.parts {
			part := &tp.parts[pi]
			key := fmt.Sprintf("%x/%d", tp.id, pi)
			if !part.hasState {
				if !tp.deleting {
					for _, rep := range part.replicas {
						if c.online(rep, TopicPartition{name, int32(pi)}) {
							p.fatalf("%s-%d has no state but replica %d is online", name, pi, rep)
						}
					}
				}
				continue
			}
			st := &part.st
			if st.LeaderEpoch < p.maxEpoch[key] {
				p.fatalf("%s-%d leader epoch went back from %d to %d", name, pi, p.maxEpoch[key], st.LeaderEpoch)
			}
			p.maxEpoch[key] = st.LeaderEpoch
			if len(st.ISR) == 0 {
				p.fatalf("%s-%d has an empty ISR", name, pi)
			}
			for _, m := range st.ISR {
				if !slices.Contains(part.replicas, m) {
					p.fatalf("%s-%d ISR %v not within the assignment %v", name, pi, st.ISR, part.replicas)
				}
			}
			if st.Leader != NoLeader && (!slices.Contains(st.ISR, st.Leader) || !slices.Contains(part.replicas, st.Leader)) {
				p.fatalf("%s-%d leader %d outside ISR %v or assignment %v", name, pi, st.Leader, st.ISR, part.replicas)
			}
			if tp.deleting {
				continue
			}
			tpp := TopicPartition{name, int32(pi)}
			usable := func(b int32) bool { return c.live(b) && !c.offlineDirs[b][tpp] }
			candidates := st.ISR
			if tp.unclean(c.opts.UncleanLeaderElectionEnable) {
				candidates = part.replicas
			}
			for _, m := range candidates {
				if usable(m) && !c.shuttingDown[m] && (st.Leader == NoLeader || !usable(st.Leader)) {
					p.fatalf("%s-%d: %d could lead but the leader is %d (state %s, live %v, shutting down %v)",
						name, pi, m, st.Leader, fmtState(st), c.sortedBrokerIDs(), c.shuttingDown)
				}
			}
			if len(c.inflight) == 0 {
				if got := p.zkState(name, int32(pi)); got != fmtState(st) {
					p.fatalf("%s-%d: view %s, ZooKeeper %s", name, pi, fmtState(st), got)
				}
			}
		}
	}
	// ZooKeeper's leader epochs never go back either.
	names, _ := children(p.zk, ctrlTopicsPath)
	for _, name := range names {
		data, _, err := p.zk.Get(ctrlTopicPath(name))
		if err != nil {
			continue
		}
		id, a, err := decodeAssignment(name, data)
		if err != nil {
			p.fatalf("%v", err)
		}
		for pi := range a {
			data, _, err := p.zk.Get(ctrlStatePath(name, int32(pi)))
			if err != nil {
				continue
			}
			s, err := DecodePartitionState(name, int32(pi), data)
			if err != nil {
				p.fatalf("%v", err)
			}
			key := fmt.Sprintf("%x/%d", id, pi)
			if s.LeaderEpoch < p.maxEpoch[key] {
				p.fatalf("ZooKeeper: %s-%d leader epoch %d below %d seen", name, pi, s.LeaderEpoch, p.maxEpoch[key])
			}
			p.maxEpoch[key] = s.LeaderEpoch
		}
	}
	p.checkSentStates()
}

// checkSentStates: every partition state in a released request is in
// ZooKeeper already (same version and content, or an older version).
func (p *propWorld) checkSentStates() {
	for _, r := range p.sent[p.checkedSent:] {
		check := func(topic string, part, leader, epoch int32, isr []int32, version int32) {
			data, st, err := p.zk.Get(ctrlStatePath(topic, part))
			if err != nil {
				return // deleted since
			}
			if st.Version < version {
				p.fatalf("request %d to %d states %s-%d at version %d, ZooKeeper has %d", r.ID, r.Broker, topic, part, version, st.Version)
			}
			if st.Version == version {
				s, _ := DecodePartitionState(topic, part, data)
				if (leader != LeaderDuringDelete && s.Leader != leader) || s.LeaderEpoch != epoch || !slices.Equal(s.ISR, isr) {
					p.fatalf("request %d to %d states %s-%d L%d/E%d/%v at v%d, ZooKeeper has %s", r.ID, r.Broker, topic, part, leader, epoch, isr, version, data)
				}
			}
		}
		switch m := r.Msg.(type) {
		case *kmsg.LeaderAndISRRequest:
			for _, ts := range m.TopicStates {
				for _, ps := range ts.PartitionStates {
					check(ts.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion)
				}
			}
		case *kmsg.UpdateMetadataRequest:
			for _, ts := range m.TopicStates {
				for _, ps := range ts.PartitionStates {
					check(ts.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion)
				}
			}
		}
	}
	p.checkedSent = len(p.sent)
}

func (p *propWorld) fatalf(format string, args ...any) {
	p.t.Helper()
	logs := p.logs[max(0, len(p.logs)-20):]
	p.t.Fatalf("after %q: %s\nlast controller log lines:\n%s", p.lastAction, fmt.Sprintf(format, args...), strings.Join(logs, "\n"))
}
