package cluster

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// MemberConfig configures StartMember. Zero values are Kafka's defaults
// except where a field says otherwise.
type MemberConfig struct {
	// ZK is a connected session (DialZK; zksim in tests). The Member owns
	// it from StartMember's success on: Close closes it (the registration
	// and /controller go at once). When StartMember fails it is left open.
	ZK ZK
	// BrokerID is broker.id; -1 generates one (/brokers/seqid, above
	// ReservedBrokerMaxID), as broker.id.generation.enable does.
	BrokerID int32
	// ReservedBrokerMaxID is reserved.broker.max.id (default 1000).
	ReservedBrokerMaxID int32
	// Endpoints are the advertised listeners, in advertised.listeners
	// order; Rack is broker.rack ("" for none); Features the supported
	// feature ranges of the registration (nil: {}, as Kafka 2.8).
	Endpoints []Endpoint
	Rack      string
	Features  map[string]VersionRange
	// Controller holds the controller's options; its InterBrokerListener
	// (inter.broker.listener.name, default PLAINTEXT) also picks the
	// endpoint the channel manager connects to.
	Controller *ControllerOptions
	// ControllerSocketTimeout is controller.socket.timeout.ms (default
	// 30 s): how long the controller waits to connect to a broker and for
	// the answer to one request.
	ControllerSocketTimeout time.Duration
	// AutoLeaderRebalanceEnable is auto.leader.rebalance.enable (Kafka's
	// default is true; the zero value here is false): every
	// LeaderImbalanceCheckInterval (leader.imbalance.check.interval.seconds,
	// default 300 s) the controller moves leadership back to preferred
	// replicas.
	AutoLeaderRebalanceEnable    bool
	LeaderImbalanceCheckInterval time.Duration
	// StartTimeout bounds how long StartMember retries ZooKeeper calls
	// that fail with connection loss (default 18 s, Kafka's
	// zookeeper.connection.timeout.ms default).
	StartTimeout time.Duration
	// CheckClusterID, when set, is called with the cluster id before the
	// broker registers; an error fails StartMember (a broker whose
	// meta.properties names another cluster refuses to join, as Kafka's
	// InconsistentClusterIdException).
	CheckClusterID func(clusterID string) error
	// Callbacks, each called in order on a goroutine of the Member (never
	// on the controller's event loop), so they may call the Member back:
	// OnControllerChange with the broker /controller names (-1: none);
	// OnReregistered after a session expiry, once the broker is
	// registered again, with its new broker epoch (the server reconciles:
	// its replicas get a new LeaderAndIsr from the controller anyway);
	// OnTopicConfigChange with topics whose /config/topics/T changed, in
	// notification order; OnBrokerConfigChange with the names (a broker id
	// or <default>) whose /config/brokers/<name> changed, and once with
	// none at start (the broker reads its dynamic configs then);
	// OnEntityConfigChange likewise with the other entities' paths below
	// /config (users/U, users/U/clients/C, clients/C: client quotas and
	// SCRAM credentials).
	OnControllerChange   func(controllerID int32)
	OnReregistered       func(brokerEpoch int64)
	OnTopicConfigChange  func(topics []string)
	OnBrokerConfigChange func(names []string)
	OnEntityConfigChange func(entityPaths []string)
	// Logger gets the state-change log (nil: slog.Default()).
	Logger *slog.Logger
	// Now is the clock of timestamps and of the config notification purge
	// (nil: time.Now).
	Now func() time.Time
	// Dial opens the channel manager's connections (nil: net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Security secures the channel manager's connections as the
	// inter-broker listener's security protocol asks (zero: PLAINTEXT).
	Security kwire.Security
}

// Defaults.
const (
	DefaultControllerSocketTimeout      = 30 * time.Second
	DefaultLeaderImbalanceCheckInterval = 300 * time.Second
	// ConfigChangeExpiration is how old a /config/changes notification
	// gets before a broker deletes it (Kafka: 15 minutes).
	ConfigChangeExpiration = 15 * time.Minute
)

