package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Admin is topic administration through ZooKeeper (Kafka's AdminZkClient):
// what the broker's CreateTopics, DeleteTopics, CreatePartitions and
// AlterConfigs handlers and `strata topics --zookeeper` write. The
// controller picks the changes up from its watches. Refusals wrap
// ErrTopicExists, ErrUnknownTopic, ErrInvalidTopic, ErrInvalidPartitions or
// ErrInvalidReplicaAssignment, which ErrorCode maps to Kafka's codes;
// ZooKeeper errors are returned as they are (the caller may retry
// ErrConnectionLoss).
type Admin struct{ zk ZK }

// NewAdmin is the administration over zk.
func NewAdmin(zk ZK) *Admin { return &Admin{zk: zk} }

// MaxTopicNameLength is Kafka's limit on a topic name.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's Topic.validate: 1 to 249 ASCII
// letters, digits, '.', '_' and '-', not "." or "..". Errors wrap
// ErrInvalidTopic.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is illegal, it can't be empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be \".\" or \"..\"", ErrInvalidTopic)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: topic name is illegal, it can't be longer than %d characters, topic name: %s",
			ErrInvalidTopic, MaxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
				ErrInvalidTopic, name)
		}
	}
	return nil
}

// collisionName is Kafka's Topic.unifyCollisionChars: '.' and '_' collide
// in metric names.
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopic creates a topic (Kafka's createTopicWithAssignment):
// assignment[p] is partition p's replicas (preferred leader first);
// configs are its overrides; a zero topicID is drawn at random. It writes
// /config/topics/T and /brokers/topics/T in one multi that also proves
// /admin/delete_topics/T absent (it creates and deletes it), so a creation
// never races a deletion of the same name. Refusals: an illegal name or
// one colliding with an existing topic after '.' -> '_' (ErrInvalidTopic),
// an existing topic or one still marked for deletion (ErrTopicExists), a
// bad assignment (ErrInvalidReplicaAssignment). It returns the topic id.
func (a *Admin) CreateTopic(name string, assignment [][]int32, configs map[string]string, topicID [16]byte) ([16]byte, error) {
	if err := ValidateTopicName(name); err != nil {
		return topicID, err
	}
	if err := ValidateAssignment(assignment, func(id int32) bool { return id >= 0 }); err != nil {
		return topicID, fmt.Errorf("topic %s: %w", name, err)
	}
	if topicID == ([16]byte{}) {
		u, err := NewUUID(nil)
		if err != nil {
			return topicID, err
		}
		topicID = u
	}
	ta := TopicAssignment{TopicID: topicID, Partitions: make(map[int32][]int32, len(assignment))}
	for p, rs := range assignment {
		ta.Partitions[int32(p)] = slices.Clone(rs)
	}
	if configs == nil {
		configs = map[string]string{}
	}
	for attempt := 0; ; attempt++ {
		if err := a.checkCreate(name); err != nil {
			return topicID, err
		}
		cfgOp, err := a.setOrCreateOp(TopicConfigPath(name), EncodeEntityConfig(configs))
		if err != nil {
			return topicID, err
		}
		res, err := a.zk.Multi(
			Op{Kind: OpCreate, Path: DeleteTopicPath(name), Mode: Persistent},
			Op{Kind: OpDelete, Path: DeleteTopicPath(name), Version: -1},
			cfgOp,
			Op{Kind: OpCreate, Path: TopicPath(name), Data: ta.Encode(), Mode: Persistent})
		switch {
		case err == nil:
			return topicID, nil
		case len(res) == 4 && errors.Is(res[0].Err, ErrNodeExists):
			return topicID, fmt.Errorf("%w: topic %q is marked for deletion", ErrTopicExists, name)
		case len(res) == 4 && errors.Is(res[3].Err, ErrNodeExists):
			return topicID, fmt.Errorf("%w: topic %q already exists", ErrTopicExists, name)
		case len(res) == 4 && res[2].Err != nil && attempt < 5:
			continue // the config znode changed under us: again
		case errors.Is(err, ErrConnectionLoss):
			// applied or not: it is ours if the assignment carries our id
			if data, _, gerr := a.zk.Get(TopicPath(name)); gerr == nil {
				if got, derr := DecodeTopicAssignment(name, data); derr == nil && got.TopicID == topicID {
					return topicID, nil
				}
			}
			return topicID, err
		default:
			return topicID, err
		}
	}
}

// checkCreate is Kafka's validateTopicCreate: not marked for deletion, not
// existing, no collision.
func (a *Admin) checkCreate(name string) error {
	if ok, _, err := a.zk.Exists(DeleteTopicPath(name)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: topic %q is marked for deletion", ErrTopicExists, name)
	}
	if ok, _, err := a.zk.Exists(TopicPath(name)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: topic %q already exists", ErrTopicExists, name)
	}
	if strings.ContainsAny(name, "._") {
		all, err := a.ListTopics()
		if err != nil {
			return err
		}
		var hit []string
		for _, t := range all {
			if t != name && collisionName(t) == collisionName(name) {
				hit = append(hit, t)
			}
		}
		if len(hit) > 0 {
			return fmt.Errorf("%w: topic %q collides with existing topics: %s", ErrInvalidTopic, name, strings.Join(hit, ", "))
		}
	}
	return nil
}

// setOrCreateOp is the op writing data to path: a set at the version
// read, or a create when it is missing.
func (a *Admin) setOrCreateOp(path string, data []byte) (Op, error) {
	ok, st, err := a.zk.Exists(path)
	if err != nil {
		return Op{}, err
	}
	if ok {
		return Op{Kind: OpSet, Path: path, Data: data, Version: st.Version}, nil
	}
	return Op{Kind: OpCreate, Path: path, Data: data, Mode: Persistent}, nil
}

// DeleteTopic asks the controller to delete a topic (Kafka's deleteTopic):
// it creates /admin/delete_topics/T. A topic already marked is no error;
// an unknown one is ErrUnknownTopic.
func (a *Admin) DeleteTopic(name string) error {
	ok, _, err := a.zk.Exists(TopicPath(name))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: topic %q does not exist", ErrUnknownTopic, name)
	}
	_, err = a.zk.Create(DeleteTopicPath(name), nil, Persistent)
	if err == nil || errors.Is(err, ErrNodeExists) {
		return nil
	}
	return err
}

