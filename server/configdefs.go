package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// configDef is one topic-level config: its broker-level synonym (the default
// when the topic does not override it), type, documentation and check.
type configDef struct {
	name    string
	synonym string // broker config supplying the default
	typ     kmsg.ConfigType
	doc     string
	check   func(v string) error
}

func checkLong(min, max int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if n < min || n > max {
			return fmt.Errorf("%d not in [%d, %d]", n, min, max)
		}
		return nil
	}
}

func checkBool(v string) error {
	if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
		return fmt.Errorf("want true or false")
	}
	return nil
}

func checkRatio(v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("want a number in [0, 1]")
	}
	return nil
}

// topicConfigDefs are the topic configs strata applies, sorted by name.
var topicConfigDefs = []configDef{
	{"cleanup.policy", "log.cleanup.policy", kmsg.ConfigTypeList, "delete, compact or both (comma separated)",
		func(v string) error { _, err := parseCleanupPolicy(v); return err }},
	{"compression.gzip.level", "compression.gzip.level", kmsg.ConfigTypeInt, "gzip level of batches the broker recompresses: 1-9, or -1 for the codec's default", levelDefs[record.CodecGzip].check},
	{"compression.lz4.level", "compression.lz4.level", kmsg.ConfigTypeInt, "lz4 level of batches the broker recompresses: 1-17 (9, the default, is lz4's fast compressor; 10-17 compress as 9)", levelDefs[record.CodecLZ4].check},
	{"compression.type", "compression.type", kmsg.ConfigTypeString, "codec batches are stored with: producer (as sent), uncompressed, gzip, snappy, lz4 or zstd", checkCompressionType},
	{"compression.zstd.level", "compression.zstd.level", kmsg.ConfigTypeInt, "zstd level of batches the broker recompresses: -131072 to 22", levelDefs[record.CodecZstd].check},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms", kmsg.ConfigTypeLong, "how long tombstones are kept on compacted topics", checkLong(0, math.MaxInt64)},
	{"flush.messages", "log.flush.interval.messages", kmsg.ConfigTypeLong, "fsync after this many messages", checkLong(1, math.MaxInt64)},
	{"flush.ms", "log.flush.interval.ms", kmsg.ConfigTypeLong, "fsync when the oldest unflushed append is this old", checkLong(1, math.MaxInt64)},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", kmsg.ConfigTypeLong, "longest a record stays uncompacted", checkLong(1, math.MaxInt64)},
	{"max.message.bytes", "message.max.bytes", kmsg.ConfigTypeInt, "largest record batch a produce may append", checkLong(0, math.MaxInt32)},
	{"message.timestamp.type", "log.message.timestamp.type", kmsg.ConfigTypeString, "CreateTime or LogAppendTime", checkTimestampType},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", kmsg.ConfigTypeDouble, "dirty ratio that makes a log eligible for cleaning", checkRatio},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", kmsg.ConfigTypeLong, "shortest a record stays uncompacted", checkLong(0, math.MaxInt64)},
	{"preallocate", "log.preallocate", kmsg.ConfigTypeBoolean, "fallocate each new segment file ahead of the writer", checkBool},
	{"retention.bytes", "log.retention.bytes", kmsg.ConfigTypeLong, "largest a partition grows before old segments are deleted (-1: no limit)", checkLong(math.MinInt64, math.MaxInt64)},
	{"retention.ms", "log.retention.ms", kmsg.ConfigTypeLong, "how long segments are kept (-1: forever)", checkLong(-1, math.MaxInt64)},
	{"segment.bytes", "log.segment.bytes", kmsg.ConfigTypeInt, "segment file size", checkLong(14, math.MaxInt32)},
	{"segment.ms", "log.roll.ms", kmsg.ConfigTypeLong, "roll a segment after this long", checkLong(1, math.MaxInt64)},
}

