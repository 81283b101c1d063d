package cluster

import (
	"errors"
	"log/slog"
	"slices"
	"time"
)

// configListener follows /config/changes as Kafka's
// ZkNodeChangeNotificationListener does: notifications are processed in
// sequence order, each once (the last processed sequence number is
// remembered; at start every existing one is processed, as in Kafka), and
// those older than ConfigChangeExpiration are deleted. Age is counted from
// when this broker first listed a notification (Kafka reads the znode's
// ctime; the ZK interface has none), so a broker that starts late purges
// old notifications one expiration after its start. A malformed
// notification is logged and skipped.
type configListener struct {
	zk   ZK
	log  *slog.Logger
	now  func() time.Time
	last int64                // sequence number of the last notification processed, -1 for none
	seen map[string]time.Time // when each listed notification was first seen
	// topics gets the topics of the notifications processed, in order;
	// brokers the broker entity names (an id or <default>).
	topics  func([]string)
	brokers func([]string)
	// entities gets the other entities' paths below /config (users/U,
	// users/U/clients/C, clients/C...), in order; nil: dropped.
	entities func([]string)
}

// process handles the listed children of /config/changes; an error (a
// read failed) leaves the rest for the next call.
func (l *configListener) process(kids []string) error {
	type note struct {
		name string
		seq  int64
	}
	notes := make([]note, 0, len(kids))
	for _, k := range kids {
		seq, err := SequenceNumber(k, ConfigChangePrefix)
		if err != nil {
			continue // not a notification (Kafka ignores it too)
		}
		notes = append(notes, note{k, seq})
	}
	slices.SortFunc(notes, func(a, b note) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	var topics, brokers, entities []string
	var err error
	for _, n := range notes {
		if n.seq <= l.last {
			continue
		}
		p := ConfigChangesPath + "/" + n.name
		data, _, gerr := l.zk.Get(p)
		switch {
		case errors.Is(gerr, ErrNoNode):
		case gerr != nil:
			err = gerr
		default:
			cc, derr := DecodeConfigChange(p, data)
			switch {
			case derr != nil:
				l.log.Warn("skipping a malformed config change notification", "error", derr)
			case cc.EntityType == ConfigTypeTopic:
				if !slices.Contains(topics, cc.EntityName) {
					topics = append(topics, cc.EntityName)
				}
			case cc.EntityType == ConfigTypeBroker:
				if !slices.Contains(brokers, cc.EntityName) {
					brokers = append(brokers, cc.EntityName)
				}
			default:
				if p := cc.EntityPath(); !slices.Contains(entities, p) {
					entities = append(entities, p)
				}
			}
		}
		if err != nil {
			break
		}
		l.last = n.seq
	}
	if len(topics) > 0 {
		l.topics(topics)
	}
	if len(brokers) > 0 && l.brokers != nil {
		l.brokers(brokers)
	}
	if len(entities) > 0 && l.entities != nil {
		l.entities(entities)
	}
	l.purge(kids)
	return err
}

// purge deletes the notifications first seen more than
// ConfigChangeExpiration ago and forgets those no longer listed.
func (l *configListener) purge(kids []string) {
	now := l.now()
	listed := make(map[string]bool, len(kids))
	for _, k := range kids {
		listed[k] = true
		first, ok := l.seen[k]
		if !ok {
			l.seen[k] = now
			continue
		}
		if now.Sub(first) > ConfigChangeExpiration {
			err := l.zk.Delete(ConfigChangesPath+"/"+k, -1)
			if err == nil || errors.Is(err, ErrNoNode) {
				delete(l.seen, k)
				delete(listed, k)
			}
		}
	}
	for k := range l.seen {
		if !listed[k] {
			delete(l.seen, k)
		}
	}
}

// watchConfigChanges is the Member's config listener goroutine: list with
// a watch, process, wait for the watch; ZooKeeper errors back off and
// list again.
func (m *Member) watchConfigChanges() {
	defer m.wg.Done()
	l := &configListener{zk: m.zk, log: m.log, now: m.cfg.Now, last: -1, seen: map[string]time.Time{},
		topics: func(ts []string) {
			for _, t := range ts {
				m.q.push(driverEvent{kind: evTopicConfig, topic: t})
			}
			if f := m.cfg.OnTopicConfigChange; f != nil {
				m.notes.push(func() { f(ts) })
			}
		},
		brokers: func(bs []string) {
			if f := m.cfg.OnBrokerConfigChange; f != nil {
				m.notes.push(func() { f(bs) })
			}
		},
		entities: func(ps []string) {
			if f := m.cfg.OnEntityConfigChange; f != nil {
				m.notes.push(func() { f(ps) })
			}
		}}
	if f := m.cfg.OnBrokerConfigChange; f != nil {
		m.notes.push(func() { f(nil) })
	}
	backoff := 100 * time.Millisecond
	for {
		kids, _, ch, err := m.zk.ChildrenW(ConfigChangesPath)
		if errors.Is(err, ErrNoNode) {
			if _, err = m.zk.Create(ConfigChangesPath, nil, Persistent); err == nil || errors.Is(err, ErrNodeExists) {
				continue
			}
		}
		if err == nil {
			err = l.process(kids)
		}
		if errors.Is(err, ErrClosed) {
			return
		}
		if err != nil {
			m.log.Warn("config change notifications: retrying", "after", backoff, "error", err)
			select {
			case <-m.closed:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue // list again (a second watch on the path is harmless)
		}
		backoff = 100 * time.Millisecond
		select {
		case <-m.closed:
			return
		case <-ch:
		}
	}
}