// ChangeTopicConfig replaces a topic's overrides (Kafka's
// changeTopicConfig): it writes /config/topics/T, then a config change
// notification (version 2, "topics/T") every broker processes.
func (a *Admin) ChangeTopicConfig(name string, configs map[string]string) error {
	ok, _, err := a.zk.Exists(TopicPath(name))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: topic %q does not exist", ErrUnknownTopic, name)
	}
	return a.ChangeEntityConfig(ConfigTypeTopic, name, configs)
}

// TopicConfig reads a topic's overrides (empty when it has none).
func (a *Admin) TopicConfig(name string) (map[string]string, error) {
	data, _, err := a.zk.Get(TopicConfigPath(name))
	if errors.Is(err, ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeEntityConfig(TopicConfigPath(name), data)
}

// ListTopics lists /brokers/topics, sorted.
func (a *Admin) ListTopics() ([]string, error) {
	names, err := children(a.zk, TopicsPath)
	slices.Sort(names)
	return names, err
}

// TopicsMarkedForDeletion lists /admin/delete_topics, sorted.
func (a *Admin) TopicsMarkedForDeletion() ([]string, error) {
	names, err := children(a.zk, DeleteTopicsPath)
	slices.Sort(names)
	return names, err
}

// ReadAssignment reads /brokers/topics/T and its version; ErrUnknownTopic
// when it does not exist, ErrBadZnode when it does not decode.
func (a *Admin) ReadAssignment(name string) (TopicAssignment, int32, error) {
	data, st, err := a.zk.Get(TopicPath(name))
	if errors.Is(err, ErrNoNode) {
		return TopicAssignment{}, 0, fmt.Errorf("%w: topic %q does not exist", ErrUnknownTopic, name)
	}
	if err != nil {
		return TopicAssignment{}, 0, err
	}
	ta, err := DecodeTopicAssignment(name, data)
	return ta, st.Version, err
}

// Replicas is an assignment's partitions in order; an error when they are
// not numbered 0..n-1 or a replica list is unusable.
func (ta *TopicAssignment) Replicas() ([][]int32, error) {
	if err := ta.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadZnode, err)
	}
	out := make([][]int32, len(ta.Partitions))
	for p, rs := range ta.Partitions {
		out[p] = rs
	}
	return out, nil
}

// PartitionState reads a partition's state znode with its version; nil
// when the partition has none yet.
func (a *Admin) PartitionState(name string, partition int32) (*PartitionState, error) {
	data, st, err := a.zk.Get(PartitionStatePath(name, partition))
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := DecodePartitionState(name, partition, data)
	if err != nil {
		return nil, err
	}
	s.Version = st.Version
	return &s, nil
}

// LiveBrokers reads every registration under /brokers/ids (epoch =
// czxid), sorted by id; malformed ones are left out and described in
// skipped.
func (a *Admin) LiveBrokers() (brokers []Broker, skipped []string, err error) {
	ids, err := children(a.zk, BrokerIDsPath)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range sortNumeric(ids) {
		id, err := ParseBrokerID(name)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		data, st, err := a.zk.Get(BrokerPath(id))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		b, err := decodeRegistration(id, data)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		b.Epoch = st.Czxid
		brokers = append(brokers, b)
	}
	return brokers, skipped, nil
}