func topicConfigDef(name string) *configDef {
	for i := range topicConfigDefs {
		if topicConfigDefs[i].name == name {
			return &topicConfigDefs[i]
		}
	}
	return nil
}

// brokerConfigDef is one broker config DescribeConfigs reports.
type brokerConfigDef struct {
	name  string
	typ   kmsg.ConfigType
	value func(c *Config) string
}

func i64(n int64) string   { return strconv.FormatInt(n, 10) }
func f64(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// brokerConfigDefs are the broker's (static) configs, sorted by name.
var brokerConfigDefs = []brokerConfigDef{
	{"auto.create.topics.enable", kmsg.ConfigTypeBoolean, func(c *Config) string { return strconv.FormatBool(c.AutoCreateTopics) }},
	{"compression.gzip.level", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.GzipLevel)) }},
	{"compression.lz4.level", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.LZ4Level)) }},
	{"compression.type", kmsg.ConfigTypeString, func(c *Config) string { return c.CompressionType }},
	{"compression.zstd.level", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.ZstdLevel)) }},
	{"default.replication.factor", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.DefaultReplication)) }},
	{"delete.topic.enable", kmsg.ConfigTypeBoolean, func(c *Config) string { return strconv.FormatBool(c.DeleteTopicEnable) }},
	{"file.delete.delay.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.FileDeleteDelayMs) }},
	{"group.initial.rebalance.delay.ms", kmsg.ConfigTypeInt, func(c *Config) string { return i64(c.GroupInitialRebalanceDelayMs) }},
	{"group.max.session.timeout.ms", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.GroupMaxSessionTimeoutMs)) }},
	{"group.max.size", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.GroupMaxSize)) }},
	{"group.min.session.timeout.ms", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.GroupMinSessionTimeoutMs)) }},
	{"log.cleaner.backoff.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.CleanerBackoffMs) }},
	{"log.cleaner.dedupe.buffer.size", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.CleanerDedupeBufferBytes) }},
	{"log.cleaner.delete.retention.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.DeleteRetentionMs) }},
	{"log.cleaner.enable", kmsg.ConfigTypeBoolean, func(c *Config) string { return strconv.FormatBool(c.CleanerEnable) }},
	{"log.cleaner.io.buffer.load.factor", kmsg.ConfigTypeDouble, func(c *Config) string { return f64(c.CleanerLoadFactor) }},
	{"log.cleaner.io.max.bytes.per.second", kmsg.ConfigTypeDouble, func(c *Config) string {
		if c.CleanerIOMaxBytesPerSec <= 0 {
			return f64(math.MaxFloat64)
		}
		return f64(c.CleanerIOMaxBytesPerSec)
	}},
	{"log.cleaner.max.compaction.lag.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.MaxCompactionLagMs) }},
	{"log.cleaner.min.cleanable.ratio", kmsg.ConfigTypeDouble, func(c *Config) string { return f64(c.MinCleanableRatio) }},
	{"log.cleaner.min.compaction.lag.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.MinCompactionLagMs) }},
	{"log.cleaner.threads", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.CleanerThreads)) }},
	{"log.cleanup.policy", kmsg.ConfigTypeList, func(c *Config) string { return c.CleanupPolicy }},
	{"log.dirs", kmsg.ConfigTypeString, func(c *Config) string { return strings.Join(c.LogDirs, ",") }},
	{"log.flush.interval.messages", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.FlushMessages) }},
	{"log.flush.interval.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.FlushMs) }},
	{"log.flush.offset.checkpoint.interval.ms", kmsg.ConfigTypeInt, func(c *Config) string { return i64(c.CheckpointIntervalMs) }},
	{"log.message.timestamp.type", kmsg.ConfigTypeString, func(c *Config) string { return c.TimestampType }},
	{"log.preallocate", kmsg.ConfigTypeBoolean, func(c *Config) string { return strconv.FormatBool(c.Preallocate) }},
	{"log.retention.bytes", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.RetentionBytes) }},
	{"log.retention.check.interval.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.RetentionCheckMs) }},
	{"log.retention.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.RetentionMs) }},
	{"log.roll.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.SegmentMs) }},
	{"log.segment.bytes", kmsg.ConfigTypeInt, func(c *Config) string { return i64(c.SegmentBytes) }},
	{"message.max.bytes", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.MessageMaxBytes)) }},
	{"node.id", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.NodeID)) }},
	{"num.partitions", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.NumPartitions)) }},
	{"num.recovery.threads.per.data.dir", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.RecoveryThreads)) }},
	{"offset.metadata.max.bytes", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.OffsetMetadataMaxBytes)) }},
	{"offsets.retention.check.interval.ms", kmsg.ConfigTypeLong, func(c *Config) string { return i64(c.OffsetsRetentionCheckMs) }},
	{"offsets.retention.minutes", kmsg.ConfigTypeInt, func(c *Config) string { return i64(c.OffsetsRetentionMs / 60000) }},
	{"offsets.topic.num.partitions", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.OffsetsTopicNumPartitions)) }},
	{"offsets.topic.segment.bytes", kmsg.ConfigTypeInt, func(c *Config) string { return i64(c.OffsetsTopicSegmentBytes) }},
	{"socket.request.max.bytes", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.SocketRequestMaxBytes)) }},
	{"strata.max.partitions.per.topic", kmsg.ConfigTypeInt, func(c *Config) string { return i64(int64(c.MaxPartitionsPerTopic)) }},
}

