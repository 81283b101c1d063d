package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Znode paths, Kafka's (ZkData.scala), relative to the chroot.
const (
	ClusterPath                  = "/cluster"
	ClusterIDPath                = "/cluster/id"
	BrokersPath                  = "/brokers"
	BrokerIDsPath                = "/brokers/ids"
	BrokerSeqIDPath              = "/brokers/seqid"
	TopicsPath                   = "/brokers/topics"
	ControllerPath               = "/controller"
	ControllerEpochPath          = "/controller_epoch"
	ConfigPath                   = "/config"
	ConfigTopicsPath             = "/config/topics"
	ConfigChangesPath            = "/config/changes"
	AdminPath                    = "/admin"
	DeleteTopicsPath             = "/admin/delete_topics"
	ReassignPartitionsPath       = "/admin/reassign_partitions"
	PreferredReplicaElectionPath = "/admin/preferred_replica_election"
	IsrChangeNotificationPath    = "/isr_change_notification"
	LogDirEventNotificationPath  = "/log_dir_event_notification"
	ProducerIDBlockPath          = "/latest_producer_id_block"
	FeaturePath                  = "/feature"
	ConsumersPath                = "/consumers" // the old consumers' path, created as Kafka does

	// Prefixes of the sequential children (ZooKeeper appends 10 digits).
	ConfigChangePrefix = "config_change_"
	IsrChangePrefix    = "isr_change_"
	LogDirEventPrefix  = "log_dir_event_"
)

// Config entity types: the children of /config.
const (
	ConfigTypeTopic  = "topics"
	ConfigTypeClient = "clients"
	ConfigTypeUser   = "users"
	ConfigTypeBroker = "brokers"
	ConfigTypeIP     = "ips"
)

// ReservedBrokerMaxID is reserved.broker.max.id's default: generated broker
// ids start above it.
const ReservedBrokerMaxID = 1000

// PersistentPaths are the persistent znodes a broker creates at start when
// missing (Kafka's ZkData.PersistentZkPaths), parents before children.
var PersistentPaths = []string{
	ConsumersPath,
	BrokersPath,
	BrokerIDsPath,
	TopicsPath,
	ConfigPath,
	ConfigChangesPath,
	AdminPath,
	DeleteTopicsPath,
	BrokerSeqIDPath,
	IsrChangeNotificationPath,
	ProducerIDBlockPath,
	LogDirEventNotificationPath,
	ConfigTopicsPath,
	ConfigPath + "/" + ConfigTypeClient,
	ConfigPath + "/" + ConfigTypeUser,
	ConfigPath + "/" + ConfigTypeBroker,
	ConfigPath + "/" + ConfigTypeIP,
}

// BrokerPath is /brokers/ids/N, broker N's ephemeral registration.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.FormatInt(int64(id), 10) }

// TopicPath is /brokers/topics/T, topic T's replica assignment.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }

// TopicPartitionsPath is /brokers/topics/T/partitions.
func TopicPartitionsPath(topic string) string { return TopicPath(topic) + "/partitions" }

// PartitionPath is /brokers/topics/T/partitions/P.
func PartitionPath(topic string, partition int32) string {
	return TopicPartitionsPath(topic) + "/" + strconv.FormatInt(int64(partition), 10)
}

// PartitionStatePath is /brokers/topics/T/partitions/P/state, the partition's
// leader, ISR and epochs; its znode version is the partition epoch.
func PartitionStatePath(topic string, partition int32) string {
	return PartitionPath(topic, partition) + "/state"
}

// ConfigEntityPath is /config/<entityType>/<name>.
func ConfigEntityPath(entityType, name string) string {
	return ConfigPath + "/" + entityType + "/" + name
}

// TopicConfigPath is /config/topics/T, topic T's config overrides.
func TopicConfigPath(topic string) string { return ConfigEntityPath(ConfigTypeTopic, topic) }

// DeleteTopicPath is /admin/delete_topics/T, the request to delete T.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ConfigChangeCreatePath is the path to create a config change notification
// at (PersistentSequential).
func ConfigChangeCreatePath() string { return ConfigChangesPath + "/" + ConfigChangePrefix }

// IsrChangeCreatePath is the path to create an ISR change notification at
// (PersistentSequential).
func IsrChangeCreatePath() string { return IsrChangeNotificationPath + "/" + IsrChangePrefix }

// LogDirEventCreatePath is the path to create a log dir event notification at
// (PersistentSequential).
func LogDirEventCreatePath() string {
	return LogDirEventNotificationPath + "/" + LogDirEventPrefix
}

// ParseBrokerID parses a child name of /brokers/ids.
func ParseBrokerID(child string) (int32, error) {
	n, err := parseDecimal(child, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s/%s: not a broker id", ErrBadZnode, BrokerIDsPath, child)
	}
	return int32(n), nil
}

// ParsePartitionID parses a child name of /brokers/topics/T/partitions.
func ParsePartitionID(child string) (int32, error) {
	n, err := parseDecimal(child, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: partitions/%s: not a partition id", ErrBadZnode, child)
	}
	return int32(n), nil
}

// SequenceNumber parses the sequence number of a sequential child name made
// with prefix (e.g. "isr_change_0000000042" with IsrChangePrefix is 42).
func SequenceNumber(child, prefix string) (int64, error) {
	rest, ok := strings.CutPrefix(child, prefix)
	if !ok {
		return 0, fmt.Errorf("%w: %q: want prefix %q", ErrBadZnode, child, prefix)
	}
	n, err := parseDecimal(rest, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: no sequence number", ErrBadZnode, child)
	}
	return n, nil
}

// GeneratedBrokerID is the broker id a broker with broker.id=-1 takes: the
// version /brokers/seqid got from its unconditional write plus
// reserved.broker.max.id (Kafka: the first generated id is 1001).
func GeneratedBrokerID(seqIDVersion, reservedMax int32) int32 { return seqIDVersion + reservedMax }

// parseDecimal parses a non-negative decimal with no sign or spaces.
func parseDecimal(s string, bits int) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("not a decimal")
		}
	}
	return strconv.ParseInt(s, 10, bits)
}
