package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ModelNode is one broker's controller driver run step by step, for the
// model test (package cluster_test, over zksim): nothing runs unless the
// test says so. Watches and session events are moved into the driver's
// queue by Poll, timers fire when the test picks them (whatever their
// delay), and the channel manager is a FIFO per broker that the test
// answers from.
type ModelNode struct {
	d   *driver
	zk  ZK
	env *modelEnv
}

type modelWatch struct {
	ch  <-chan WatchEvent
	ref watchRef
}

type modelQueue struct {
	epoch int64
	reqs  []Request
}

type modelEnv struct {
	q       *eventQueue
	watches []modelWatch
	timers  []driverEvent
	queues  map[int32]*modelQueue
	replies map[uint64]kmsg.Response
	active  bool
}

// NewModelNode registers broker id on zk (its persistent paths created)
// and returns its driver, which has an election queued.
func NewModelNode(zk ZK, id int32, opts *ControllerOptions, log *slog.Logger) (*ModelNode, error) {
	deadline := time.Now()
	if err := EnsurePersistentPaths(zk, deadline); err != nil {
		return nil, err
	}
	reg := func() []byte {
		r := BrokerRegistration{ID: id, JMXPort: -1, Timestamp: 1700000000000,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "b", Port: 9000 + id}}}
		return r.Encode()
	}
	epoch, session, err := registerBroker(zk, id, reg(), deadline)
	if err != nil {
		return nil, err
	}
	q := newEventQueue()
	env := &modelEnv{q: q, queues: map[int32]*modelQueue{}, replies: map[uint64]kmsg.Response{}}
	d := newDriver(driverConfig{zk: zk, id: id, regData: reg, ctrl: opts, now: func() time.Time { return time.UnixMilli(1700000000000) },
		log: log, env: env, q: q}, session, epoch)
	q.push(driverEvent{kind: evElect})
	return &ModelNode{d: d, zk: zk, env: env}, nil
}

// Poll moves the session events and fired watches that arrived into the
// queue (session events first, then watches in the order they were set);
// it tells how many.
func (n *ModelNode) Poll() int { return n.PollShuffled(nil) }

// PollShuffled is Poll with the fired watches pushed in an order shuffle
// picks (production's forwarding goroutines keep no order among watches).
func (n *ModelNode) PollShuffled(shuffle func(n int, swap func(i, j int))) int {
	moved := 0
	for {
		select {
		case ev, ok := <-n.zk.Events():
			if !ok {
				return moved
			}
			n.env.q.push(driverEvent{kind: evSession, session: ev})
			moved++
			continue
		default:
		}
		break
	}
	kept := n.env.watches[:0]
	var fired []driverEvent
	for _, w := range n.env.watches {
		select {
		case ev, ok := <-w.ch:
			if ok {
				fired = append(fired, driverEvent{kind: evWatch, watch: w.ref, fired: ev})
			}
		default:
			kept = append(kept, w)
		}
	}
	n.env.watches = kept
	if shuffle != nil {
		shuffle(len(fired), func(i, j int) { fired[i], fired[j] = fired[j], fired[i] })
	}
	for _, ev := range fired {
		n.env.q.push(ev)
	}
	return moved + len(fired)
}

// ConfigChanged tells the driver that /config/topics/T changed (what the
// Member's config change listener does).
func (n *ModelNode) ConfigChanged(topic string) {
	n.env.q.push(driverEvent{kind: evTopicConfig, topic: topic})
}

// Queued is the number of events waiting.
func (n *ModelNode) Queued() int { return n.env.q.len() }

// Step handles the oldest event; false when none waits.
func (n *ModelNode) Step() bool {
	ev, ok := n.env.q.tryPop()
	if ok {
		n.d.handle(ev)
	}
	return ok
}

// Timers is the number of timers set and not fired.
func (n *ModelNode) Timers() int { return len(n.env.timers) }

