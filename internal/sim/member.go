package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
)

// member is one broker process's life in ZooKeeper, the deterministic
// equivalent of the production driver (package cluster's Member): its
// session, its registration (/brokers/ids/N, ephemeral; the czxid is the
// broker epoch), its part in the controller election and, while elected,
// the driver of the real cluster.Controller following the contract of
// cluster/doc.go. Nothing here blocks: ZooKeeper reads are synchronous
// calls into zksim, the controller's write batches are sent one at a time
// and their results come back as later events, watch and session events
// arrive when the simulation delivers them (zksim Hold/Deliver), and every
// retry is a scheduled event.
type member struct {
	b  *Broker
	s  *Sim
	zk *zksim.Session

	dead    bool  // the process is gone
	session int64 // the session the registration lives in; 0: unregistered
	epoch   int64 // broker epoch: the registration's czxid
	watches []*armed

	ctrl        *cluster.Controller
	state       ctrlState
	gen         uint64 // +1 at every activation, reload and stop: older timers and results are void
	ctrlEpoch   int32  // the epoch this member won (while elected)
	writes      []cluster.WriteBatch
	writing     bool
	loadWaiting bool // a snapshot load waits for the write in flight
	chans       []*channel
	chanGen     uint64
	replies     map[uint64]func(kmsg.Response)
	nextEventID uint64
	retrying    map[string]func()
}

type ctrlState int

const (
	ctrlIdle    ctrlState = iota // not the controller
	ctrlLoading                  // elected (or reloading): the Controller waits for a snapshot
	ctrlActive                   // the Controller is active
)

func (st ctrlState) String() string {
	return [...]string{"idle", "loading", "active"}[st]
}

// watchClass says what a fired watch makes the member read again.
type watchClass int

const (
	wController watchClass = iota + 1
	wBrokers
	wTopics
	wDeletions
	wLogDirs
)

type watchKind int

const (
	kindData watchKind = iota
	kindChildren
	kindExists
)

// armed is one watch the member set and has not seen fire: one per path
// and kind, as ZooKeeper's client keeps one per path.
type armed struct {
	class watchClass
	kind  watchKind
	path  string
	ch    <-chan cluster.WatchEvent
}

func newMember(b *Broker) *member {
	s := b.s
	m := &member{
		b: b, s: s,
		zk:       s.ZK.Connect(),
		replies:  map[uint64]func(kmsg.Response){},
		retrying: map[string]func(){},
	}
	m.ctrl = cluster.NewController(b.ID, &cluster.ControllerOptions{DeleteTopicEnable: true, Rand: s.childRand()})
	s.W.Tracef("broker %d: zookeeper session 0x%x connecting", b.ID, m.zk.SessionID())
	return m
}

// tracef traces a line about this member.
func (m *member) tracef(format string, args ...any) {
	m.s.W.Tracef("broker %d: "+format, append([]any{m.b.ID}, args...)...)
}

// die is the process's end: the connection to ZooKeeper drops with it; the
// session lives on at the server until the session timeout expires it.
func (m *member) die() {
	if m.dead {
		return
	}
	m.dead = true
	m.closeChannels()
	m.s.expireLater(m.zk)
	m.zk.Disconnect()
}

// retry runs fn after a backoff, unless the process died meanwhile; one
// timer per key: a retry asked while one is pending replaces its fn.
func (m *member) retry(key string, fn func()) {
	if _, ok := m.retrying[key]; ok {
		m.retrying[key] = fn
		return
	}
	m.retrying[key] = fn
	m.s.W.After(m.s.W.Between(50, 300), func() {
		fn := m.retrying[key]
		delete(m.retrying, key)
		if !m.dead {
			fn()
		}
	})
}

// sessionGone tells whether err means the session the call ran in is gone
// (its events say what follows).
func sessionGone(err error) bool {
	return errors.Is(err, cluster.ErrSessionExpired) || errors.Is(err, cluster.ErrClosed)
}

