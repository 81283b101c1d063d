package cluster

import (
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller driver: one event loop per broker (Kafka's
// ControllerEventManager thread) that owns the broker's registration after
// start, its part in the controller election and, while elected, the
// Controller. Its inputs are driverEvents; its outputs go to a driverEnv
// (timers, the channel manager, replies, notifications), so the same code
// runs on a goroutine in production (member.go) and step by step in the
// model test.

type evKind int

const (
	evSession     evKind = iota + 1 // a session state change
	evWatch                         // a watch fired
	evElect                         // try to become the controller
	evRegister                      // register /brokers/ids/N again (after an expiry)
	evReload                        // load a snapshot and activate (after Ready.Reload or a failed activation)
	evRead                          // read a listing again (after a failed read)
	evControl                       // a controller Event from outside: a broker's request, a RequestResult
	evTick                          // the auto leader rebalance timer
	evTopicConfig                   // /config/topics/T changed (a config change notification)
)

// readClass names a listing the driver reads (and watches).
type readClass int

const (
	readNone readClass = iota
	readController
	readBrokers
	readTopics
	readDeletions
	readLogDirs
	readReassign // /admin/reassign_partitions (an exists or data watch)
)

// watchRef identifies one watch the driver set: a later watch on the same
// path has another token, so a late event of an old one (lost with its
// session) is not mistaken for it.
type watchRef struct {
	class readClass
	path  string
	token uint64
}

// driverEvent is one input of the driver.
type driverEvent struct {
	kind    evKind
	session SessionEvent // evSession
	watch   watchRef     // evWatch
	fired   WatchEvent   // evWatch
	read    readClass    // evRead
	ctrl    Event        // evControl
	topic   string       // evTopicConfig
	gen     uint64       // timers: the generation they were set in
}

func (e driverEvent) class() readClass {
	switch e.kind {
	case evWatch:
		return e.watch.class
	case evRead:
		return e.read
	}
	return readNone
}

// driverEnv is what the driver hands out.
type driverEnv interface {
	// watch delivers evWatch{ref} when ch fires.
	watch(ch <-chan WatchEvent, ref watchRef)
	// after delivers ev after d.
	after(d time.Duration, ev driverEvent)
	// setBrokers gives the channel manager the live brokers: a queue per
	// broker (a new one when its epoch or endpoint changed), none for
	// those not listed.
	setBrokers(bs []Broker)
	// send queues control requests, per broker in order.
	send(reqs []Request)
	// stopRequests drops every queue (the controller resigned).
	stopRequests()
	// reply answers the request event with that ID.
	reply(id uint64, msg kmsg.Response)
	// notify tells the member what changed.
	notify(n memberNote)
}

type noteKind int

const (
	noteController   noteKind = iota + 1 // /controller names another broker (or none: -1)
	noteActive                           // this broker became or stopped being the active controller
	noteRegistered                       // registered again after a session expiry, new broker epoch
	noteUnregistered                     // the session expired: no registration until noteRegistered
)

type memberNote struct {
	kind       noteKind
	controller int32
	active     bool
	epoch      int64
}

type driverState int

const (
	stIdle      driverState = iota // not the controller
	stActive                       // the Controller is active
	stReloading                    // elected, the Controller waits for a snapshot
)

// driverConfig is what the driver needs from the member.
type driverConfig struct {
	zk      ZK
	id      int32
	regData func() []byte // the registration JSON (its timestamp is now)
	ctrl    *ControllerOptions
	now     func() time.Time
	log     *slog.Logger
	// rebalance is leader.imbalance.check.interval.seconds when
	// auto.leader.rebalance.enable, else 0.
	rebalance time.Duration
	env       driverEnv
	q         *eventQueue
}

// driver is the event loop's state. Only the loop touches it.
type driver struct {
	driverConfig
	ctrl  *Controller
	state driverState
	// gen changes at every activation and resignation: timers of an
	// earlier one are dropped.
	gen uint64
	// session is the session our registration belongs to, 0 when the
	// registration is gone (the session expired).
	session    int64
	epoch      int64
	controller int32 // the broker /controller names, -1: none or unknown
	armed      map[string]uint64
	token      uint64
	lastGood   map[string]Topic // per topic, the last assignment and configs that decoded
	dirty      map[readClass]bool
	backoff    map[evKind]time.Duration
}

func newDriver(cfg driverConfig, session, epoch int64) *driver {
	return &driver{driverConfig: cfg, ctrl: NewController(cfg.id, cfg.ctrl), session: session, epoch: epoch,
		controller: -1, armed: map[string]uint64{}, dirty: map[readClass]bool{}, backoff: map[evKind]time.Duration{}}
}

// handle runs one event.
func (d *driver) handle(ev driverEvent) {
	switch ev.kind {
	case evSession:
		d.onSession(ev.session)
	case evWatch:
		d.onWatch(ev)
	case evElect:
		d.elect()
	case evRegister:
		d.register()
	case evReload:
		if d.state == stReloading && ev.gen == d.gen {
			d.activate()
		}
	case evRead:
		if ev.read == readController {
			d.onControllerWatch()
		} else if d.state == stActive && ev.gen == d.gen && !d.q.nextIs(ev.read) {
			d.reread(ev.read)
		}
	case evControl:
		d.step(ev.ctrl)
	case evTick:
		if d.state == stActive && ev.gen == d.gen {
			d.step(RebalanceTick{})
			if d.state == stActive && ev.gen == d.gen {
				d.env.after(d.rebalance, driverEvent{kind: evTick, gen: d.gen})
			}
		}
	case evTopicConfig:
		d.topicConfig(ev.topic)
	}
}

// step feeds the Controller and carries out its Ready.
func (d *driver) step(ev Event) {
	elected, began := d.ctrl.offlineElected, time.Now()
	d.ctrl.Step(ev)
	d.process()
	if d.ctrl.offlineElected != elected && d.ctrl.opts.OnElectionTime != nil {
		d.ctrl.opts.OnElectionTime(time.Since(began))
	}
}

// process carries out Ready until the Controller has nothing more to do
// (the contract in the package doc): replies and requests at once, write
// batches one at a time, each result stepped before the next, none after
// a failure; then resignation or reload.
func (d *driver) process() {
	for {
		rd := d.ctrl.Ready()
		if rd.Empty() {
			return
		}
		for _, l := range rd.Log {
			d.log.Info(l, "component", "controller")
		}
		for _, r := range rd.Replies {
			d.env.reply(r.ID, r.Msg)
		}
		if len(rd.Requests) > 0 {
			d.env.send(rd.Requests)
		}
		for _, wb := range rd.Writes {
			res, err := d.zk.Multi(wb.Ops...)
			d.ctrl.Step(WriteResult{Batch: wb.ID, Results: res, Err: err})
			if err != nil {
				break
			}
		}
		switch {
		case rd.Resigned:
			d.afterResign()
		case rd.Reload:
			d.startReload()
		}
	}
}

// onSession follows the session: an expiry loses the registration, every
// watch and any controllership; a new session registers again.
func (d *driver) onSession(s SessionEvent) {
	switch s.State {
	case SessionDisconnected:
		d.log.Info("zookeeper disconnected: serving on, reconnecting", "session", hexID(s.SessionID))
	case SessionExpired:
		d.expired("zookeeper session expired")
	case SessionConnected:
		if d.session != 0 && s.SessionID != d.session {
			d.expired("zookeeper session replaced")
		}
		if d.session == 0 {
			d.register()
		}
	}
}

func (d *driver) expired(why string) {
	if d.session == 0 {
		return
	}
	d.log.Warn(why+": registration and controllership lost until a new session", "session", hexID(d.session))
	d.session = 0
	d.armed = map[string]uint64{}
	d.resign(why)
	d.setController(-1)
	d.env.notify(memberNote{kind: noteUnregistered})
}

// register creates /brokers/ids/N again in the new session (Kafka's
// RegisterBrokerAndReelect), then takes part in the election.
func (d *driver) register() {
	if d.session != 0 {
		return
	}
	epoch, sid, err := registerBroker(d.zk, d.id, d.regData(), time.Time{})
	if err != nil {
		if !sessionGone(err) {
			d.retry(evRegister, driverEvent{kind: evRegister}, err)
		}
		return
	}
	d.ok(evRegister)
	d.session, d.epoch = sid, epoch
	d.log.Info("registered in zookeeper", "broker_epoch", epoch, "session", hexID(sid))
	d.env.notify(memberNote{kind: noteRegistered, epoch: epoch})
	d.elect()
}

// retry schedules ev after a growing backoff (100 ms to 2 s) and logs why.
func (d *driver) retry(k evKind, ev driverEvent, why error) {
	b := d.backoff[k]
	if b == 0 {
		b = 100 * time.Millisecond
	} else {
		b = min(2*b, 2*time.Second)
	}
	d.backoff[k] = b
	if ev.gen == 0 {
		ev.gen = d.gen
	}
	d.log.Warn("zookeeper: retrying", "what", k.String(), "after", b, "error", why)
	d.env.after(b, ev)
}

func (d *driver) ok(k evKind) { delete(d.backoff, k) }

func (k evKind) String() string {
	switch k {
	case evElect:
		return "controller election"
	case evRegister:
		return "broker registration"
	case evReload:
		return "controller reload"
	case evRead:
		return "controller read"
	case evTopicConfig:
		return "topic config read"
	}
	return "event"
}

func (d *driver) setController(id int32) {
	if id == d.controller {
		return
	}
	d.controller = id
	d.env.notify(memberNote{kind: noteController, controller: id})
}

// sessionGone tells whether err means the client is closed: nothing to
// retry. (ErrSessionExpired is retried like a lost connection: the call
// that was in flight at an expiry fails with it, possibly after the
// driver already took the new session's events; the retry's handler
// checks the state it needs.)
func sessionGone(err error) bool { return errors.Is(err, ErrClosed) }
