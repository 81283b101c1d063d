package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/stratalog/strata/replica"
)

// ZooKeeper in the simulation: one zksim server; every broker process has
// a session of its own, and the admin (topic creation, forced controller
// moves) and the checks read through one more, which no fault touches.
// Every watch and session event is held and delivered after a random delay
// (zksim Hold/Deliver), in order per session; while ZooKeeper faults are on,
// calls lose their request or their response at random (zksim Fault:
// ErrConnectionLoss, the outcome unknown to the caller).

func (s *Sim) setupZK() {
	s.ZK = zksim.NewServer(zksim.Options{Hold: s.holdZK, Fault: s.zkFault})
	s.admin = s.ZK.Connect()
	s.adminSession = s.admin.SessionID()
	for _, p := range cluster.PersistentPaths {
		s.adminCreate(p, nil)
	}
	s.adminCreate(cluster.ClusterPath, nil)
	s.adminCreate(cluster.ClusterIDPath, cluster.EncodeClusterID("c2ltdWxhdGVkLWNsdXN0ZXI"))
}

func (s *Sim) adminCreate(path string, data []byte) {
	if _, err := s.admin.Create(path, data, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
		panic(fmt.Sprintf("sim: admin create %s: %v", path, err))
	}
}

// holdZK holds every watch and session event and delivers it after a delay.
func (s *Sim) holdZK(d zksim.Delivery) bool {
	delay := s.zkDelay()
	if s.watchLag > 0 && s.W.Chance(0.3) {
		delay += s.W.Int64n(s.watchLag)
	}
	s.W.After(delay, func() { s.ZK.Deliver(d.Seq) })
	return true
}

// zkFault loses a broker's ZooKeeper request or response at random while
// ZooKeeper faults are on.
func (s *Sim) zkFault(c zksim.Call) zksim.Fault {
	if s.zkLossRate == 0 || c.Session == s.adminSession || !s.W.Chance(s.zkLossRate) {
		return zksim.NoFault
	}
	s.stats.ZKCallsLost++
	if s.W.Chance(0.5) {
		return zksim.LoseRequest
	}
	return zksim.LoseResponse
}

// zkDelay is one way of a ZooKeeper round trip.
func (s *Sim) zkDelay() int64 { return s.W.Between(1, 5) }

// expireLater expires h's session after the session timeout unless it is
// connected again by then (the server hears nothing from a crashed or cut
// off client).
func (s *Sim) expireLater(h *zksim.Session) {
	sid := h.SessionID()
	if sid == 0 {
		return
	}
	s.W.After(s.Opt.SessionTimeoutMs, func() {
		for _, b := range s.Brokers[1:] {
			if b.up && b.member != nil && b.member.zk == h && !s.zkCut[b.ID] {
				return // in touch again: the session lives
			}
		}
		if s.ZK.ExpireSession(sid) {
			s.W.Tracef("zookeeper: session 0x%x expired (no heartbeat for %d ms)", sid, s.Opt.SessionTimeoutMs)
		}
	})
}

// cutZK cuts broker b off ZooKeeper (its session expires unless healed in
// time) or reconnects it.
func (s *Sim) cutZK(b *Broker, cut bool) {
	if s.zkCut[b.ID] == cut {
		return
	}
	s.zkCut[b.ID] = cut
	if !b.up {
		return
	}
	if cut {
		s.expireLater(b.member.zk)
		b.member.zk.Disconnect()
		return
	}
	b.member.zk.Reconnect()
}

// elected records that broker m activated its controller at epoch epoch
// (the snapshot's /controller_epoch, which names it).
func (s *Sim) elected(m *member, epoch int32) {
	if s.electedBy[epoch] == m.b.ID {
		return // a reload of the same controller
	}
	s.stats.Elections++
	if other, ok := s.electedBy[epoch]; ok && other != m.b.ID {
		s.fail("controller epoch %d won by brokers %d and %d", epoch, other, m.b.ID)
	}
	if epoch <= s.maxCtrlEpoch && s.electedBy[epoch] != m.b.ID {
		s.fail("controller epoch went back: broker %d won %d after %d", m.b.ID, epoch, s.maxCtrlEpoch)
	}
	s.electedBy[epoch] = m.b.ID
	s.maxCtrlEpoch = max(s.maxCtrlEpoch, epoch)
}

