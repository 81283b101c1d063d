package cluster

import (
	"errors"
	"fmt"
	"slices"
)

// Watches become events: every fired watch is one driverEvent; its handler
// reads the whole listing again (setting the watch again) and steps the
// Controller with it. A handler leaves the read to the next event when it
// is of the same class, so a burst of watches costs one read.
//
// Listings depend on each other: the Controller removes a deletion request
// for a topic it does not know, and ignores a log dir failure of a broker
// it does not know. Watch events reach the queue in no particular order
// (production forwards each watch on a goroutine of its own), so reading
// the deletions reads the topics first, and reading the log dir
// notifications reads the brokers first. A failed read marks its class
// dirty, and every later read first redoes the dirty ones, in the order
// brokers, topics, deletions, log dirs.

// arm records a watch set on path and hands its channel to the
// environment.
func (d *driver) arm(c readClass, path string, ch <-chan WatchEvent) {
	d.token++
	d.armed[path] = d.token
	d.env.watch(ch, watchRef{class: c, path: path, token: d.token})
}

func (d *driver) isArmed(path string) bool { _, ok := d.armed[path]; return ok }

// onWatch takes a fired watch: it is spent (unless a newer one replaced
// it), and the listing it guards is read again.
func (d *driver) onWatch(ev driverEvent) {
	if tok, ok := d.armed[ev.watch.path]; ok && tok == ev.watch.token {
		delete(d.armed, ev.watch.path)
	}
	if ev.watch.class == readController {
		d.onControllerWatch()
		return
	}
	if d.state != stActive || d.q.nextIs(ev.watch.class) {
		return
	}
	d.reread(ev.watch.class)
}

// children lists path, setting a child watch unless one is set.
func (d *driver) children(c readClass, path string) ([]string, error) {
	if d.isArmed(path) {
		kids, _, err := d.zk.Children(path)
		return kids, err
	}
	kids, _, ch, err := d.zk.ChildrenW(path)
	if err != nil {
		return nil, err
	}
	d.arm(c, path, ch)
	return kids, nil
}

// get reads path, setting a data watch unless one is set.
func (d *driver) get(c readClass, path string) ([]byte, Stat, error) {
	if d.isArmed(path) {
		return d.zk.Get(path)
	}
	data, st, ch, err := d.zk.GetW(path)
	if err != nil {
		return nil, Stat{}, err
	}
	d.arm(c, path, ch)
	return data, st, nil
}

// armControllerWatches sets the active controller's watches (Kafka's
// onControllerFailover registers the same handlers): children of
// /brokers/ids, /brokers/topics, /admin/delete_topics and
// /log_dir_event_notification, data of every registration and
// assignment, and the existence of /admin/reassign_partitions.
func (d *driver) armControllerWatches() error {
	for _, l := range []struct {
		c    readClass
		path string
		data func(string) string
	}{
		{readBrokers, BrokerIDsPath, func(k string) string { return BrokerIDsPath + "/" + k }},
		{readTopics, TopicsPath, TopicPath},
		{readDeletions, DeleteTopicsPath, nil},
		{readLogDirs, LogDirEventNotificationPath, nil},
	} {
		kids, err := d.children(l.c, l.path)
		if err != nil && !errors.Is(err, ErrNoNode) {
			return err
		}
		if l.data == nil {
			continue
		}
		for _, k := range kids {
			if _, _, err := d.get(l.c, l.data(k)); err != nil && !errors.Is(err, ErrNoNode) {
				return err
			}
		}
	}
	_, err := d.readReassign()
	return err
}

// readReassign reads /admin/reassign_partitions, setting an exists watch
// (which fires on its creation, change or deletion) unless one is set.
func (d *driver) readReassign() (Event, error) {
	if !d.isArmed(ReassignPartitionsPath) {
		ok, _, ch, err := d.zk.ExistsW(ReassignPartitionsPath)
		if err != nil {
			return nil, err
		}
		d.arm(readReassign, ReassignPartitionsPath, ch)
		if !ok {
			return ReassignZnode{}, nil
		}
	}
	data, _, err := d.zk.Get(ReassignPartitionsPath)
	if errors.Is(err, ErrNoNode) {
		return ReassignZnode{}, nil
	}
	if err != nil {
		return nil, err
	}
	ps, err := DecodeReassignPartitions(data)
	return ReassignZnode{Exists: true, Partitions: ps, Err: err}, nil
}

// readOrder is the order dirty listings are read in.
var readOrder = [...]readClass{readBrokers, readTopics, readDeletions, readLogDirs, readReassign}

// reread reads listing c, and first every listing whose read failed, in
// readOrder, stepping the Controller with each; a failed read leaves its
// class dirty and is tried again later (unless the client is closed).
func (d *driver) reread(c readClass) {
	d.dirty[c] = true
	switch c {
	case readDeletions:
		d.dirty[readTopics] = true
	case readLogDirs:
		d.dirty[readBrokers] = true
	case readReassign:
		d.dirty[readTopics] = true
	}
	for _, k := range readOrder {
		if !d.dirty[k] {
			continue
		}
		ev, err := d.read(k)
		if err != nil {
			if !sessionGone(err) {
				d.retry(evRead, driverEvent{kind: evRead, read: k}, err)
			}
			return
		}
		d.dirty[k] = false
		d.ok(evRead)
		d.step(ev)
		if d.state != stActive {
			return
		}
	}
}

