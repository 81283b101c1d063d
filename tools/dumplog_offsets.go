package tools

import (
	"encoding/binary"
	"encoding/json"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// --offsets-decoder: records of the __consumer_offsets topic, decoded with
// franz-go's kmsg types. The shape follows Kafka's dump: the key is
// {"type":"<key version>","data":{...}} and the value
// {"version":"<value version>","data":{...}}; a null value (an offset or
// group deleted) stays null. Key versions 0 and 1 are offset commits, 2 group
// metadata; other keys (the new group coordinator's records) are not decoded
// and print raw in --data-encoding.

type offsetCommitKeyJSON struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type offsetCommitValueJSON struct {
	Offset          int64  `json:"offset"`
	LeaderEpoch     *int32 `json:"leaderEpoch,omitempty"`
	Metadata        string `json:"metadata"`
	CommitTimestamp int64  `json:"commitTimestamp"`
	ExpireTimestamp *int64 `json:"expireTimestamp,omitempty"`
}

type groupMemberJSON struct {
	MemberID         string  `json:"memberId"`
	GroupInstanceID  *string `json:"groupInstanceId"`
	ClientID         string  `json:"clientId"`
	ClientHost       string  `json:"clientHost"`
	RebalanceTimeout int32   `json:"rebalanceTimeout"`
	SessionTimeout   int32   `json:"sessionTimeout"`
	Subscription     []byte  `json:"subscription"`
	Assignment       []byte  `json:"assignment"`
}

type groupMetadataValueJSON struct {
	ProtocolType          string            `json:"protocolType"`
	Generation            int32             `json:"generation"`
	Protocol              *string           `json:"protocol"`
	Leader                *string           `json:"leader"`
	CurrentStateTimestamp int64             `json:"currentStateTimestamp"`
	Members               []groupMemberJSON `json:"members"`
}

// offsetsKeyVersion is the version of a __consumer_offsets key, -1 if none.
func offsetsKeyVersion(key []byte) int16 {
	if len(key) < 2 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(key))
}

// decodeOffsetsRecord returns the key and value as JSON (value nil for a
// null value), or ok false when they are not a known __consumer_offsets
// record.
func decodeOffsetsRecord(key, value []byte) (k, v []byte, ok bool) {
	wrap := func(label string, version int16, data any) []byte {
		b, err := json.Marshal(data)
		if err != nil {
			return nil
		}
		out := append([]byte(`{"`+label+`":"`), strconv.Itoa(int(version))...)
		out = append(out, `","data":`...)
		out = append(out, b...)
		return append(out, '}')
	}
	switch ver := offsetsKeyVersion(key); ver {
	case 0, 1:
		var ck kmsg.OffsetCommitKey
		if ck.ReadFrom(key) != nil {
			return nil, nil, false
		}
		k = wrap("type", ver, offsetCommitKeyJSON{ck.Group, ck.Topic, ck.Partition})
		if value == nil {
			return k, nil, true
		}
		var cv kmsg.OffsetCommitValue
		if cv.ReadFrom(value) != nil {
			return nil, nil, false
		}
		j := offsetCommitValueJSON{Offset: cv.Offset, Metadata: cv.Metadata, CommitTimestamp: cv.CommitTimestamp}
		if cv.Version >= 3 {
			j.LeaderEpoch = &cv.LeaderEpoch
		}
		if cv.Version == 1 {
			j.ExpireTimestamp = &cv.ExpireTimestamp
		}
		return k, wrap("version", cv.Version, j), true
	case 2:
		var gk kmsg.GroupMetadataKey
		if gk.ReadFrom(key) != nil {
			return nil, nil, false
		}
		k = wrap("type", ver, map[string]string{"group": gk.Group})
		if value == nil {
			return k, nil, true
		}
		var gv kmsg.GroupMetadataValue
		if gv.ReadFrom(value) != nil {
			return nil, nil, false
		}
		j := groupMetadataValueJSON{ProtocolType: gv.ProtocolType, Generation: gv.Generation, Protocol: gv.Protocol,
			Leader: gv.Leader, CurrentStateTimestamp: gv.CurrentStateTimestamp, Members: []groupMemberJSON{}}
		for _, m := range gv.Members {
			j.Members = append(j.Members, groupMemberJSON{m.MemberID, m.InstanceID, m.ClientID, m.ClientHost,
				m.RebalanceTimeoutMillis, m.SessionTimeoutMillis, m.Subscription, m.Assignment})
		}
		return k, wrap("version", gv.Version, j), true
	}
	return nil, nil, false
}
