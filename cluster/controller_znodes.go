package cluster

// The controller's names for znodes.go's paths and codecs.

import "fmt"

const (
	ctrlBrokerIDsPath       = BrokerIDsPath
	ctrlTopicsPath          = TopicsPath
	ctrlControllerPath      = ControllerPath
	ctrlControllerEpochPath = ControllerEpochPath
	ctrlDeleteTopicsPath    = DeleteTopicsPath
	ctrlLogDirEventsPath    = LogDirEventNotificationPath
	ctrlTopicConfigsPath    = ConfigTopicsPath
)

func ctrlTopicPath(t string) string                        { return TopicPath(t) }
func ctrlPartitionsPath(t string) string                   { return TopicPartitionsPath(t) }
func ctrlPartitionPath(t string, p int32) string           { return PartitionPath(t, p) }
func ctrlStatePath(t string, p int32) string               { return PartitionStatePath(t, p) }
func ctrlTopicConfigPath(t string) string                  { return TopicConfigPath(t) }
func ctrlDeleteTopicPath(t string) string                  { return DeleteTopicPath(t) }
func ctrlLogDirEventPath(node string) string               { return LogDirEventNotificationPath + "/" + node }
func ctrlBrokerPath(id int32) string                       { return BrokerPath(id) }
func appendStateJSON(dst []byte, s *PartitionState) []byte { return s.AppendJSON(dst) }

// appendAssignmentJSON appends /brokers/topics/T's JSON (version 3, with
// topic_id) for replicas[p], partition p's replicas.
func appendAssignmentJSON(dst []byte, id [16]byte, replicas [][]int32) []byte {
	a := TopicAssignment{TopicID: id, Partitions: make(map[int32][]int32, len(replicas))}
	for p, rs := range replicas {
		a.Partitions[int32(p)] = rs
	}
	return append(dst, a.Encode()...)
}

// encodeTopicID is Kafka's Uuid.toString.
func encodeTopicID(id [16]byte) string { return UUIDString(id) }

// decodeAssignment reads /brokers/topics/T (versions 1-3) as the controller
// needs it: partitions numbered 0..n-1, each with a sensible replica list.
func decodeAssignment(topic string, data []byte) (id [16]byte, replicas [][]int32, err error) {
	a, err := DecodeTopicAssignment(topic, data)
	if err != nil {
		return id, nil, err
	}
	replicas = make([][]int32, len(a.Partitions))
	for p, rs := range a.Partitions {
		if p < 0 || int(p) >= len(replicas) {
			return id, nil, fmt.Errorf("%w: %s: partition %d of %d", ErrMalformedZnode, TopicPath(topic), p, len(replicas))
		}
		replicas[p] = rs
	}
	if err := checkReplicaLists(replicas); err != nil {
		return id, nil, fmt.Errorf("%w: %s: %v", ErrMalformedZnode, TopicPath(topic), err)
	}
	return a.TopicID, replicas, nil
}

// decodeRegistration reads /brokers/ids/N (versions 1-5) as the controller
// knows a broker; its Epoch is the znode's czxid, for the caller to set.
func decodeRegistration(id int32, data []byte) (Broker, error) {
	r, err := DecodeBrokerRegistration(id, data)
	if err != nil {
		return Broker{}, fmt.Errorf("broker %d registration: %w", id, err)
	}
	return Broker{ID: id, Endpoints: r.Endpoints, Rack: r.Rack}, nil
}
