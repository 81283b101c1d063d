package sim

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/replica"
)

// ControllerID is the controller's node id on the network.
const ControllerID = 0

// PartitionState is the controller's record of a partition (the state
// znode): leader, leader epoch, ISR, and its version, the partition epoch.
type PartitionState struct {
	TP          replica.TopicPartition
	Replicas    []int32
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	Version     int32
}

// Controller stands in for package cluster's controller, making Kafka 2.x's
// decisions (see the package doc) without ZooKeeper: its state is in memory
// and its writes never fail.
type Controller struct {
	s     *Sim
	Epoch int32
	Parts []*PartitionState

	live        []bool     // the controller's view: registered and not expired
	brokerEpoch []int64    // of the live registration
	queue       [][]func() // per broker: control requests waiting for the connection
	up          bool
}

// Alive implements Node: the controller never crashes (failover is an epoch
// bump).
func (c *Controller) Alive() (bool, int) { return true, 0 }

func newController(s *Sim) *Controller {
	n := len(s.Brokers)
	return &Controller{s: s, Epoch: 1, live: make([]bool, n), brokerEpoch: make([]int64, n), queue: make([][]func(), n), up: true}
}

// Live reports the controller's view of broker id.
func (c *Controller) Live(id int32) bool { return c.live[id] }

func (c *Controller) partition(tp replica.TopicPartition) *PartitionState {
	for _, p := range c.Parts {
		if p.TP == tp {
			return p
		}
	}
	return nil
}

// createTopic creates partitions with the given assignments, led by the
// first live replica with every live replica in the ISR.
func (c *Controller) createTopic(topic string, assignments [][]int32) {
	for i, replicas := range assignments {
		ps := &PartitionState{TP: replica.TopicPartition{Topic: topic, Partition: int32(i)}, Replicas: replicas, Leader: -1}
		for _, r := range replicas {
			if c.live[r] {
				ps.ISR = append(ps.ISR, r)
			}
		}
		if len(ps.ISR) > 0 {
			ps.Leader = ps.ISR[0]
		}
		c.Parts = append(c.Parts, ps)
		c.s.W.Tracef("controller: created %s replicas %v leader %d isr %v", ps.TP, replicas, ps.Leader, ps.ISR)
		c.sendState(ps, true)
	}
}

// brokerStarted: the broker registered; the controller sees it shortly
// after (a ZooKeeper watch), unless it cannot reach ZooKeeper.
func (c *Controller) brokerStarted(b *Broker) {
	inc := b.inc
	c.s.W.After(c.s.W.Between(1, 20), func() { c.retryRegister(b, inc) })
}

// register makes a running, reachable broker live (Kafka's onBrokerStartup):
// it gets the state of its partitions, and leaderless partitions whose ISR
// holds it get it as leader.
func (c *Controller) register(b *Broker, inc int) {
	if !b.up || b.inc != inc || c.live[b.ID] || c.s.Net.IsCut(ControllerID, b.ID) {
		return
	}
	c.live[b.ID] = true
	c.brokerEpoch[b.ID] = int64(inc)
	c.queue[b.ID] = nil
	c.s.W.Tracef("controller: broker %d is live", b.ID)
	for _, ps := range c.Parts {
		if !slices.Contains(ps.Replicas, b.ID) {
			continue
		}
		if ps.Leader < 0 && slices.Contains(ps.ISR, b.ID) {
			c.elect(ps)
			continue
		}
		c.sendStateTo(ps, b.ID, false)
	}
}

// brokerLost: the broker crashed or lost its ZooKeeper connection; its
// session expires after the session timeout.
func (c *Controller) brokerLost(b *Broker) {
	inc := b.inc
	c.s.W.After(c.s.Opt.SessionTimeoutMs, func() {
		if b.inc == inc && b.up && !c.s.Net.IsCut(ControllerID, b.ID) {
			return // it is back in touch: the session lived
		}
		c.expire(b.ID)
	})
}

// expire is Kafka's onBrokerFailure: the broker's leaderships move to live
// ISR members, and it leaves the ISRs (both leader epoch + 1).
func (c *Controller) expire(id int32) {
	if !c.live[id] {
		return
	}
	c.live[id] = false
	c.queue[id] = nil
	c.s.W.Tracef("controller: broker %d session expired", id)
	for _, ps := range c.Parts {
		switch {
		case ps.Leader == id:
			c.elect(ps)
		case slices.Contains(ps.ISR, id) && len(ps.ISR) > 1:
			ps.ISR = slices.DeleteFunc(slices.Clone(ps.ISR), func(r int32) bool { return r == id })
			ps.LeaderEpoch++
			ps.Version++
			c.s.W.Tracef("controller: %s isr %v epoch %d", ps.TP, ps.ISR, ps.LeaderEpoch)
			c.sendState(ps, false)
		}
	}
	// A broker that is up but was cut off registers again once it can.
	if b := c.s.Brokers[id]; b.up {
		c.s.W.After(c.s.W.Between(50, 500), func() { c.retryRegister(b, b.inc) })
	}
}

func (c *Controller) retryRegister(b *Broker, inc int) {
	if !b.up || b.inc != inc || c.live[b.ID] {
		return
	}
	if c.s.Net.IsCut(ControllerID, b.ID) {
		c.s.W.After(c.s.W.Between(50, 500), func() { c.retryRegister(b, inc) })
		return
	}
	c.register(b, inc)
}

