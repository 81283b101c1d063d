package cluster

import (
	"strconv"
	"strings"
)

// ControllerInfo is /controller (ephemeral): which broker is the controller.
//
//	{"version":1,"brokerid":1,"timestamp":"1700000000000"}
//
// Kafka 3.4+ writes version 2 with "kraftControllerEpoch" (-1 for a ZooKeeper
// controller; KIP-866); strata writes version 1 and reads both.
type ControllerInfo struct {
	Version              int32
	BrokerID             int32
	Timestamp            int64 // Unix ms; 0 when absent or unreadable
	KRaftControllerEpoch int32 // -1 when absent
}

// EncodeController returns /controller's JSON (version 1).
func EncodeController(brokerID int32, timestampMs int64) []byte {
	w := &jsonWriter{b: make([]byte, 0, 64)}
	w.open('{')
	w.int("version", 1)
	w.int("brokerid", int64(brokerID))
	w.decimal("timestamp", timestampMs)
	w.close('}')
	return w.b
}

// DecodeController decodes /controller; brokerid is required.
func DecodeController(data []byte) (ControllerInfo, error) {
	o := parseObj(ControllerPath, data)
	c := ControllerInfo{KRaftControllerEpoch: -1}
	c.BrokerID, _ = o.int32("brokerid", true)
	c.Version, _ = o.int32("version", false)
	if e, ok := o.int32("kraftControllerEpoch", false); ok {
		c.KRaftControllerEpoch = e
	}
	c.Timestamp = o.lenientTimestamp("timestamp")
	if o.err != nil {
		return ControllerInfo{}, o.err
	}
	return c, nil
}

// EncodeControllerEpoch is /controller_epoch: the epoch as decimal text.
func EncodeControllerEpoch(epoch int32) []byte {
	return strconv.AppendInt(nil, int64(epoch), 10)
}

// DecodeControllerEpoch reads /controller_epoch: a non-negative decimal
// (surrounding whitespace, as a hand edit may leave, is ignored).
func DecodeControllerEpoch(data []byte) (int32, error) {
	s := strings.TrimSpace(string(data))
	n, err := parseDecimal(s, 32)
	if err != nil {
		return 0, badZnode(ControllerEpochPath, "want a decimal epoch, have %s", clip(data))
	}
	return int32(n), nil
}