func brokerConfig(name string) *brokerConfigDef {
	for i := range brokerConfigDefs {
		if brokerConfigDefs[i].name == name {
			return &brokerConfigDefs[i]
		}
	}
	return nil
}

// brokerValue is a broker config's value and source: STATIC_BROKER_CONFIG
// when it differs from the built-in default, else DEFAULT_CONFIG.
func brokerValue(c *Config, name string) (string, kmsg.ConfigSource) {
	d := brokerConfig(name)
	if d == nil {
		return "", kmsg.ConfigSourceUnknown
	}
	v := d.value(c)
	if v != d.value(DefaultConfig()) {
		return v, kmsg.ConfigSourceStaticBrokerConfig
	}
	return v, kmsg.ConfigSourceDefaultConfig
}

// storedTopicConfigs are Kafka topic configs strata accepts and keeps with
// the topic (clients set them) but does not apply.
var storedTopicConfigs = map[string]bool{
	"file.delete.delay.ms": true, "follower.replication.throttled.replicas": true, "index.interval.bytes": true,
	"leader.replication.throttled.replicas": true, "local.retention.bytes": true, "local.retention.ms": true,
	"message.downconversion.enable": true, "message.format.version": true,
	"message.timestamp.after.max.ms": true, "message.timestamp.before.max.ms": true,
	"message.timestamp.difference.max.ms": true, "min.insync.replicas": true,
	"remote.storage.enable": true, "segment.index.bytes": true, "segment.jitter.ms": true,
	"unclean.leader.election.enable": true,
}

// knownTopicConfig reports whether name is a Kafka topic config strata
// applies or stores.
func knownTopicConfig(name string) bool {
	return topicConfigDef(name) != nil || storedTopicConfigs[name]
}

// validateTopicConfigs checks the names and values of the given topic
// overrides (only names in only, when only is not nil).
func validateTopicConfigs(configs map[string]string, only map[string]bool) error {
	for k, v := range configs {
		if only != nil && !only[k] {
			continue
		}
		if !knownTopicConfig(k) {
			return fmt.Errorf("%w: unknown topic config name %q", ErrConfig, k)
		}
		d := topicConfigDef(k)
		if d == nil {
			continue
		}
		if err := d.check(v); err != nil {
			return fmt.Errorf("%w: invalid value %q for %s: %v", ErrConfig, v, k, err)
		}
	}
	return nil
}