// poll takes what ZooKeeper delivered: session events first, then the
// watches that fired, handled by class in a fixed order.
func (m *member) poll() {
	if m.dead {
		return
	}
	for {
		select {
		case ev, ok := <-m.zk.Events():
			if !ok {
				return
			}
			m.onSession(ev)
			continue
		default:
		}
		break
	}
	var fired []watchClass
	kept := m.watches[:0]
	for _, w := range m.watches {
		select {
		case <-w.ch:
			if !slices.Contains(fired, w.class) {
				fired = append(fired, w.class)
			}
		default:
			kept = append(kept, w)
		}
	}
	clear(m.watches[len(kept):])
	m.watches = kept
	slices.Sort(fired)
	for _, c := range fired {
		if m.dead {
			return
		}
		m.onWatch(c)
	}
}

func (m *member) onSession(ev cluster.SessionEvent) {
	switch ev.State {
	case cluster.SessionExpired:
		m.tracef("zookeeper session 0x%x expired", ev.SessionID)
		m.session = 0
		m.watches = nil // each reports WatchLost; all are set again
		if m.state != ctrlIdle {
			m.resign("session expired")
		}
	case cluster.SessionConnected:
		if ev.SessionID != m.session && m.zk.SessionID() == ev.SessionID {
			m.tracef("zookeeper session 0x%x connected", ev.SessionID)
			m.register()
		}
	}
}

// register creates /brokers/ids/N in the current session (Kafka's
// registerBroker); a registration left by an older session (a crashed
// process whose session has not expired yet) makes it try again later, as
// an operator restarts a broker that failed to start.
func (m *member) register() {
	sid := m.zk.SessionID()
	if sid == 0 || m.session == sid {
		return
	}
	path := cluster.BrokerPath(m.b.ID)
	reg := cluster.BrokerRegistration{
		ID:        m.b.ID,
		Endpoints: []cluster.Endpoint{{Listener: "PLAINTEXT", Host: fmt.Sprintf("b%d", m.b.ID), Port: 9092}},
		JMXPort:   -1,
		Timestamp: m.s.W.Now,
	}
	_, err := m.zk.Create(path, reg.Encode(), cluster.Ephemeral)
	if err != nil && !errors.Is(err, cluster.ErrNodeExists) {
		m.retry("register", m.register)
		return
	}
	_, st, err := m.zk.Get(path)
	switch {
	case err != nil:
		m.retry("register", m.register)
		return
	case st.EphemeralOwner != sid:
		m.tracef("registration: %s held by session 0x%x, retrying", path, st.EphemeralOwner)
		m.retry("register", m.register)
		return
	}
	m.session, m.epoch = sid, st.Czxid
	m.b.M.SetBrokerEpoch(st.Czxid)
	m.b.serving = true
	m.tracef("registered, broker epoch %d (session 0x%x)", st.Czxid, sid)
	m.elect()
}

// --- watches ---

func (m *member) isArmed(kind watchKind, path string) bool {
	for _, w := range m.watches {
		if w.kind == kind && w.path == path {
			return true
		}
	}
	return false
}

func (m *member) arm(class watchClass, kind watchKind, path string, ch <-chan cluster.WatchEvent) {
	m.watches = append(m.watches, &armed{class: class, kind: kind, path: path, ch: ch})
}

