package cluster

import (
	"errors"
	"fmt"
)

// elect takes part in the controller election (Kafka's
// KafkaController.elect): if /controller is absent, create it (ephemeral)
// and move /controller_epoch from the version read to epoch+1 in one multi.
// When the multi fails (NodeExists, BadVersion) or its outcome is unknown,
// whoever /controller names won; it is us only when our session owns it.
func (d *driver) elect() {
	if d.session == 0 || d.state != stIdle {
		return
	}
	if d.zk.SessionID() != d.session {
		return // the session changed under us: its events (queued) register again, then elect
	}
	_, ours, exists, err := d.readController()
	if err != nil {
		d.electFailed(err)
		return
	}
	if ours {
		d.log.Info("this broker's session holds /controller: taking over")
		d.activate()
		return
	}
	if exists {
		d.ok(evElect)
		return
	}
	epoch, version, err := d.readControllerEpoch()
	if err != nil {
		d.electFailed(err)
		return
	}
	_, err = d.zk.Multi(
		Op{Kind: OpCreate, Path: ControllerPath, Data: EncodeController(d.id, d.now().UnixMilli()), Mode: Ephemeral},
		Op{Kind: OpSet, Path: ControllerEpochPath, Data: EncodeControllerEpoch(epoch + 1), Version: version})
	if err == nil {
		d.ok(evElect)
		d.setController(d.id)
		d.log.Info("elected controller", "controller_epoch", epoch+1)
		d.activate()
		return
	}
	if sessionGone(err) {
		return
	}
	// NodeExists, BadVersion, or an outcome unknown: read who won.
	_, ours, exists, rerr := d.readController()
	switch {
	case rerr != nil:
		d.electFailed(rerr)
	case ours:
		d.ok(evElect)
		d.log.Info("elected controller (the answer was lost)", "controller_epoch", epoch+1)
		d.activate()
	case !exists:
		d.electFailed(err) // nobody won: try again
	default:
		d.ok(evElect)
	}
}

func (d *driver) electFailed(err error) {
	if sessionGone(err) {
		return
	}
	d.retry(evElect, driverEvent{kind: evElect}, err)
}

// readController reads /controller, leaving an exists watch on it (every
// broker keeps one: Kafka's ControllerChangeHandler). ours: it names this
// broker and is owned by our registration's session.
func (d *driver) readController() (id int32, ours, exists bool, err error) {
	if !d.isArmed(ControllerPath) {
		_, _, ch, err := d.zk.ExistsW(ControllerPath)
		if err != nil {
			return -1, false, false, err
		}
		d.arm(readController, ControllerPath, ch)
	}
	data, st, err := d.zk.Get(ControllerPath)
	if errors.Is(err, ErrNoNode) {
		d.setController(-1)
		return -1, false, false, nil
	}
	if err != nil {
		return -1, false, false, err
	}
	ci, err := DecodeController(data)
	if err != nil {
		// Only its owner's session ending removes it; until then nobody
		// can be elected.
		d.log.Error("malformed /controller: no election until its session ends", "error", err,
			"owner", hexID(st.EphemeralOwner))
		d.setController(-1)
		return -1, false, true, nil
	}
	d.setController(ci.BrokerID)
	ours = ci.BrokerID == d.id && st.EphemeralOwner != 0 && st.EphemeralOwner == d.session
	return ci.BrokerID, ours, true, nil
}

// readControllerEpoch reads /controller_epoch and its version, creating it
// as 0 when missing (Kafka's maybeCreateControllerEpochZNode).
func (d *driver) readControllerEpoch() (epoch, version int32, err error) {
	for i := 0; i < 3; i++ {
		data, st, err := d.zk.Get(ControllerEpochPath)
		if err == nil {
			epoch, err := DecodeControllerEpoch(data)
			return epoch, st.Version, err
		}
		if !errors.Is(err, ErrNoNode) {
			return 0, 0, err
		}
		_, err = d.zk.Create(ControllerEpochPath, EncodeControllerEpoch(0), Persistent)
		if err == nil {
			return 0, 0, nil
		}
		if !errors.Is(err, ErrNodeExists) {
			return 0, 0, err
		}
	}
	return 0, 0, fmt.Errorf("%w: %s keeps vanishing", ErrConnectionLoss, ControllerEpochPath)
}