func (c *MemberConfig) withDefaults() MemberConfig {
	d := *c
	if d.ReservedBrokerMaxID <= 0 {
		d.ReservedBrokerMaxID = ReservedBrokerMaxID
	}
	if d.ControllerSocketTimeout <= 0 {
		d.ControllerSocketTimeout = DefaultControllerSocketTimeout
	}
	if d.LeaderImbalanceCheckInterval <= 0 {
		d.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if d.StartTimeout <= 0 {
		d.StartTimeout = DefaultZKSessionTimeout
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// Member is a broker's life in ZooKeeper (Kafka's KafkaServer,
// KafkaZkClient and KafkaController election parts): its registration,
// its part in the controller election, the controller while elected, the
// config change notifications. All of it runs on the Member's goroutines,
// apart from the broker's request paths: ZooKeeper being slow or down
// delays only them.
type Member struct {
	cfg       MemberConfig
	zk        ZK
	id        int32
	clusterID string
	log       *slog.Logger

	q      *eventQueue
	cm     *channelManager
	notes  *notifier
	closed chan struct{}
	once   sync.Once
	lifeMu sync.Mutex // orders wg.Add after start with Close's wg.Wait
	wg     sync.WaitGroup

	brokerEpoch  atomic.Int64 // 0 while unregistered
	controllerID atomic.Int32
	active       atomic.Bool

	reqID   atomic.Uint64
	wmu     sync.Mutex
	waiters map[uint64]chan kmsg.Response

	// answers NOT_CONTROLLER for the request entry points when this broker
	// is not the controller, without a trip through the event loop
	idleMu   sync.Mutex
	idleCtrl *Controller
}

// StartMember joins the cluster: it creates Kafka's persistent paths,
// reads or creates /cluster/id (CheckClusterID may refuse it), generates
// the broker id if asked, and registers /brokers/ids/N (ephemeral). A
// registration owned by another session fails with ErrBrokerIDTaken
// ("broker.id N is already registered by another broker"). Then it starts
// the event loop: the controller election and, while elected, the
// controller; and the config change listener.
func StartMember(cfg MemberConfig) (*Member, error) {
	c := cfg.withDefaults()
	if c.ZK == nil {
		return nil, errors.New("cluster: StartMember: no ZooKeeper session")
	}
	if c.BrokerID < -1 {
		return nil, fmt.Errorf("cluster: StartMember: broker.id %d: want -1 or more", c.BrokerID)
	}
	deadline := time.Now().Add(c.StartTimeout)
	if err := EnsurePersistentPaths(c.ZK, deadline); err != nil {
		return nil, err
	}
	clusterID, err := EnsureClusterID(c.ZK, deadline)
	if err != nil {
		return nil, err
	}
	if c.CheckClusterID != nil {
		if err := c.CheckClusterID(clusterID); err != nil {
			return nil, err
		}
	}
	id := c.BrokerID
	if id < 0 {
		if id, err = GenerateBrokerID(c.ZK, c.ReservedBrokerMaxID, deadline); err != nil {
			return nil, err
		}
	}
	m := &Member{cfg: c, zk: c.ZK, id: id, clusterID: clusterID, log: c.Logger.With("broker", id),
		q: newEventQueue(), closed: make(chan struct{}), waiters: map[uint64]chan kmsg.Response{}}
	m.controllerID.Store(-1)
	m.idleCtrl = NewController(id, c.Controller)
	epoch, session, err := registerBroker(c.ZK, id, m.registration(), deadline)
	if err != nil {
		return nil, err
	}
	m.brokerEpoch.Store(epoch)
	m.log.Info("registered in zookeeper", "cluster_id", clusterID, "broker_epoch", epoch, "session", hexID(session))

	listener := "PLAINTEXT"
	if c.Controller != nil && c.Controller.InterBrokerListener != "" {
		listener = c.Controller.InterBrokerListener
	}
	m.cm = &channelManager{self: id, listener: listener, timeout: c.ControllerSocketTimeout, dial: c.Dial, security: c.Security,
		result: func(r RequestResult) { m.q.push(driverEvent{kind: evControl, ctrl: r}) },
		log:    m.log, queues: map[int32]*brokerQueue{}}
	m.notes = newNotifier()
	var rebalance time.Duration
	if c.AutoLeaderRebalanceEnable {
		rebalance = c.LeaderImbalanceCheckInterval
	}
	ctrlOpts := c.Controller
	if ctrlOpts == nil || ctrlOpts.Rand == nil {
		o := ControllerOptions{DeleteTopicEnable: true}
		if ctrlOpts != nil {
			o = *ctrlOpts
		}
		o.Rand = randomRand()
		ctrlOpts = &o
	}
	d := newDriver(driverConfig{zk: c.ZK, id: id, regData: m.registration, ctrl: ctrlOpts, now: c.Now, log: m.log,
		rebalance: rebalance, env: (*memberEnv)(m), q: m.q}, session, epoch)

	m.wg.Add(3)
	go m.pumpSession()
	go m.loop(d)
	go m.watchConfigChanges()
	m.q.push(driverEvent{kind: evElect})
	return m, nil
}

// registration is /brokers/ids/N's JSON, timestamped now.
func (m *Member) registration() []byte {
	r := BrokerRegistration{ID: m.id, Endpoints: m.cfg.Endpoints, Rack: m.cfg.Rack, JMXPort: -1,
		Timestamp: m.cfg.Now().UnixMilli(), Features: m.cfg.Features}
	return r.Encode()
}

// BrokerID is the broker's id (generated when broker.id was -1).
func (m *Member) BrokerID() int32 { return m.id }

// ClusterID is the id in /cluster/id, for meta.properties.
func (m *Member) ClusterID() string { return m.clusterID }

// BrokerEpoch is the czxid of the current registration (KIP-380), 0 while
// the broker is not registered (between a session expiry and the new
// registration).
func (m *Member) BrokerEpoch() int64 { return m.brokerEpoch.Load() }

// ControllerID is the broker /controller names, -1 when there is none or
// this broker's session is gone.
func (m *Member) ControllerID() int32 { return m.controllerID.Load() }

// IsController tells whether this broker is the active controller.
func (m *Member) IsController() bool { return m.active.Load() }

// Admin gives the topic administration over the Member's session.
func (m *Member) Admin() *Admin { return NewAdmin(m.zk) }

// ZK is the Member's ZooKeeper session (for reads; the Member owns it).
func (m *Member) ZK() ZK { return m.zk }

// Close stops the Member: the event loop, the channel manager, the config
// listener, then the session (its ephemeral registration and /controller
// go at once, so the other brokers react without waiting for a timeout).
// Requests waiting for the controller fail with ErrMemberClosed.
func (m *Member) Close() {
	m.once.Do(func() {
		m.lifeMu.Lock()
		close(m.closed)
		m.lifeMu.Unlock()
		m.q.close()
		m.cm.close()
		m.zk.Close() // ends the session pump and the config listener's watch
		m.wg.Wait()
		m.notes.close()
		m.log.Info("left the cluster")
	})
}

// pumpSession feeds the session's events to the event loop.
func (m *Member) pumpSession() {
	defer m.wg.Done()
	for ev := range m.zk.Events() {
		m.q.push(driverEvent{kind: evSession, session: ev})
	}
}

// loop is the event loop: the only goroutine touching the driver.
func (m *Member) loop(d *driver) {
	defer m.wg.Done()
	for {
		ev, ok := m.q.pop()
		if !ok {
			return
		}
		d.handle(ev)
	}
}

// memberEnv is the Member as the driver's environment.
type memberEnv Member

func (e *memberEnv) m() *Member { return (*Member)(e) }

func (e *memberEnv) watch(ch <-chan WatchEvent, ref watchRef) {
	m := e.m()
	go func() {
		select {
		case ev, ok := <-ch:
			if ok {
				m.q.push(driverEvent{kind: evWatch, watch: ref, fired: ev})
			}
		case <-m.closed:
		}
	}()
}

func (e *memberEnv) after(d time.Duration, ev driverEvent) {
	m := e.m()
	time.AfterFunc(d, func() { m.q.push(ev) })
}

func (e *memberEnv) setBrokers(bs []Broker) { e.m().cm.setBrokers(bs) }
func (e *memberEnv) send(reqs []Request)    { e.m().cm.send(reqs) }
func (e *memberEnv) stopRequests()          { e.m().cm.stopAll() }

func (e *memberEnv) reply(id uint64, msg kmsg.Response) {
	m := e.m()
	m.wmu.Lock()
	ch := m.waiters[id]
	delete(m.waiters, id)
	m.wmu.Unlock()
	if ch != nil {
		ch <- msg // buffered: never blocks
	}
}

func (e *memberEnv) notify(n memberNote) {
	m := e.m()
	switch n.kind {
	case noteController:
		m.controllerID.Store(n.controller)
		if f := m.cfg.OnControllerChange; f != nil {
			id := n.controller
			m.notes.push(func() { f(id) })
		}
	case noteActive:
		m.active.Store(n.active)
	case noteRegistered:
		m.brokerEpoch.Store(n.epoch)
		if f := m.cfg.OnReregistered; f != nil {
			epoch := n.epoch
			m.notes.push(func() { f(epoch) })
		}
	case noteUnregistered:
		m.brokerEpoch.Store(0)
	}
}

// randomRand is a math/rand/v2 generator seeded from crypto/rand (the
// controller draws topic ids from it).
func randomRand() *rand.Rand {
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
}

// notifier runs callbacks one at a time, in order, on its own goroutine.
type notifier struct {
	mu   sync.Mutex
	fs   []func()
	wake chan struct{}
	done chan struct{}
	stop chan struct{}
}

func newNotifier() *notifier {
	n := &notifier{wake: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{})}
	go n.run()
	return n
}

func (n *notifier) push(f func()) {
	n.mu.Lock()
	n.fs = append(n.fs, f)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		n.mu.Lock()
		fs := n.fs
		n.fs = nil
		n.mu.Unlock()
		for _, f := range fs {
			f()
		}
		select {
		case <-n.wake:
		case <-n.stop:
			return
		}
	}
}

// close stops after the callback running (those queued are dropped).
func (n *notifier) close() {
	close(n.stop)
	<-n.done
}

// JoinCluster dials ZooKeeper (DialZK: ErrNoSession after
// zookeeper.connection.timeout.ms when none answers) and starts the Member
// on that session (mc.ZK is ignored); the session is closed if the start
// fails.
func JoinCluster(zc ZKConfig, mc MemberConfig) (*Member, error) {
	if zc.Logger == nil {
		zc.Logger = mc.Logger
	}
	zk, err := DialZK(zc)
	if err != nil {
		return nil, err
	}
	mc.ZK = zk
	m, err := StartMember(mc)
	if err != nil {
		zk.Close()
		return nil, err
	}
	return m, nil
}
