package cluster

// Znode paths and JSON the controller and its loader need.
//
// TODO(znodes.go): these are stand-ins until znodes.go (paths and Kafka's
// JSON types) lands; fold them into it and delete this file.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

const (
	ctrlBrokerIDsPath       = "/brokers/ids"
	ctrlTopicsPath          = "/brokers/topics"
	ctrlControllerPath      = "/controller"
	ctrlControllerEpochPath = "/controller_epoch"
	ctrlDeleteTopicsPath    = "/admin/delete_topics"
	ctrlLogDirEventsPath    = "/log_dir_event_notification"
	ctrlTopicConfigsPath    = "/config/topics"
)

func ctrlTopicPath(t string) string      { return ctrlTopicsPath + "/" + t }
func ctrlPartitionsPath(t string) string { return ctrlTopicsPath + "/" + t + "/partitions" }
func ctrlPartitionPath(t string, p int32) string {
	return ctrlPartitionsPath(t) + "/" + strconv.Itoa(int(p))
}
func ctrlStatePath(t string, p int32) string { return ctrlPartitionPath(t, p) + "/state" }
func ctrlTopicConfigPath(t string) string    { return ctrlTopicConfigsPath + "/" + t }
func ctrlDeleteTopicPath(t string) string    { return ctrlDeleteTopicsPath + "/" + t }
func ctrlLogDirEventPath(node string) string { return ctrlLogDirEventsPath + "/" + node }
func ctrlBrokerPath(id int32) string         { return ctrlBrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// appendStateJSON appends a partition state znode's JSON (Kafka's
// TopicPartitionStateZNode, version 1).
func appendStateJSON(dst []byte, s *PartitionState) []byte {
	dst = append(dst, `{"controller_epoch":`...)
	dst = strconv.AppendInt(dst, int64(s.ControllerEpoch), 10)
	dst = append(dst, `,"leader":`...)
	dst = strconv.AppendInt(dst, int64(s.Leader), 10)
	dst = append(dst, `,"version":1,"leader_epoch":`...)
	dst = strconv.AppendInt(dst, int64(s.LeaderEpoch), 10)
	dst = append(dst, `,"isr":`...)
	dst = appendIntsJSON(dst, s.ISR)
	return append(dst, '}')
}

func appendIntsJSON(dst []byte, ids []int32) []byte {
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(id), 10)
	}
	return append(dst, ']')
}

// appendAssignmentJSON appends /brokers/topics/T's JSON, version 3 (Kafka
// 2.8+: with topic_id).
func appendAssignmentJSON(dst []byte, id [16]byte, replicas [][]int32) []byte {
	dst = append(dst, `{"version":3,"partitions":{`...)
	for p, rs := range replicas {
		if p > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, int64(p), 10)
		dst = append(dst, `":`...)
		dst = appendIntsJSON(dst, rs)
	}
	dst = append(dst, `},"adding_replicas":{},"removing_replicas":{},"topic_id":"`...)
	dst = append(dst, encodeTopicID(id)...)
	return append(dst, `"}`...)
}

// encodeTopicID is Kafka's Uuid.toString: URL-safe base64 without padding.
func encodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func decodeTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("%w: topic id %q", ErrMalformedZnode, s)
	}
	copy(id[:], b)
	return id, nil
}

func decodeState(data []byte) (PartitionState, error) {
	var j struct {
		ControllerEpoch *int32  `json:"controller_epoch"`
		Leader          *int32  `json:"leader"`
		LeaderEpoch     *int32  `json:"leader_epoch"`
		ISR             []int32 `json:"isr"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return PartitionState{}, fmt.Errorf("%w: partition state: %v", ErrMalformedZnode, err)
	}
	if j.ControllerEpoch == nil || j.Leader == nil || j.LeaderEpoch == nil || j.ISR == nil {
		return PartitionState{}, fmt.Errorf("%w: partition state %s lacks a field", ErrMalformedZnode, data)
	}
	return PartitionState{Leader: *j.Leader, LeaderEpoch: *j.LeaderEpoch, ISR: j.ISR, ControllerEpoch: *j.ControllerEpoch}, nil
}

// decodeAssignment reads /brokers/topics/T (versions 1-3): partitions
// must be numbered 0..n-1.
func decodeAssignment(data []byte) (id [16]byte, replicas [][]int32, err error) {
	var j struct {
		Partitions map[string][]int32 `json:"partitions"`
		TopicID    *string            `json:"topic_id"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return id, nil, fmt.Errorf("%w: topic assignment: %v", ErrMalformedZnode, err)
	}
	if j.TopicID != nil {
		if id, err = decodeTopicID(*j.TopicID); err != nil {
			return id, nil, err
		}
	}
	replicas = make([][]int32, len(j.Partitions))
	for k, rs := range j.Partitions {
		p, err := strconv.Atoi(k)
		if err != nil || p < 0 || p >= len(replicas) || replicas[p] != nil {
			return id, nil, fmt.Errorf("%w: topic assignment partition %q (%d partitions)", ErrMalformedZnode, k, len(replicas))
		}
		if rs == nil {
			rs = []int32{}
		}
		replicas[p] = rs
	}
	if err := checkReplicaLists(replicas); err != nil {
		return id, nil, fmt.Errorf("%w: %v", ErrMalformedZnode, err)
	}
	return id, replicas, nil
}

// decodeRegistration reads /brokers/ids/N (versions 1-5).
func decodeRegistration(id int32, data []byte) (Broker, error) {
	var j struct {
		Endpoints   []string          `json:"endpoints"`
		ProtocolMap map[string]string `json:"listener_security_protocol_map"`
		Rack        *string           `json:"rack"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return Broker{}, fmt.Errorf("%w: broker %d registration: %v", ErrMalformedZnode, id, err)
	}
	b := Broker{ID: id}
	if j.Rack != nil {
		b.Rack = *j.Rack
	}
	for _, e := range j.Endpoints {
		listener, hostport, ok := strings.Cut(e, "://")
		i := strings.LastIndexByte(hostport, ':')
		if !ok || i < 0 {
			return Broker{}, fmt.Errorf("%w: broker %d endpoint %q", ErrMalformedZnode, id, e)
		}
		port, err := strconv.ParseInt(hostport[i+1:], 10, 32)
		if err != nil {
			return Broker{}, fmt.Errorf("%w: broker %d endpoint %q", ErrMalformedZnode, id, e)
		}
		proto := listener
		if p, ok := j.ProtocolMap[listener]; ok {
			proto = p
		}
		sp, ok := securityProtocols[proto]
		if !ok {
			return Broker{}, fmt.Errorf("%w: broker %d endpoint %q: security protocol %q", ErrMalformedZnode, id, e, proto)
		}
		b.Endpoints = append(b.Endpoints, Endpoint{Listener: listener, Host: strings.Trim(hostport[:i], "[]"), Port: int32(port), SecurityProtocol: sp})
	}
	return b, nil
}

var securityProtocols = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

func decodeTopicConfig(data []byte) (map[string]string, error) {
	var j struct {
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: topic config: %v", ErrMalformedZnode, err)
	}
	if j.Config == nil {
		j.Config = map[string]string{}
	}
	return j.Config, nil
}

func decodeControllerID(data []byte) (int32, error) {
	var j struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &j); err != nil || j.BrokerID == nil {
		return 0, fmt.Errorf("%w: /controller %q", ErrMalformedZnode, data)
	}
	return *j.BrokerID, nil
}

func decodeControllerEpoch(data []byte) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: /controller_epoch %q", ErrMalformedZnode, data)
	}
	return int32(n), nil
}