// onControllerWatch follows /controller (Kafka's ControllerChange and
// Reelect): an active controller it no longer names resigns; when it is
// gone, a new election.
func (d *driver) onControllerWatch() {
	if d.session == 0 {
		return
	}
	_, ours, exists, err := d.readController()
	if err != nil {
		if !sessionGone(err) {
			d.retry(evRead, driverEvent{kind: evRead, read: readController}, err)
		}
		return
	}
	switch {
	case d.state != stIdle && !ours:
		d.resign(fmt.Sprintf("/controller now names broker %d", d.controller))
	case d.state == stIdle && ours:
		d.activate()
	case !exists:
		d.elect()
	}
}

// activate takes over (Kafka's onControllerFailover): the watches first,
// so that what changes during the load reaches the Controller as events
// after it, then the snapshot and Activate.
func (d *driver) activate() {
	d.gen++
	d.state = stReloading
	if err := d.armControllerWatches(); err != nil {
		d.activationFailed(err)
		return
	}
	snap, err := LoadSnapshot(d.zk, d.id)
	if err != nil {
		d.activationFailed(err)
		return
	}
	d.ok(evReload)
	d.dirty = map[readClass]bool{}
	d.lastGood = make(map[string]Topic, len(snap.Topics))
	for _, t := range snap.Topics {
		d.lastGood[t.Name] = t.Topic
	}
	d.env.setBrokers(snap.Brokers)
	d.state = stActive
	d.log.Info("controller activated", "controller_epoch", snap.ControllerEpoch,
		"brokers", len(snap.Brokers), "topics", len(snap.Topics))
	d.env.notify(memberNote{kind: noteActive, active: true})
	gen := d.gen
	d.step(Activate{Snapshot: snap})
	if d.state == stActive && d.gen == gen && d.rebalance > 0 {
		d.env.after(d.rebalance, driverEvent{kind: evTick, gen: gen})
	}
}

func (d *driver) activationFailed(err error) {
	switch {
	case errors.Is(err, ErrNotController):
		d.log.Info("not the controller after all", "reason", err)
		d.state = stIdle
		d.gen++
		d.q.push(driverEvent{kind: evElect})
	case sessionGone(err):
		// the session's end resigns (its event is queued)
	default:
		d.retry(evReload, driverEvent{kind: evReload, gen: d.gen}, err)
	}
}

// startReload: a write failed without proof of fencing; the Controller is
// inactive until a fresh snapshot.
func (d *driver) startReload() {
	if d.state == stIdle {
		return
	}
	d.state = stReloading
	d.gen++
	d.retry(evReload, driverEvent{kind: evReload, gen: d.gen}, errors.New("a controller write failed: reloading from zookeeper"))
}

// resign makes an active controller stop.
func (d *driver) resign(why string) {
	if d.state == stIdle {
		return
	}
	if d.state == stReloading {
		d.ctrl.Step(Resign{Reason: why}) // inactive already: nothing to say
		d.afterResign()
		return
	}
	d.step(Resign{Reason: why})
}

// afterResign is Kafka's onControllerResignation and triggerControllerMove:
// the queues to brokers go, /controller is deleted if our session still
// holds it, and the broker watches /controller again.
func (d *driver) afterResign() {
	if d.state == stIdle {
		return
	}
	d.state = stIdle
	d.gen++
	d.lastGood = nil
	d.env.stopRequests()
	d.env.notify(memberNote{kind: noteActive, active: false})
	d.log.Info("controller resigned")
	if d.session == 0 {
		return
	}
	if data, st, err := d.zk.Get(ControllerPath); err == nil && st.EphemeralOwner == d.session {
		if ci, err := DecodeController(data); err == nil && ci.BrokerID == d.id {
			if err := d.zk.Delete(ControllerPath, st.Version); err != nil && !errors.Is(err, ErrNoNode) {
				d.log.Warn("deleting /controller after resigning", "error", err)
			}
		}
	}
	d.q.push(driverEvent{kind: evElect})
}
