package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// LoadSnapshot reads, through zk, what a controller activates with
// (Kafka's initializeControllerContext): /controller, which must name
// brokerID and (when zk has a session id) be owned by zk's session, else
// ErrNotController; /controller_epoch and its version; every broker
// registration with its czxid; every topic's assignment, config overrides
// and partition state znodes; the children of /admin/delete_topics and
// /log_dir_event_notification.
//
// Reads are not one atomic view: the driver sets its watches
// (/brokers/ids, /brokers/topics, /admin/delete_topics,
// /log_dir_event_notification, /controller) before loading, so a change
// made during the load fires a watch and reaches the controller as an
// event after the activation. A malformed broker registration skips that
// broker; a malformed assignment, config or state skips the topic; each is
// named in Snapshot.Skipped. ZooKeeper errors are returned as they are.
func LoadSnapshot(zk ZK, brokerID int32) (*Snapshot, error) {
	data, st, err := zk.Get(ctrlControllerPath)
	if errors.Is(err, ErrNoNode) {
		return nil, fmt.Errorf("%w: /controller does not exist", ErrNotController)
	}
	if err != nil {
		return nil, err
	}
	ci, err := DecodeController(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotController, err)
	}
	id := ci.BrokerID
	if sid := zk.SessionID(); id != brokerID || (sid != 0 && st.EphemeralOwner != sid) {
		return nil, fmt.Errorf("%w: /controller names broker %d (session %#x)", ErrNotController, id, st.EphemeralOwner)
	}
	s := &Snapshot{ControllerID: id}
	data, st, err = zk.Get(ctrlControllerEpochPath)
	if err != nil {
		return nil, err
	}
	if s.ControllerEpoch, err = DecodeControllerEpoch(data); err != nil {
		return nil, err
	}
	s.EpochVersion = st.Version

	ids, err := children(zk, ctrlBrokerIDsPath)
	if err != nil {
		return nil, err
	}
	for _, name := range sortNumeric(ids) {
		n, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			s.Skipped = append(s.Skipped, fmt.Sprintf("broker registration %q: not a broker id", name))
			continue
		}
		data, st, err := zk.Get(ctrlBrokerPath(int32(n)))
		if errors.Is(err, ErrNoNode) {
			continue // gone since listed: its watch fires
		}
		if err != nil {
			return nil, err
		}
		b, err := decodeRegistration(int32(n), data)
		if err != nil {
			s.Skipped = append(s.Skipped, err.Error())
			continue
		}
		b.Epoch = st.Czxid
		s.Brokers = append(s.Brokers, b)
	}

	names, err := children(zk, ctrlTopicsPath)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	for _, name := range names {
		ts, skip, err := loadTopic(zk, name)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			s.Skipped = append(s.Skipped, skip)
			continue
		}
		if ts != nil {
			s.Topics = append(s.Topics, *ts)
		}
	}
	if s.DeleteTopics, err = children(zk, ctrlDeleteTopicsPath); err != nil {
		return nil, err
	}
	slices.Sort(s.DeleteTopics)
	if s.LogDirEvents, err = children(zk, ctrlLogDirEventsPath); err != nil {
		return nil, err
	}
	slices.Sort(s.LogDirEvents)
	data, _, err = zk.Get(ReassignPartitionsPath)
	switch {
	case errors.Is(err, ErrNoNode):
	case err != nil:
		return nil, err
	default:
		s.Reassign.Exists = true
		s.Reassign.Partitions, s.Reassign.Err = DecodeReassignPartitions(data)
	}
	return s, nil
}

// loadTopic reads one topic; (nil, "", nil) when it vanished meanwhile,
// a reason when it is skipped.
func loadTopic(zk ZK, name string) (*TopicSnapshot, string, error) {
	data, st, err := zk.Get(ctrlTopicPath(name))
	if errors.Is(err, ErrNoNode) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	id, replicas, err := decodeAssignment(name, data)
	if err != nil {
		return nil, fmt.Sprintf("topic %s: %v", name, err), nil
	}
	ts := &TopicSnapshot{Topic: Topic{Name: name, ID: id, Replicas: replicas, Version: st.Version}}
	if a, err := DecodeTopicAssignment(name, data); err == nil {
		ts.Adding, ts.Removing = a.Adding, a.Removing
	}
	data, _, err = zk.Get(ctrlTopicConfigPath(name))
	switch {
	case errors.Is(err, ErrNoNode):
	case err != nil:
		return nil, "", err
	default:
		if ts.Configs, err = DecodeEntityConfig(ctrlTopicConfigPath(name), data); err != nil {
			return nil, fmt.Sprintf("topic %s: %v", name, err), nil
		}
	}
	parts, _, err := zk.Children(ctrlPartitionsPath(name))
	if errors.Is(err, ErrNoNode) {
		return ts, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	ts.PartitionsNode = true
	ts.States = make([]*PartitionState, len(replicas))
	ts.PartitionNodes = make([]bool, len(replicas))
	for _, pn := range sortNumeric(parts) {
		p, err := strconv.Atoi(pn)
		if err != nil || p < 0 || p >= len(replicas) || strconv.Itoa(p) != pn {
			// Not a partition of the assignment: deleted with the topic.
			extra, err := subtree(zk, ctrlPartitionsPath(name)+"/"+pn)
			if err != nil {
				return nil, "", err
			}
			ts.ExtraNodes = append(ts.ExtraNodes, extra...)
			continue
		}
		ts.PartitionNodes[p] = true
		data, st, err := zk.Get(ctrlStatePath(name, int32(p)))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		state, err := DecodePartitionState(name, int32(p), data)
		if err != nil {
			return nil, fmt.Sprintf("topic %s partition %d: %v", name, p, err), nil
		}
		state.Version = st.Version
		ts.States[p] = &state
	}
	return ts, "", nil
}

// subtree lists path and the znodes beneath it, children before parents.
func subtree(zk ZK, path string) ([]string, error) {
	kids, err := children(zk, path)
	if err != nil {
		return nil, err
	}
	slices.Sort(kids)
	var out []string
	for _, k := range kids {
		sub, err := subtree(zk, path+"/"+k)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return append(out, path), nil
}

// children lists a znode's children; none when it does not exist.
func children(zk ZK, path string) ([]string, error) {
	kids, _, err := zk.Children(path)
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// sortNumeric sorts decimal names by value, others after them by name.
func sortNumeric(names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		x, errA := strconv.ParseInt(a, 10, 64)
		y, errB := strconv.ParseInt(b, 10, 64)
		switch {
		case errA == nil && errB == nil:
			if x != y {
				if x < y {
					return -1
				}
				return 1
			}
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		if a < b {
			return -1
		} else if a > b {
			return 1
		}
		return 0
	})
	return out
}