// elect picks the partition's leader (Kafka's offline election, unclean
// election disabled): the first replica in assignment order that is live
// and in the ISR; the new ISR is the live members of the old one. With
// none, the partition has no leader and the ISR keeps its last member.
func (c *Controller) elect(ps *PartitionState) {
	leader := int32(-1)
	for _, r := range ps.Replicas {
		if c.live[r] && slices.Contains(ps.ISR, r) {
			leader = r
			break
		}
	}
	if leader >= 0 {
		ps.ISR = slices.DeleteFunc(slices.Clone(ps.ISR), func(r int32) bool { return !c.live[r] })
	} else if len(ps.ISR) > 1 {
		ps.ISR = slices.DeleteFunc(slices.Clone(ps.ISR), func(r int32) bool { return r != ps.Leader })
	}
	ps.Leader = leader
	ps.LeaderEpoch++
	ps.Version++
	c.s.W.Tracef("controller: %s leader %d epoch %d isr %v", ps.TP, ps.Leader, ps.LeaderEpoch, ps.ISR)
	c.sendState(ps, false)
}

// moveLeader is a preferred-replica election towards another live ISR
// member: leader epoch + 1, same ISR.
func (c *Controller) moveLeader(ps *PartitionState, to int32) {
	ps.Leader = to
	ps.LeaderEpoch++
	ps.Version++
	c.s.W.Tracef("controller: %s leadership moved to %d epoch %d isr %v", ps.TP, to, ps.LeaderEpoch, ps.ISR)
	c.sendState(ps, false)
}

// failover is a new controller: epoch + 1, and every live broker gets the
// state of its partitions again (same leader epochs: they are ignored).
func (c *Controller) failover() {
	c.Epoch++
	c.s.W.Tracef("controller: failover to epoch %d", c.Epoch)
	for _, ps := range c.Parts {
		c.sendState(ps, false)
	}
}

// sendState sends a partition's state to its live replicas.
func (c *Controller) sendState(ps *PartitionState, isNew bool) {
	for _, r := range ps.Replicas {
		if c.live[r] {
			c.sendStateTo(ps, r, isNew)
		}
	}
}

// sendStateTo queues a LeaderAndIsr for one broker: control requests go in
// order over one connection and wait while it is cut (Kafka's controller
// channel retries), until the broker is declared dead.
func (c *Controller) sendStateTo(ps *PartitionState, to int32, isNew bool) {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 5
	req.ControllerID = ControllerID
	req.ControllerEpoch = c.Epoch
	req.BrokerEpoch = c.brokerEpoch[to]
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = ps.TP.Topic
	p := kmsg.NewLeaderAndISRRequestTopicPartition()
	p.Partition = ps.TP.Partition
	p.ControllerEpoch = c.Epoch
	p.Leader, p.LeaderEpoch, p.ZKVersion = ps.Leader, ps.LeaderEpoch, ps.Version
	p.ISR, p.Replicas = slices.Clone(ps.ISR), slices.Clone(ps.Replicas)
	p.IsNew = isNew
	ts.PartitionStates = append(ts.PartitionStates, p)
	req.TopicStates = append(req.TopicStates, ts)
	b := c.s.Brokers[to]
	inc := b.inc
	c.queue[to] = append(c.queue[to], func() {
		c.s.Net.Send(ControllerID, to, false, func() {
			if b.inc != inc {
				return
			}
			c.s.W.Tracef("broker %d LeaderAndIsr %s leader %d epoch %d isr %v (controller epoch %d)", to, ps.TP, p.Leader, p.LeaderEpoch, p.ISR, req.ControllerEpoch)
			b.M.LeaderAndIsr(req, c.s.W.Now)
		})
	})
	c.flush(to)
}

// flush sends a broker's queued control requests while its link is up.
func (c *Controller) flush(to int32) {
	if c.s.Net.IsCut(ControllerID, to) {
		return
	}
	q := c.queue[to]
	c.queue[to] = nil
	for _, send := range q {
		send()
	}
}

// alterPartition answers AlterPartition as Kafka 2.8's ZK controller
// answers AlterIsr: a stale broker epoch is refused whole; per partition,
// another leader epoch is FENCED_LEADER_EPOCH; the ISR it already has is
// answered as it stands (a retry whose first answer was lost); another
// partition epoch is INVALID_UPDATE_VERSION; otherwise the ISR is written
// (partition epoch + 1, leader epoch unchanged) and returned.
func (c *Controller) alterPartition(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if id := req.BrokerID; id < 1 || int(id) >= len(c.live) || !c.live[id] || c.brokerEpoch[id] != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			ps := c.partition(replica.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			switch {
			case ps == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.LeaderEpoch != ps.LeaderEpoch || ps.Leader != req.BrokerID:
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case rp.PartitionEpoch != ps.Version && !slices.Equal(rp.NewISR, ps.ISR):
				// A retry of a change already made (its answer was lost)
				// succeeds whatever its version (Kafka's equalsIgnoreZk).
				sp.ErrorCode = kerr.InvalidUpdateVersion.Code
			default:
				isr := slices.Clone(rp.NewISR)
				if !slices.Equal(isr, ps.ISR) {
					for _, r := range isr {
						if !slices.Contains(ps.ISR, r) {
							c.s.joinedISR(ps.TP, r)
						}
					}
					ps.ISR = isr
					ps.Version++
					c.s.W.Tracef("controller: %s isr %v version %d (AlterPartition)", ps.TP, ps.ISR, ps.Version)
				}
				sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = ps.Leader, ps.LeaderEpoch, slices.Clone(ps.ISR), ps.Version
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