// FireTimer fires timer i now.
func (n *ModelNode) FireTimer(i int) {
	ev := n.env.timers[i]
	n.env.timers = slices.Delete(n.env.timers, i, i+1)
	n.env.q.push(ev)
}

// Control queues a broker's request (AlterPartition, ControlledShutdown,
// ElectLeaders) for the controller.
func (n *ModelNode) Control(ev Event) { n.env.q.push(driverEvent{kind: evControl, ctrl: ev}) }

// TakeReplies returns the replies given since the last call.
func (n *ModelNode) TakeReplies() map[uint64]kmsg.Response {
	r := n.env.replies
	n.env.replies = map[uint64]kmsg.Response{}
	return r
}

// Outstanding lists the brokers with a request waiting, sorted.
func (n *ModelNode) Outstanding() []int32 {
	var ids []int32
	for id, q := range n.env.queues {
		if len(q.reqs) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Head is the oldest request waiting for broker b.
func (n *ModelNode) Head(b int32) Request { return n.env.queues[b].reqs[0] }

// Answer delivers the response to the oldest request for broker b (err:
// no response) as a RequestResult.
func (n *ModelNode) Answer(b int32, resp kmsg.Response, err error) {
	q := n.env.queues[b]
	r := q.reqs[0]
	q.reqs = q.reqs[1:]
	n.env.q.push(driverEvent{kind: evControl, ctrl: RequestResult{Request: r.ID, Resp: resp, Err: err}})
}

// Active tells whether the driver's Controller is active.
func (n *ModelNode) Active() bool { return n.d.state == stActive }

// Epoch is the controller epoch and /controller_epoch version the
// Controller acts with.
func (n *ModelNode) Epoch() (int32, int32) { return n.d.ctrl.Epoch() }

// Registered tells whether the node holds a registration (its session).
func (n *ModelNode) Registered() int64 { return n.d.session }

func (n *ModelNode) String() string { return fmt.Sprintf("broker %d state %d", n.d.id, n.d.state) }

func (e *modelEnv) watch(ch <-chan WatchEvent, ref watchRef) {
	e.watches = append(e.watches, modelWatch{ch: ch, ref: ref})
}

func (e *modelEnv) after(_ time.Duration, ev driverEvent) { e.timers = append(e.timers, ev) }

var errModelDropped = errors.New("model: queue dropped")

func (e *modelEnv) drop(id int32) {
	q := e.queues[id]
	delete(e.queues, id)
	if q == nil {
		return
	}
	for _, r := range q.reqs {
		e.q.push(driverEvent{kind: evControl, ctrl: RequestResult{Request: r.ID, Err: errModelDropped}})
	}
}

func (e *modelEnv) setBrokers(bs []Broker) {
	listed := map[int32]int64{}
	for _, b := range bs {
		listed[b.ID] = b.Epoch
	}
	ids := make([]int32, 0, len(e.queues))
	for id := range e.queues {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if ep, ok := listed[id]; !ok || ep != e.queues[id].epoch {
			e.drop(id)
		}
	}
	for _, b := range bs {
		if e.queues[b.ID] == nil {
			e.queues[b.ID] = &modelQueue{epoch: b.Epoch}
		}
	}
}

func (e *modelEnv) send(reqs []Request) {
	for _, r := range reqs {
		q := e.queues[r.Broker]
		if q == nil {
			e.q.push(driverEvent{kind: evControl, ctrl: RequestResult{Request: r.ID, Err: errModelDropped}})
			continue
		}
		q.reqs = append(q.reqs, r)
	}
}

func (e *modelEnv) stopRequests() {
	ids := make([]int32, 0, len(e.queues))
	for id := range e.queues {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.drop(id)
	}
}

func (e *modelEnv) reply(id uint64, msg kmsg.Response) { e.replies[id] = msg }

func (e *modelEnv) notify(n memberNote) {
	if n.kind == noteActive {
		e.active = n.active
	}
}