// read reads listing c as the event the Controller takes.
func (d *driver) read(c readClass) (Event, error) {
	switch c {
	case readBrokers:
		bs, err := d.readBrokers()
		if err != nil {
			return nil, err
		}
		d.env.setBrokers(bs)
		return BrokersChanged{Brokers: bs}, nil
	case readTopics:
		ts, err := d.readTopics()
		if err != nil {
			return nil, err
		}
		return TopicsChanged{Topics: ts}, nil
	case readDeletions:
		names, err := d.children(readDeletions, DeleteTopicsPath)
		if err != nil {
			return nil, err
		}
		slices.Sort(names)
		return DeletionsRequested{Topics: names}, nil
	case readReassign:
		return d.readReassign()
	default:
		evs, err := d.readLogDirs()
		if err != nil {
			return nil, err
		}
		return LogDirEvents{Events: evs}, nil
	}
}

// readBrokers reads every registration; a malformed one is logged and
// left out (the Controller then sees that broker as dead).
func (d *driver) readBrokers() ([]Broker, error) {
	names, err := d.children(readBrokers, BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	var out []Broker
	for _, name := range sortNumeric(names) {
		id, err := ParseBrokerID(name)
		if err != nil {
			d.log.Warn("skipping a znode under /brokers/ids", "error", err)
			continue
		}
		data, st, err := d.get(readBrokers, BrokerPath(id))
		if errors.Is(err, ErrNoNode) {
			continue // gone since listed: the child watch fires
		}
		if err != nil {
			return nil, err
		}
		b, err := decodeRegistration(id, data)
		if err != nil {
			d.log.Warn("skipping a malformed broker registration", "error", err)
			continue
		}
		b.Epoch = st.Czxid
		out = append(out, b)
	}
	return out, nil
}

// readTopics reads every topic's assignment and config overrides. A
// malformed assignment or config is logged and the topic is given as it
// last decoded (or left out when it never did, as the snapshot does), so
// the Controller neither forgets it nor acts on garbage.
func (d *driver) readTopics() ([]Topic, error) {
	names, err := d.children(readTopics, TopicsPath)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]Topic, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		data, st, err := d.get(readTopics, TopicPath(name))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		seen[name] = true
		id, replicas, err := decodeAssignment(name, data)
		if err != nil {
			if last, ok := d.lastGood[name]; ok {
				d.log.Warn("malformed topic assignment: keeping the last one read", "topic", name, "error", err)
				out = append(out, last)
			} else {
				d.log.Warn("malformed topic assignment: topic skipped", "topic", name, "error", err)
			}
			continue
		}
		t := Topic{Name: name, ID: id, Replicas: replicas, Version: st.Version}
		cfg, _, err := d.zk.Get(TopicConfigPath(name))
		switch {
		case errors.Is(err, ErrNoNode):
		case err != nil:
			return nil, err
		default:
			if t.Configs, err = DecodeEntityConfig(TopicConfigPath(name), cfg); err != nil {
				if last, ok := d.lastGood[name]; ok {
					d.log.Warn("malformed topic config: keeping the last one read", "topic", name, "error", err)
					out = append(out, last)
				} else {
					d.log.Warn("malformed topic config: topic skipped", "topic", name, "error", err)
				}
				continue
			}
		}
		if d.lastGood != nil {
			d.lastGood[name] = t
		}
		out = append(out, t)
	}
	for name := range d.lastGood {
		if !seen[name] {
			delete(d.lastGood, name)
		}
	}
	return out, nil
}

// readLogDirs reads the log dir failure notifications; a malformed one is
// given with broker -1, so the Controller deletes it and does nothing
// else.
func (d *driver) readLogDirs() ([]LogDirEvent, error) {
	names, err := d.children(readLogDirs, LogDirEventNotificationPath)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []LogDirEvent
	for _, name := range names {
		p := LogDirEventNotificationPath + "/" + name
		data, _, err := d.zk.Get(p)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := DecodeLogDirEvent(p, data)
		if err != nil {
			d.log.Warn("malformed log dir event notification: deleting it", "error", err)
			b = -1
		}
		out = append(out, LogDirEvent{Node: name, Broker: b})
	}
	return out, nil
}

// topicConfig steps a topic's new overrides after a config change
// notification named it.
func (d *driver) topicConfig(topic string) {
	if d.state != stActive {
		return
	}
	data, _, err := d.zk.Get(TopicConfigPath(topic))
	var cfg map[string]string
	switch {
	case errors.Is(err, ErrNoNode):
		cfg = map[string]string{}
	case err != nil:
		if !sessionGone(err) {
			d.retry(evTopicConfig, driverEvent{kind: evTopicConfig, topic: topic}, err)
		}
		return
	default:
		if cfg, err = DecodeEntityConfig(TopicConfigPath(topic), data); err != nil {
			d.log.Warn("malformed topic config: ignored", "topic", topic, "error", err)
			return
		}
	}
	d.ok(evTopicConfig)
	d.step(TopicConfigChanged{Topic: topic, Configs: cfg})
}

func hexID(id int64) string { return fmt.Sprintf("0x%x", id) }