// landed checks a controller write batch that ZooKeeper applied: the
// controller that made it must be the one elected at the current
// /controller_epoch (a deposed controller's write never lands), and the
// partition states it wrote keep leader epochs growing.
func (s *Sim) landed(m *member, epoch int32, batch cluster.WriteBatch) {
	s.stats.ControllerWrites++
	data, _, err := s.admin.Get(cluster.ControllerEpochPath)
	if err != nil {
		s.fail("reading /controller_epoch: %v", err)
		return
	}
	cur, err := cluster.DecodeControllerEpoch(data)
	if err != nil {
		s.fail("/controller_epoch: %v", err)
	}
	if cur != epoch {
		s.fail("broker %d's controller write of epoch %d landed while /controller_epoch is %d", m.b.ID, epoch, cur)
	}
	if won := s.electedBy[cur]; won != m.b.ID {
		s.fail("a deposed controller's write landed: broker %d wrote while broker %d holds controller epoch %d", m.b.ID, won, cur)
	}
	for _, op := range batch.Ops {
		if op.Kind != cluster.OpSet && op.Kind != cluster.OpCreate {
			continue
		}
		tp, ok := parseStatePath(op.Path)
		if !ok {
			continue
		}
		st, err := cluster.DecodePartitionState(tp.Topic, tp.Partition, op.Data)
		if err != nil {
			s.fail("controller %d wrote a state znode that does not decode: %v", m.b.ID, err)
			continue
		}
		s.noteState(tp, st, m.b.ID)
	}
}

// noteState follows a partition state znode: the leader epoch never goes
// back, one leader per leader epoch, and a broker that left the ISR after a
// power loss is clean again (it must catch up to rejoin).
func (s *Sim) noteState(tp replica.TopicPartition, st cluster.PartitionState, by int32) {
	old, ok := s.zkState[tp]
	if ok {
		if st.LeaderEpoch < old.LeaderEpoch {
			s.fail("%s: leader epoch in ZooKeeper went back from %d to %d (controller %d)", tp, old.LeaderEpoch, st.LeaderEpoch, by)
		}
		if st.LeaderEpoch == old.LeaderEpoch && st.Leader != old.Leader {
			s.fail("%s: leader epoch %d in ZooKeeper names leader %d, then %d", tp, st.LeaderEpoch, old.Leader, st.Leader)
		}
	}
	for _, r := range s.Brokers[1:] {
		if !slices.Contains(st.ISR, r.ID) {
			s.unclean[uncleanKey{tp, r.ID}] = false
		}
	}
	s.zkState[tp] = st
	s.W.Tracef("zookeeper: %s leader %d epoch %d isr %v (controller %d)", tp, st.Leader, st.LeaderEpoch, st.ISR, by)
}

// parseStatePath reads /brokers/topics/T/partitions/P/state.
func parseStatePath(p string) (replica.TopicPartition, bool) {
	rest, ok := strings.CutPrefix(p, cluster.TopicsPath+"/")
	if !ok {
		return replica.TopicPartition{}, false
	}
	rest, ok = strings.CutSuffix(rest, "/state")
	if !ok {
		return replica.TopicPartition{}, false
	}
	topic, part, ok := strings.Cut(rest, "/partitions/")
	if !ok {
		return replica.TopicPartition{}, false
	}
	n, err := strconv.ParseInt(part, 10, 32)
	if err != nil {
		return replica.TopicPartition{}, false
	}
	return replica.TopicPartition{Topic: topic, Partition: int32(n)}, true
}

// createTopic creates a topic as the admin path does (Kafka's
// AdminZkClient.createTopicWithAssignment): /config/topics/T with its
// overrides, then /brokers/topics/T with the assignment; the controller's
// watch takes it from there (and writes the topic id).
func (s *Sim) createTopic(t *simTopic) {
	s.adminCreate(cluster.TopicConfigPath(t.Name), cluster.EncodeEntityConfig(map[string]string{"min.insync.replicas": strconv.Itoa(s.Opt.MinISR)}))
	a := cluster.TopicAssignment{Partitions: map[int32][]int32{}}
	for p, rs := range t.Replicas {
		a.Partitions[int32(p)] = rs
	}
	s.adminCreate(cluster.TopicPath(t.Name), a.Encode())
	t.created = true
	for p, rs := range t.Replicas {
		sp := &simPart{TP: replica.TopicPartition{Topic: t.Name, Partition: int32(p)}, Replicas: rs}
		s.Parts = append(s.Parts, sp)
		s.cl.pos[sp.TP] = 0
	}
	s.W.Tracef("admin: created topic %s %v", t.Name, t.Replicas)
}

// controllerNow reads /controller (the broker it names, -1 when none).
func (s *Sim) controllerNow() int32 {
	data, _, err := s.admin.Get(cluster.ControllerPath)
	if err != nil {
		return -1
	}
	ci, err := cluster.DecodeController(data)
	if err != nil {
		return -1
	}
	return ci.BrokerID
}