// children lists path's children sorted, watching them unless a watch is
// set already.
func (m *member) children(class watchClass, path string) ([]string, error) {
	var kids []string
	var err error
	if m.isArmed(kindChildren, path) {
		kids, _, err = m.zk.Children(path)
	} else {
		var ch <-chan cluster.WatchEvent
		kids, _, ch, err = m.zk.ChildrenW(path)
		if err == nil {
			m.arm(class, kindChildren, path, ch)
		}
	}
	if errors.Is(err, cluster.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(kids)
	return kids, err
}

// getData reads a znode, watching it unless a watch is set already.
func (m *member) getData(class watchClass, path string) ([]byte, cluster.Stat, error) {
	if m.isArmed(kindData, path) {
		return m.zk.Get(path)
	}
	data, st, ch, err := m.zk.GetW(path)
	if err == nil {
		m.arm(class, kindData, path, ch)
	}
	return data, st, err
}

// onWatch handles a fired watch of class c: /controller for everyone, the
// controller's listings while it is active (a watch firing while the
// member is not the controller is dropped: activation sets them again).
func (m *member) onWatch(c watchClass) {
	if m.session == 0 {
		return
	}
	if c == wController {
		m.onControllerWatch()
		return
	}
	if m.state != ctrlActive {
		return
	}
	ev, err := m.readClass(c)
	if err != nil {
		m.retry(fmt.Sprintf("read %d", c), func() {
			if m.state == ctrlActive {
				m.onWatch(c)
			}
		})
		return
	}
	m.step(ev)
}

// readClass reads what a class of watch covers, setting its watches, as
// the event the controller steps.
func (m *member) readClass(c watchClass) (cluster.Event, error) {
	switch c {
	case wBrokers:
		bs, err := m.readBrokers()
		if err != nil {
			return nil, err
		}
		m.setChannels(bs)
		return cluster.BrokersChanged{Brokers: bs}, nil
	case wTopics:
		ts, err := m.readTopics()
		return cluster.TopicsChanged{Topics: ts}, err
	case wDeletions:
		kids, err := m.children(wDeletions, cluster.DeleteTopicsPath)
		return cluster.DeletionsRequested{Topics: kids}, err
	case wLogDirs:
		kids, err := m.children(wLogDirs, cluster.LogDirEventNotificationPath)
		if err != nil {
			return nil, err
		}
		var evs []cluster.LogDirEvent
		for _, k := range kids {
			path := cluster.LogDirEventNotificationPath + "/" + k
			data, _, err := m.zk.Get(path)
			if errors.Is(err, cluster.ErrNoNode) {
				continue
			}
			if err != nil {
				return nil, err
			}
			id, err := cluster.DecodeLogDirEvent(path, data)
			if err != nil {
				continue
			}
			evs = append(evs, cluster.LogDirEvent{Node: k, Broker: id})
		}
		return cluster.LogDirEvents{Events: evs}, nil
	}
	return nil, fmt.Errorf("sim: unknown watch class %d", c)
}

// readBrokers reads every registration (watching the list and each one).
func (m *member) readBrokers() ([]cluster.Broker, error) {
	kids, err := m.children(wBrokers, cluster.BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	var bs []cluster.Broker
	for _, k := range kids {
		id, err := cluster.ParseBrokerID(k)
		if err != nil {
			continue
		}
		data, st, err := m.getData(wBrokers, cluster.BrokerPath(id))
		if errors.Is(err, cluster.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		reg, err := cluster.DecodeBrokerRegistration(id, data)
		if err != nil {
			m.s.fail("broker %d: its own registration JSON does not decode: %v", id, err)
			continue
		}
		bs = append(bs, cluster.Broker{ID: id, Epoch: st.Czxid, Endpoints: reg.Endpoints, Rack: reg.Rack})
	}
	slices.SortFunc(bs, func(a, b cluster.Broker) int { return int(a.ID) - int(b.ID) })
	return bs, nil
}

// readTopics reads every topic's assignment (watching the list and each
// one) and its config overrides.
func (m *member) readTopics() ([]cluster.Topic, error) {
	names, err := m.children(wTopics, cluster.TopicsPath)
	if err != nil {
		return nil, err
	}
	var ts []cluster.Topic
	for _, name := range names {
		data, st, err := m.getData(wTopics, cluster.TopicPath(name))
		if errors.Is(err, cluster.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		a, err := cluster.DecodeTopicAssignment(name, data)
		if err != nil {
			m.s.fail("topic %s: the assignment the admin wrote does not decode: %v", name, err)
			continue
		}
		t := cluster.Topic{Name: name, ID: a.TopicID, Version: st.Version}
		for p := int32(0); p < int32(len(a.Partitions)); p++ {
			t.Replicas = append(t.Replicas, a.Partitions[p])
		}
		cfg, _, err := m.zk.Get(cluster.TopicConfigPath(name))
		switch {
		case errors.Is(err, cluster.ErrNoNode):
		case err != nil:
			return nil, err
		default:
			if t.Configs, err = cluster.DecodeEntityConfig(cluster.TopicConfigPath(name), cfg); err != nil {
				m.s.fail("topic %s: config does not decode: %v", name, err)
			}
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// --- election ---

// readController reads /controller, keeping an exists watch on it (every
// broker does: Kafka's ControllerChangeHandler). ours: it names this broker
// and belongs to the registration's session.
func (m *member) readController() (id int32, ours, exists bool, err error) {
	if !m.isArmed(kindExists, cluster.ControllerPath) {
		_, _, ch, err := m.zk.ExistsW(cluster.ControllerPath)
		if err != nil {
			return -1, false, false, err
		}
		m.arm(wController, kindExists, cluster.ControllerPath, ch)
	}
	data, st, err := m.zk.Get(cluster.ControllerPath)
	if errors.Is(err, cluster.ErrNoNode) {
		return -1, false, false, nil
	}
	if err != nil {
		return -1, false, false, err
	}
	ci, err := cluster.DecodeController(data)
	if err != nil {
		m.s.fail("/controller does not decode: %v", err)
		return -1, false, true, nil
	}
	return ci.BrokerID, ci.BrokerID == m.b.ID && st.EphemeralOwner == m.session, true, nil
}

// elect takes part in the election (Kafka's KafkaController.elect): with no
// /controller, create it and move /controller_epoch from the version read
// to epoch+1 in one multi; when that fails or its answer is lost, whoever
// /controller names won.
func (m *member) elect() {
	if m.dead || m.session == 0 || m.state != ctrlIdle || m.zk.SessionID() != m.session {
		return
	}
	_, ours, exists, err := m.readController()
	if err != nil {
		m.retry("elect", m.elect)
		return
	}
	if ours {
		m.activate()
		return
	}
	if exists {
		return
	}
	epoch, version, err := m.readControllerEpoch()
	if err != nil {
		m.retry("elect", m.elect)
		return
	}
	_, err = m.zk.Multi(
		cluster.Op{Kind: cluster.OpCreate, Path: cluster.ControllerPath, Data: cluster.EncodeController(m.b.ID, m.s.W.Now), Mode: cluster.Ephemeral},
		cluster.Op{Kind: cluster.OpSet, Path: cluster.ControllerEpochPath, Data: cluster.EncodeControllerEpoch(epoch + 1), Version: version})
	if err == nil {
		m.won(epoch + 1)
		return
	}
	_, ours, exists, rerr := m.readController()
	switch {
	case rerr != nil:
		m.retry("elect", m.elect)
	case ours:
		m.won(epoch + 1) // the answer was lost
	case !exists:
		m.retry("elect", m.elect)
	}
}

func (m *member) won(epoch int32) {
	m.tracef("won the election, epoch %d", epoch)
	m.activate()
}

// readControllerEpoch reads /controller_epoch and its version, creating it
// as 0 when missing.
func (m *member) readControllerEpoch() (int32, int32, error) {
	for range 3 {
		data, st, err := m.zk.Get(cluster.ControllerEpochPath)
		if err == nil {
			e, err := cluster.DecodeControllerEpoch(data)
			return e, st.Version, err
		}
		if !errors.Is(err, cluster.ErrNoNode) {
			return 0, 0, err
		}
		_, err = m.zk.Create(cluster.ControllerEpochPath, cluster.EncodeControllerEpoch(0), cluster.Persistent)
		if err != nil && !errors.Is(err, cluster.ErrNodeExists) {
			return 0, 0, err
		}
	}
	return 0, 0, fmt.Errorf("%w: /controller_epoch keeps vanishing", cluster.ErrConnectionLoss)
}

// onControllerWatch follows /controller: an active controller it no longer
// names resigns; when it is gone, a new election.
func (m *member) onControllerWatch() {
	_, ours, exists, err := m.readController()
	if err != nil {
		m.retry("controller watch", func() {
			if m.session != 0 {
				m.onControllerWatch()
			}
		})
		return
	}
	switch {
	case m.state != ctrlIdle && !ours:
		m.resign("/controller names another broker")
	case m.state == ctrlIdle && ours:
		m.activate()
	case !exists:
		m.elect()
	}
}

// --- the controller ---

// activate takes over (Kafka's onControllerFailover).
func (m *member) activate() {
	m.gen++
	m.state = ctrlLoading
	m.load()
}

// load sets the controller's watches, reads the snapshot and steps
// Activate (after winning, or for a Reload). It waits for a write still in
// flight: the snapshot must see it.
func (m *member) load() {
	if m.dead || m.state != ctrlLoading {
		return
	}
	if m.writing {
		m.loadWaiting = true
		return
	}
	for _, c := range []watchClass{wBrokers, wTopics, wDeletions, wLogDirs} {
		if _, err := m.readClass(c); err != nil {
			m.loadFailed(err)
			return
		}
	}
	snap, err := cluster.LoadSnapshot(m.zk, m.b.ID)
	if err != nil {
		m.loadFailed(err)
		return
	}
	m.ctrlEpoch = snap.ControllerEpoch
	m.s.elected(m, snap.ControllerEpoch)
	m.setChannels(snap.Brokers)
	m.state = ctrlActive
	m.tracef("controller active, epoch %d, %d brokers, %d topics", snap.ControllerEpoch, len(snap.Brokers), len(snap.Topics))
	m.step(cluster.Activate{Snapshot: snap})
}

func (m *member) loadFailed(err error) {
	switch {
	case errors.Is(err, cluster.ErrNotController):
		m.tracef("not the controller after all: %v", err)
		m.stop()
		m.elect()
	default: // a lost session's events resign meanwhile
		gen := m.gen
		m.retry("load", func() {
			if m.gen == gen {
				m.load()
			}
		})
	}
}

// resign makes the controller stop (its events, or /controller naming
// another broker).
func (m *member) resign(why string) {
	switch m.state {
	case ctrlActive:
		gen := m.gen
		m.step(cluster.Resign{Reason: why}) // Ready says Resigned: afterResign
		if m.gen == gen {
			m.s.fail("broker %d: the controller did not resign when told", m.b.ID)
			m.afterResign()
		}
	case ctrlLoading:
		m.afterResign()
	}
}

// stop forgets the controller's work: channels, queued writes.
func (m *member) stop() {
	m.state = ctrlIdle
	m.gen++
	m.writes = nil
	m.closeChannels()
}

// afterResign is Kafka's onControllerResignation and triggerControllerMove:
// the queues go, /controller is deleted if this session still holds it, and
// the member elects again (or watches).
func (m *member) afterResign() {
	if m.state == ctrlIdle {
		return
	}
	m.stop()
	m.tracef("controller resigned")
	if m.session == 0 {
		return
	}
	data, st, err := m.zk.Get(cluster.ControllerPath)
	if err == nil && st.EphemeralOwner == m.session {
		if ci, err := cluster.DecodeController(data); err == nil && ci.BrokerID == m.b.ID {
			if err := m.zk.Delete(cluster.ControllerPath, st.Version); err != nil && !errors.Is(err, cluster.ErrNoNode) {
				m.tracef("deleting /controller after resigning: %v", err)
			}
		}
	}
	m.elect()
}

// step feeds the Controller one event and carries out what it decided.
func (m *member) step(ev cluster.Event) {
	m.ctrl.Step(ev)
	m.pump()
}

// pump carries out Ready: write batches queued (one in flight), requests to
// the brokers' channels, replies to their askers, Resigned and Reload.
func (m *member) pump() {
	r := m.ctrl.Ready()
	for _, l := range r.Log {
		m.tracef("%s", l)
	}
	m.writes = append(m.writes, r.Writes...)
	for _, req := range r.Requests {
		m.enqueue(req)
	}
	for _, rep := range r.Replies {
		if f := m.replies[rep.ID]; f != nil {
			delete(m.replies, rep.ID)
			f(rep.Msg)
		}
	}
	switch {
	case r.Resigned:
		m.afterResign()
	case r.Reload:
		m.tracef("controller reloads")
		m.stop()
		m.state = ctrlLoading
		gen := m.gen
		m.retry("load", func() {
			if m.gen == gen {
				m.load()
			}
		})
	}
	m.startWrite()
}

// startWrite sends the next write batch: the multi reaches ZooKeeper after
// a delay and its result comes back after another; meanwhile other events
// are stepped (the Controller holds what depends on the write).
func (m *member) startWrite() {
	if m.writing || len(m.writes) == 0 || m.state != ctrlActive {
		return
	}
	batch := m.writes[0]
	m.writes = m.writes[1:]
	m.writing = true
	gen, epoch := m.gen, m.ctrlEpoch
	m.s.W.After(m.s.zkDelay(), func() {
		if m.dead {
			return
		}
		before := m.s.ZK.Zxid()
		res, err := m.zk.Multi(batch.Ops...)
		landed := m.s.ZK.Zxid() > before
		m.tracef("controller write %d (%d ops, epoch %d): landed %v err %v", batch.ID, len(batch.Ops), epoch, landed, err)
		if landed {
			m.s.landed(m, epoch, batch)
		} else if fencedErr(res, err) {
			m.s.stats.FencedWrites++
		}
		m.s.W.After(m.s.zkDelay(), func() {
			if m.dead {
				return
			}
			m.writing = false
			if m.gen == gen && m.state == ctrlActive {
				m.step(cluster.WriteResult{Batch: batch.ID, Results: res, Err: err})
			}
			if m.loadWaiting {
				m.loadWaiting = false
				m.load()
			}
			m.startWrite()
		})
	})
}

// fencedErr tells whether a multi failed on its /controller_epoch check.
func fencedErr(res []cluster.OpResult, err error) bool {
	if err == nil {
		return false
	}
	if sessionGone(err) {
		return true
	}
	return len(res) > 0 && (errors.Is(res[0].Err, cluster.ErrBadVersion) || errors.Is(res[0].Err, cluster.ErrNoNode))
}

// handle steps a broker's request to the controller (AlterPartition,
// ElectLeaders, ControlledShutdown): an inactive Controller answers
// NOT_CONTROLLER at once.
func (m *member) handle(req kmsg.Request, reply func(kmsg.Response)) {
	m.nextEventID++
	id := m.nextEventID
	m.replies[id] = reply
	switch r := req.(type) {
	case *kmsg.AlterPartitionRequest:
		m.step(cluster.AlterPartition{ID: id, Req: r})
	case *kmsg.ElectLeadersRequest:
		m.step(cluster.ElectLeaders{ID: id, Req: r})
	case *kmsg.ControlledShutdownRequest:
		m.step(cluster.ControlledShutdown{ID: id, Req: r})
	default:
		delete(m.replies, id)
		m.s.fail("broker %d: the controller got a %T", m.b.ID, req)
	}
}

// describe is a line for reports.
func (m *member) describe() string {
	return "session 0x" + strconv.FormatInt(m.session, 16) + " epoch " + strconv.FormatInt(m.epoch, 10) + " controller " + m.state.String()
}
