package server

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// configDef is one property strata understands: a broker property
// (server.properties, --override, DescribeConfigs of the broker) or a topic
// config (CreateTopics, AlterConfigs, IncrementalAlterConfigs,
// DescribeConfigs of a topic, the topic table). Every path that reads a
// property's text goes through its def, so a value means one thing
// everywhere: val parses the text, checks it with Kafka's validator and
// stores it in a Config field. A topic config stores into the same field as
// its broker synonym, in a copy of the broker's Config (the topic's
// effective config, see topicConfig), from which the log's segment options,
// the cleaner's config and the produce settings are built.
type configDef struct {
	name string
	typ  kmsg.ConfigType
	doc  string
	val  configValue
	// Broker properties: alias names the property this one is another
	// spelling of, and among the spellings set the highest rank wins,
	// whatever their order (Kafka's log.retention.ms > .minutes > .hours).
	alias string
	rank  int
	// Topic configs: synonym is the broker property supplying the default;
	// stored configs are checked and kept with the topic but not applied.
	synonym string
	stored  bool
}

// configValue is how a property's text becomes a Config field.
type configValue interface {
	set(c *Config, v string) error // parse, check with Kafka's validator, store
	check(c *Config) error         // check the stored value (a Config built in Go)
	get(c *Config) string          // the value as DescribeConfigs shows it
}

// field is a configValue of type T at a Config field; at is nil for a
// property that is checked but not stored.
type field[T any] struct {
	at    func(*Config) *T
	parse func(string) (T, error)
	valid func(T) error
	show  func(T) string
}

func (f field[T]) set(c *Config, v string) error {
	x, err := f.parse(strings.TrimSpace(v))
	if err != nil {
		return err
	}
	if f.valid != nil {
		if err := f.valid(x); err != nil {
			return err
		}
	}
	if f.at != nil {
		*f.at(c) = x
	}
	return nil
}

func (f field[T]) check(c *Config) error {
	if f.at == nil || f.valid == nil {
		return nil
	}
	return f.valid(*f.at(c))
}

func (f field[T]) get(c *Config) string {
	if f.at == nil {
		return ""
	}
	return f.show(*f.at(c))
}

// integer is an integer property: Kafka's INT (bits 32) or LONG (64), in
// [lo, hi].
func integer[T int | int32 | int64](at func(*Config) *T, bits int, lo, hi int64) field[T] {
	return field[T]{
		at: at,
		parse: func(v string) (T, error) {
			n, err := strconv.ParseInt(v, 10, bits)
			if err != nil {
				return 0, fmt.Errorf("not a number of %d bits", bits)
			}
			if err := inRange(n, lo, hi); err != nil {
				return 0, err
			}
			return T(n), nil
		},
		valid: func(x T) error { return inRange(int64(x), lo, hi) },
		show:  func(x T) string { return strconv.FormatInt(int64(x), 10) },
	}
}

func inRange(n, lo, hi int64) error {
	switch {
	case n >= lo && n <= hi:
		return nil
	case hi == math.MaxInt64 || hi == math.MaxInt32:
		return fmt.Errorf("%d: must be at least %d", n, lo)
	}
	return fmt.Errorf("%d: must be in [%d, %d]", n, lo, hi)
}

const (
	minInt = math.MinInt32
	maxInt = math.MaxInt32
	maxLng = math.MaxInt64
	minLng = math.MinInt64
)

func int32In(at func(*Config) *int32, lo int64) field[int32] { return integer(at, 32, lo, maxInt) }
func intIn(at func(*Config) *int, lo int64) field[int]       { return integer(at, 32, lo, maxInt) }
func longIn(at func(*Config) *int64, lo int64) field[int64]  { return integer(at, 64, lo, maxLng) }

// scaled is an integer property in a coarser unit stored in milliseconds
// (log.retention.hours, offsets.retention.minutes); Kafka's INT, at least lo.
func scaled(at func(*Config) *int64, unit, lo int64) field[int64] {
	return field[int64]{
		at: at,
		parse: func(v string) (int64, error) {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return 0, fmt.Errorf("not a number of 32 bits")
			}
			if err := inRange(n, lo, maxInt); err != nil {
				return 0, err
			}
			return n * unit, nil
		},
		valid: func(ms int64) error { return inRange(ms/unit, lo, maxInt) },
		show:  func(ms int64) string { return strconv.FormatInt(ms/unit, 10) },
	}
}

// brokerRetention is log.retention.ms in unit (1 for .ms, Kafka's LONG;
// 60000 or 3600000 for .minutes and .hours, INT): as Kafka's KafkaConfig,
// any negative value is -1 (keep forever) and 0 is refused at the broker
// (a topic's retention.ms may be 0: delete at once).
func brokerRetention(unit int64) field[int64] {
	bits := 64
	if unit > 1 {
		bits = 32
	}
	return field[int64]{
		at: func(c *Config) *int64 { return &c.RetentionMs },
		parse: func(v string) (int64, error) {
			n, err := strconv.ParseInt(v, 10, bits)
			if err != nil {
				return 0, fmt.Errorf("not a number of %d bits", bits)
			}
			if n < 0 {
				return -1, nil
			}
			return n * unit, nil
		},
		valid: func(ms int64) error {
			if ms == 0 || ms < -1 {
				return fmt.Errorf("%d: must be -1 (unlimited) or at least 1", ms)
			}
			return nil
		},
		show: func(ms int64) string { return strconv.FormatInt(ms, 10) },
	}
}

// boolean is Kafka's BOOLEAN: true or false, in any case.
func boolean(at func(*Config) *bool) field[bool] {
	return field[bool]{
		at: at,
		parse: func(v string) (bool, error) {
			switch {
			case strings.EqualFold(v, "true"):
				return true, nil
			case strings.EqualFold(v, "false"):
				return false, nil
			}
			return false, fmt.Errorf("%q: want true or false", v)
		},
		show: strconv.FormatBool,
	}
}

// double is Kafka's DOUBLE in [lo, hi] (NaN refused).
func double(at func(*Config) *float64, lo, hi float64) field[float64] {
	valid := func(f float64) error {
		if !(f >= lo && f <= hi) {
			if hi == math.MaxFloat64 {
				return fmt.Errorf("%g: must be more than %g", f, lo)
			}
			return fmt.Errorf("%g: must be in [%g, %g]", f, lo, hi)
		}
		return nil
	}
	return field[float64]{
		at: at,
		parse: func(v string) (float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("%q: not a number", v)
			}
			return f, nil
		},
		valid: valid,
		show:  func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
	}
}

// text is a STRING or LIST property checked by check (nil: anything).
func text(at func(*Config) *string, check func(string) error) field[string] {
	return field[string]{
		at:    at,
		parse: func(v string) (string, error) { return v, nil },
		valid: check,
		show:  func(s string) string { return s },
	}
}

// oneOf accepts exactly one of values (Kafka's ValidString.in).
func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, w := range values {
			if v == w {
				return nil
			}
		}
		return fmt.Errorf("%q: want %s", v, strings.Join(values, ", "))
	}
}

// checkMetricsListener accepts "" (off) or host:port with a numeric port.
func checkMetricsListener(v string) error {
	if v == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q: want host:port or empty: %w", v, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", v, port)
	}
	return nil
}

func checkCleanupPolicy(v string) error { _, err := parseCleanupPolicy(v); return err }

// checkGzipLevel accepts 1-9 and -1 (the codec's default), as Kafka does.
func checkGzipLevel(n int) error {
	if n == -1 {
		return nil
	}
	return inRange(int64(n), 1, 9)
}

// levelIn is a compression level: INT checked by valid.
func levelIn(at func(*Config) *int, valid func(int) error) field[int] {
	f := integer(at, 32, math.MinInt32, maxInt)
	f.valid = valid
	inner := f.parse
	f.parse = func(v string) (int, error) {
		n, err := inner(v)
		if err != nil {
			return 0, err
		}
		return n, valid(n)
	}
	return f
}

func rangeOf(lo, hi int) func(int) error {
	return func(n int) error { return inRange(int64(n), int64(lo), int64(hi)) }
}

// Config field accessors shared by a broker property and its topic config.
var (
	atSegmentBytes       = func(c *Config) *int64 { return &c.SegmentBytes }
	atSegmentMs          = func(c *Config) *int64 { return &c.SegmentMs }
	atRetentionBytes     = func(c *Config) *int64 { return &c.RetentionBytes }
	atFlushMessages      = func(c *Config) *int64 { return &c.FlushMessages }
	atFlushMs            = func(c *Config) *int64 { return &c.FlushMs }
	atPreallocate        = func(c *Config) *bool { return &c.Preallocate }
	atMessageMaxBytes    = func(c *Config) *int32 { return &c.MessageMaxBytes }
	atTimestampType      = func(c *Config) *string { return &c.TimestampType }
	atCleanupPolicy      = func(c *Config) *string { return &c.CleanupPolicy }
	atCompressionType    = func(c *Config) *string { return &c.CompressionType }
	atGzipLevel          = func(c *Config) *int { return &c.GzipLevel }
	atLZ4Level           = func(c *Config) *int { return &c.LZ4Level }
	atZstdLevel          = func(c *Config) *int { return &c.ZstdLevel }
	atMinCleanableRatio  = func(c *Config) *float64 { return &c.MinCleanableRatio }
	atDeleteRetentionMs  = func(c *Config) *int64 { return &c.DeleteRetentionMs }
	atMinCompactionLagMs = func(c *Config) *int64 { return &c.MinCompactionLagMs }
	atMaxCompactionLagMs = func(c *Config) *int64 { return &c.MaxCompactionLagMs }
	// Cluster mode: stored by every broker, applied in cluster mode.
	atMinInsyncReplicas     = func(c *Config) *int32 { return &c.Cluster.MinInsyncReplicas }
	atUncleanLeaderElection = func(c *Config) *bool { return &c.Cluster.UncleanLeaderElectionEnable }
)

// parseShort and showShort are Kafka's SHORT.
func parseShort(v string) (int16, error) {
	n, err := strconv.ParseInt(v, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("not a number of 16 bits")
	}
	return int16(n), nil
}

func showShort(n int16) string { return strconv.Itoa(int(n)) }

var (
	timestampTypes   = oneOf("CreateTime", "LogAppendTime")
	compressionTypes = oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
	lz4Levels        = rangeOf(1, 17)
	zstdLevels       = rangeOf(-131072, 22)
	// segmentBytesIn is segment.bytes' range: Kafka 3's (a v0 record's
	// overhead) up to the int32 positions of the index.
	segmentBytesIn = func(at func(*Config) *int64) field[int64] { return integer(at, 32, 14, maxInt) }
)

// brokerConfigDefs are the broker properties, sorted by name. Kafka's
// validators, with these deviations: segment sizes start at 14 bytes
// (Kafka 3; Kafka 4 asks 1 MiB), log.cleaner.io.max.bytes.per.second must be
// positive (Kafka's 0 stalls the cleaner forever),
// log.flush.offset.checkpoint.interval.ms, log.cleaner.threads and
// offsets.topic.segment.bytes refuse 0 and cleanup policies may not be empty.
var brokerConfigDefs = sortDefs([]configDef{
	{name: "advertised.listeners", typ: kmsg.ConfigTypeString, doc: "endpoints Metadata reports (default: listeners)",
		val: field[[]Listener]{at: func(c *Config) *[]Listener { return &c.AdvertisedListeners }, parse: parseListeners, valid: checkAdvertised, show: joinListeners}},
	{name: "auto.create.topics.enable", typ: kmsg.ConfigTypeBoolean, val: boolean(func(c *Config) *bool { return &c.AutoCreateTopics })},
	{name: "broker.id", alias: "node.id", val: int32In(func(c *Config) *int32 { return &c.NodeID }, -1)},
	{name: "compression.gzip.level", typ: kmsg.ConfigTypeInt, val: levelIn(atGzipLevel, checkGzipLevel)},
	{name: "compression.lz4.level", typ: kmsg.ConfigTypeInt, val: levelIn(atLZ4Level, lz4Levels)},
	{name: "compression.type", typ: kmsg.ConfigTypeString, val: text(atCompressionType, compressionTypes)},
	{name: "compression.zstd.level", typ: kmsg.ConfigTypeInt, val: levelIn(atZstdLevel, zstdLevels)},
	{name: "connections.max.idle.ms", typ: kmsg.ConfigTypeLong, doc: "close a connection idle this long (negative: never)",
		val: longIn(func(c *Config) *int64 { return &c.ConnectionsMaxIdleMs }, minLng)},
	{name: "default.replication.factor", typ: kmsg.ConfigTypeInt, val: field[int16]{
		at: func(c *Config) *int16 { return &c.DefaultReplication }, parse: parseShort,
		valid: func(n int16) error { return inRange(int64(n), 1, math.MaxInt16) }, show: showShort,
	}},
	{name: "delete.topic.enable", typ: kmsg.ConfigTypeBoolean, val: boolean(func(c *Config) *bool { return &c.DeleteTopicEnable })},
	{name: "fetch.max.bytes", typ: kmsg.ConfigTypeInt, doc: "most record bytes one Fetch response carries (its first batch is sent whole however large)",
		val: int32In(func(c *Config) *int32 { return &c.FetchMaxBytes }, 1024)},
	{name: "quota.window.num", typ: kmsg.ConfigTypeInt, doc: "samples a client quota's rate is measured over",
		val: intIn(func(c *Config) *int { return &c.QuotaWindowNum }, 1)},
	{name: "quota.window.size.seconds", typ: kmsg.ConfigTypeInt, doc: "time span of each client quota rate sample",
		val: intIn(func(c *Config) *int { return &c.QuotaWindowSizeSeconds }, 1)},
	{name: "file.delete.delay.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.FileDeleteDelayMs }, 0)},
	{name: "group.initial.rebalance.delay.ms", typ: kmsg.ConfigTypeInt, val: integer(func(c *Config) *int64 { return &c.GroupInitialRebalanceDelayMs }, 32, 0, maxInt)},
	{name: "group.max.session.timeout.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.GroupMaxSessionTimeoutMs }, 1)},
	{name: "group.max.size", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.GroupMaxSize }, 1)},
	{name: "group.min.session.timeout.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.GroupMinSessionTimeoutMs }, 1)},
	{name: "listeners", typ: kmsg.ConfigTypeString,
		val: field[[]Listener]{at: func(c *Config) *[]Listener { return &c.Listeners }, parse: parseListeners, valid: checkListeners, show: joinListeners}},
	{name: "log.cleaner.backoff.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.CleanerBackoffMs }, 0)},
	{name: "log.cleaner.dedupe.buffer.size", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.CleanerDedupeBufferBytes }, 1)},
	{name: "log.cleaner.delete.retention.ms", typ: kmsg.ConfigTypeLong, val: longIn(atDeleteRetentionMs, 0)},
	{name: "log.cleaner.enable", typ: kmsg.ConfigTypeBoolean, val: boolean(func(c *Config) *bool { return &c.CleanerEnable })},
	{name: "log.cleaner.io.buffer.load.factor", typ: kmsg.ConfigTypeDouble, val: field[float64]{
		at: func(c *Config) *float64 { return &c.CleanerLoadFactor }, parse: double(nil, 0, 1).parse,
		valid: func(f float64) error {
			if !(f > 0 && f <= 1) {
				return fmt.Errorf("%g: must be in (0, 1]", f)
			}
			return nil
		},
		show: double(nil, 0, 1).show}},
	{name: "log.cleaner.io.max.bytes.per.second", typ: kmsg.ConfigTypeDouble, val: field[float64]{
		at: func(c *Config) *float64 { return &c.CleanerIOMaxBytesPerSec }, parse: double(nil, 0, 1).parse,
		valid: func(f float64) error {
			if !(f > 0) {
				return fmt.Errorf("%g: must be positive (Kafka's 0 stops the cleaner for good)", f)
			}
			return nil
		},
		show: double(nil, 0, 1).show}},
	{name: "log.cleaner.max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, val: longIn(atMaxCompactionLagMs, 1)},
	{name: "log.cleaner.min.cleanable.ratio", typ: kmsg.ConfigTypeDouble, val: double(atMinCleanableRatio, 0, 1)},
	{name: "log.cleaner.min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, val: longIn(atMinCompactionLagMs, 0)},
	{name: "log.cleaner.threads", typ: kmsg.ConfigTypeInt, val: intIn(func(c *Config) *int { return &c.CleanerThreads }, 1)},
	{name: "log.cleanup.policy", typ: kmsg.ConfigTypeList, val: text(atCleanupPolicy, checkCleanupPolicy)},
	{name: "log.dir", alias: "log.dirs", rank: 1, val: field[[]string]{at: func(c *Config) *[]string { return &c.LogDirs }, parse: parseDirs, valid: checkDirs}},
	{name: "log.dirs", typ: kmsg.ConfigTypeString, rank: 2,
		val: field[[]string]{at: func(c *Config) *[]string { return &c.LogDirs }, parse: parseDirs, valid: checkDirs, show: func(d []string) string { return strings.Join(d, ",") }}},
	{name: "log.flush.interval.messages", typ: kmsg.ConfigTypeLong, val: longIn(atFlushMessages, 1)},
	{name: "log.flush.interval.ms", typ: kmsg.ConfigTypeLong, val: longIn(atFlushMs, 0)},
	{name: "log.flush.offset.checkpoint.interval.ms", typ: kmsg.ConfigTypeInt, val: integer(func(c *Config) *int64 { return &c.CheckpointIntervalMs }, 32, 1, maxInt)},
	{name: "log.message.timestamp.type", typ: kmsg.ConfigTypeString, val: text(atTimestampType, timestampTypes)},
	{name: "log.preallocate", typ: kmsg.ConfigTypeBoolean, val: boolean(atPreallocate)},
	{name: "log.retention.bytes", typ: kmsg.ConfigTypeLong, val: longIn(atRetentionBytes, minLng)},
	{name: "log.retention.check.interval.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.RetentionCheckMs }, 1)},
	{name: "log.retention.hours", alias: "log.retention.ms", rank: 1, val: brokerRetention(3600 * 1000)},
	{name: "log.retention.minutes", alias: "log.retention.ms", rank: 2, val: brokerRetention(60 * 1000)},
	{name: "log.retention.ms", typ: kmsg.ConfigTypeLong, rank: 3, val: brokerRetention(1)},
	{name: "log.roll.hours", alias: "log.roll.ms", rank: 1, val: scaled(atSegmentMs, 3600*1000, 1)},
	{name: "log.roll.ms", typ: kmsg.ConfigTypeLong, rank: 2, val: longIn(atSegmentMs, 1)},
	{name: "log.segment.bytes", typ: kmsg.ConfigTypeInt, val: segmentBytesIn(atSegmentBytes)},
	{name: "max.connections", typ: kmsg.ConfigTypeInt, doc: "most open client connections; at the limit the broker stops accepting until one closes",
		val: int32In(func(c *Config) *int32 { return &c.MaxConnections }, 0)},
	{name: "max.connections.per.ip", typ: kmsg.ConfigTypeInt, doc: "most connections from one address; more are closed at once",
		val: int32In(func(c *Config) *int32 { return &c.MaxConnectionsPerIP }, 0)},
	{name: "max.connections.per.ip.overrides", typ: kmsg.ConfigTypeString, doc: "per-address limits: host:count,host:count",
		val: field[map[string]int32]{at: func(c *Config) *map[string]int32 { return &c.MaxConnectionsPerIPOverrides }, parse: parseIPOverrides, show: showIPOverrides}},
	{name: "message.max.bytes", typ: kmsg.ConfigTypeInt, val: int32In(atMessageMaxBytes, 0)},
	{name: "node.id", typ: kmsg.ConfigTypeInt, doc: "this broker's id (-1 with zookeeper.connect: generated from /brokers/seqid, above 1000)",
		val: int32In(func(c *Config) *int32 { return &c.NodeID }, -1)},
	{name: "num.partitions", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.NumPartitions }, 1)},
	{name: "num.recovery.threads.per.data.dir", typ: kmsg.ConfigTypeInt, val: intIn(func(c *Config) *int { return &c.RecoveryThreads }, 1)},
	{name: "offset.metadata.max.bytes", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.OffsetMetadataMaxBytes }, 0)},
	{name: "offsets.retention.check.interval.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.OffsetsRetentionCheckMs }, 1)},
	{name: "offsets.retention.minutes", typ: kmsg.ConfigTypeInt, val: scaled(func(c *Config) *int64 { return &c.OffsetsRetentionMs }, 60*1000, 1)},
	{name: "offsets.topic.num.partitions", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.OffsetsTopicNumPartitions }, 1)},
	{name: "offsets.topic.segment.bytes", typ: kmsg.ConfigTypeInt, val: segmentBytesIn(func(c *Config) *int64 { return &c.OffsetsTopicSegmentBytes })},
	{name: "queued.max.request.bytes", typ: kmsg.ConfigTypeLong, doc: "memory for requests read but not yet served; a connection waits before reading more (-1 or 0: no limit)",
		val: longIn(func(c *Config) *int64 { return &c.QueuedMaxRequestBytes }, minLng)},
	{name: "socket.request.max.bytes", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.SocketRequestMaxBytes }, 1)},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", typ: kmsg.ConfigTypeInt, val: longIn(func(c *Config) *int64 { return &c.TxnAbortIntervalMs }, 1)},
	{name: "transaction.max.timeout.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.TxnMaxTimeoutMs }, 1)},
	{name: "transaction.remove.expired.transaction.cleanup.interval.ms", typ: kmsg.ConfigTypeInt, val: longIn(func(c *Config) *int64 { return &c.TxnRemoveIntervalMs }, 1)},
	{name: "transaction.state.log.min.isr", typ: kmsg.ConfigTypeInt, doc: "min.insync.replicas of __transaction_state (cluster mode)",
		val: int32In(func(c *Config) *int32 { return &c.TxnStateMinISR }, 1)},
	{name: "transaction.state.log.replication.factor", typ: kmsg.ConfigTypeShort, doc: "replicas of __transaction_state (cluster mode: created once this many brokers live)",
		val: field[int16]{at: func(c *Config) *int16 { return &c.TxnStateReplicationFactor }, parse: parseShort,
			valid: func(n int16) error { return inRange(int64(n), 1, math.MaxInt16) }, show: showShort}},
	{name: "transaction.state.log.num.partitions", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.TxnStateNumPartitions }, 1)},
	{name: "transaction.state.log.segment.bytes", typ: kmsg.ConfigTypeInt, val: segmentBytesIn(func(c *Config) *int64 { return &c.TxnStateSegmentBytes })},
	{name: "transactional.id.expiration.ms", typ: kmsg.ConfigTypeInt, val: longIn(func(c *Config) *int64 { return &c.TxnIDExpirationMs }, 1)},
	{name: "strata.max.partitions.per.topic", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.MaxPartitionsPerTopic }, 1)},
	{name: "strata.produce.validation", typ: kmsg.ConfigTypeString, val: text(func(c *Config) *string { return &c.ProduceValidation }, oneOf("full", "header"))},
	{name: "strata.metrics.listener", typ: kmsg.ConfigTypeString, doc: "host:port of the HTTP listener serving /metrics (Prometheus) and the status page; empty turns it off",
		val: text(func(c *Config) *string { return &c.MetricsListener }, checkMetricsListener)},
	{name: "strata.request.slow.ms", typ: kmsg.ConfigTypeLong, doc: "log one line for each request that took longer (a consumer or follower fetch's long-poll wait not counted): API, client, partitions, time split; 0 logs every request, negative none",
		val: longIn(func(c *Config) *int64 { return &c.RequestSlowMs }, minLng)},
	{name: "strata.log.summary.interval.ms", typ: kmsg.ConfigTypeLong, doc: "how often the broker logs a one-line summary at info level (rates, p99 latency, partitions, groups); 0 or negative: never",
		val: longIn(func(c *Config) *int64 { return &c.LogSummaryIntervalMs }, minLng)},
	{name: "strata.consumer.lag.refresh.ms", typ: kmsg.ConfigTypeLong, doc: "how often a group coordinator asks the leaders of partitions with no replica on its broker for their high watermarks (ListOffsets), for kafka_consumergroup_lag; 0 or negative: never (no lag for those partitions)",
		val: longIn(func(c *Config) *int64 { return &c.ConsumerLagRefreshMs }, minLng)},
	{name: "strata.log.format", typ: kmsg.ConfigTypeString, doc: "strata broker's log output: text (key=value) or json (one object per line); --log-format wins",
		val: text(func(c *Config) *string { return &c.LogFormat }, oneOf("text", "json"))},
	{name: "strata.shutdown.timeout.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.ShutdownTimeoutMs }, 0)},

	// Cluster mode (cluster_config.go): Kafka 2.8's names, defaults and
	// validators.
	{name: "auto.leader.rebalance.enable", typ: kmsg.ConfigTypeBoolean, doc: "the controller moves leadership back to preferred replicas",
		val: boolean(func(c *Config) *bool { return &c.Cluster.AutoLeaderRebalanceEnable })},
	{name: "broker.rack", typ: kmsg.ConfigTypeString, doc: "rack of this broker: replica placement spreads partitions over racks",
		val: text(func(c *Config) *string { return &c.Cluster.BrokerRack }, nil)},
	{name: "controlled.shutdown.enable", typ: kmsg.ConfigTypeBoolean, doc: "on SIGTERM ask the controller to move this broker's leaderships first",
		val: boolean(func(c *Config) *bool { return &c.Cluster.ControlledShutdownEnable })},
	{name: "controlled.shutdown.max.retries", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ControlledShutdownMaxRetries }, minInt)},
	{name: "controlled.shutdown.retry.backoff.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.Cluster.ControlledShutdownRetryBackoffMs }, minLng)},
	{name: "controller.socket.timeout.ms", typ: kmsg.ConfigTypeInt, doc: "timeout of the controller's requests to brokers",
		val: int32In(func(c *Config) *int32 { return &c.Cluster.ControllerSocketTimeoutMs }, 1)},
	{name: "inter.broker.listener.name", typ: kmsg.ConfigTypeString, doc: "listener brokers use to talk to each other (default: PLAINTEXT)",
		val: field[string]{at: func(c *Config) *string { return &c.Cluster.InterBrokerListenerName }, parse: upperName, show: func(s string) string { return s }}},
	{name: "security.inter.broker.protocol", typ: kmsg.ConfigTypeString, doc: "security protocol between brokers, the listener of that name (exclusive with inter.broker.listener.name)",
		val: field[string]{at: func(c *Config) *string { return &c.Cluster.InterBrokerProtocol }, parse: parseInterBrokerProtocol, show: func(s string) string { return s }}},
	{name: "leader.imbalance.check.interval.seconds", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.Cluster.LeaderImbalanceCheckIntervalSeconds }, 1)},
	{name: "leader.imbalance.per.broker.percentage", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.LeaderImbalancePerBrokerPercentage }, minInt)},
	{name: "listener.security.protocol.map", typ: kmsg.ConfigTypeString, doc: "security protocol of each listener name (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
		val: field[map[string]string]{at: func(c *Config) *map[string]string { return &c.Cluster.ListenerSecurityProtocolMap }, parse: parseProtocolMap, show: showProtocolMap}},
	{name: "min.insync.replicas", typ: kmsg.ConfigTypeInt, doc: "fewest in-sync replicas an acks=all produce needs (cluster mode)",
		val: int32In(atMinInsyncReplicas, 1)},
	{name: "num.replica.fetchers", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.NumReplicaFetchers }, 1)},
	{name: "offsets.topic.replication.factor", typ: kmsg.ConfigTypeShort, doc: "replicas of __consumer_offsets (cluster mode: created once this many brokers live)",
		val: field[int16]{at: func(c *Config) *int16 { return &c.Cluster.OffsetsTopicReplicationFactor }, parse: parseShort,
			valid: func(n int16) error { return inRange(int64(n), 1, math.MaxInt16) }, show: showShort}},
	{name: "replica.alter.log.dirs.io.max.bytes.per.second", typ: kmsg.ConfigTypeLong, doc: "the copy rate of a replica moving between log dirs (AlterReplicaLogDirs); 0 or unset: unlimited",
		val: longIn(func(c *Config) *int64 { return &c.AlterLogDirsIOMaxBytesPerSec }, 0)},
	{name: "replica.fetch.backoff.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaFetchBackoffMs }, 0)},
	{name: "replica.fetch.max.bytes", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaFetchMaxBytes }, 0)},
	{name: "replica.fetch.min.bytes", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaFetchMinBytes }, minInt)},
	{name: "replica.fetch.response.max.bytes", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaFetchResponseMaxBytes }, 0)},
	{name: "replica.fetch.wait.max.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaFetchWaitMaxMs }, minInt)},
	{name: "replica.high.watermark.checkpoint.interval.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.Cluster.ReplicaHWCheckpointIntervalMs }, 1)},
	{name: "replica.lag.time.max.ms", typ: kmsg.ConfigTypeLong, val: longIn(func(c *Config) *int64 { return &c.Cluster.ReplicaLagTimeMaxMs }, minLng)},
	{name: "replica.socket.receive.buffer.bytes", typ: kmsg.ConfigTypeInt, doc: "the replica fetchers' socket receive buffer (-1: the OS's autotuning)",
		val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaSocketReceiveBufferBytes }, -1)},
	{name: "replica.socket.timeout.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicaSocketTimeoutMs }, minInt)},
	{name: "replication.quota.window.num", typ: kmsg.ConfigTypeInt, doc: "samples of the replication throttles' rate",
		val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicationQuotaWindowNum }, 1)},
	{name: "replication.quota.window.size.seconds", typ: kmsg.ConfigTypeInt, doc: "length of a sample of the replication throttles' rate",
		val: int32In(func(c *Config) *int32 { return &c.Cluster.ReplicationQuotaWindowSizeSec }, 1)},
	{name: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, doc: "elect a replica outside the ISR when no ISR member lives (loses data)",
		val: boolean(atUncleanLeaderElection)},
	{name: "zookeeper.connect", typ: kmsg.ConfigTypeString, doc: "host:port[,host:port...][/chroot] of ZooKeeper: set, the broker joins a cluster",
		val: text(func(c *Config) *string { return &c.Cluster.ZookeeperConnect }, checkZKConnect)},
	{name: "zookeeper.connection.timeout.ms", typ: kmsg.ConfigTypeInt, doc: "how long the broker waits for its first ZooKeeper session (-1: the session timeout)",
		val: int32In(func(c *Config) *int32 { return &c.Cluster.ZookeeperConnectionTimeoutMs }, -1)},
	{name: "zookeeper.session.timeout.ms", typ: kmsg.ConfigTypeInt, val: int32In(func(c *Config) *int32 { return &c.Cluster.ZookeeperSessionTimeoutMs }, 1)},
})

// topicConfigDefs are the topic configs, sorted by name. Each applied one
// stores into the Config field of its broker synonym, with Kafka's
// LogConfig validator (which may differ from the broker's: a topic's
// retention.ms may be 0).
var topicConfigDefs = sortDefs([]configDef{
	{name: "cleanup.policy", synonym: "log.cleanup.policy", typ: kmsg.ConfigTypeList, doc: "delete, compact or both (comma separated)",
		val: text(atCleanupPolicy, checkCleanupPolicy)},
	{name: "compression.gzip.level", synonym: "compression.gzip.level", typ: kmsg.ConfigTypeInt, doc: "gzip level of batches the broker recompresses: 1-9, or -1 for the codec's default",
		val: levelIn(atGzipLevel, checkGzipLevel)},
	{name: "compression.lz4.level", synonym: "compression.lz4.level", typ: kmsg.ConfigTypeInt, doc: "lz4 level of batches the broker recompresses: 1-17 (9, the default, is lz4's fast compressor; 10-17 compress as 9)",
		val: levelIn(atLZ4Level, lz4Levels)},
	{name: "compression.type", synonym: "compression.type", typ: kmsg.ConfigTypeString, doc: "codec batches are stored with: producer (as sent), uncompressed, gzip, snappy, lz4 or zstd",
		val: text(atCompressionType, compressionTypes)},
	{name: "compression.zstd.level", synonym: "compression.zstd.level", typ: kmsg.ConfigTypeInt, doc: "zstd level of batches the broker recompresses: -131072 to 22",
		val: levelIn(atZstdLevel, zstdLevels)},
	{name: "delete.retention.ms", synonym: "log.cleaner.delete.retention.ms", typ: kmsg.ConfigTypeLong, doc: "how long tombstones are kept on compacted topics (0: dropped by the first pass that reaches them)",
		val: longIn(atDeleteRetentionMs, 0)},
	{name: "flush.messages", synonym: "log.flush.interval.messages", typ: kmsg.ConfigTypeLong, doc: "fsync after this many messages",
		val: longIn(atFlushMessages, 1)},
	{name: "flush.ms", synonym: "log.flush.interval.ms", typ: kmsg.ConfigTypeLong, doc: "fsync when the oldest unflushed append is this old (0: at the flusher's next check)",
		val: longIn(atFlushMs, 0)},
	{name: "max.compaction.lag.ms", synonym: "log.cleaner.max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, doc: "longest a record stays uncompacted",
		val: longIn(atMaxCompactionLagMs, 1)},
	{name: "max.message.bytes", synonym: "message.max.bytes", typ: kmsg.ConfigTypeInt, doc: "largest record batch a produce may append",
		val: int32In(atMessageMaxBytes, 0)},
	{name: "message.timestamp.type", synonym: "log.message.timestamp.type", typ: kmsg.ConfigTypeString, doc: "CreateTime or LogAppendTime",
		val: text(atTimestampType, timestampTypes)},
	{name: "min.cleanable.dirty.ratio", synonym: "log.cleaner.min.cleanable.ratio", typ: kmsg.ConfigTypeDouble, doc: "dirty ratio above which a log is cleaned (0: whenever anything is dirty)",
		val: double(atMinCleanableRatio, 0, 1)},
	{name: "min.compaction.lag.ms", synonym: "log.cleaner.min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, doc: "shortest a record stays uncompacted",
		val: longIn(atMinCompactionLagMs, 0)},
	{name: "preallocate", synonym: "log.preallocate", typ: kmsg.ConfigTypeBoolean, doc: "fallocate each new segment file ahead of the writer",
		val: boolean(atPreallocate)},
	{name: "retention.bytes", synonym: "log.retention.bytes", typ: kmsg.ConfigTypeLong, doc: "largest a partition grows before old segments are deleted (negative: no limit; 0: delete every segment)",
		val: longIn(atRetentionBytes, minLng)},
	{name: "retention.ms", synonym: "log.retention.ms", typ: kmsg.ConfigTypeLong, doc: "how long segments are kept (-1: forever; 0: delete every segment at the next check)",
		val: longIn(func(c *Config) *int64 { return &c.RetentionMs }, -1)},
	{name: "segment.bytes", synonym: "log.segment.bytes", typ: kmsg.ConfigTypeInt, doc: "segment file size",
		val: segmentBytesIn(atSegmentBytes)},
	{name: "segment.ms", synonym: "log.roll.ms", typ: kmsg.ConfigTypeLong, doc: "roll a segment after this long",
		val: longIn(atSegmentMs, 1)},
	// Applied in cluster mode (a single node has no other replica): the
	// produce's acks=all check and the controller's election.
	{name: "min.insync.replicas", synonym: "min.insync.replicas", typ: kmsg.ConfigTypeInt, doc: "fewest in-sync replicas an acks=all produce needs (cluster mode)",
		val: int32In(atMinInsyncReplicas, 1)},
	{name: "unclean.leader.election.enable", synonym: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, doc: "elect a replica outside the ISR when no ISR member lives (cluster mode; loses data)",
		val: boolean(atUncleanLeaderElection)},

	// Kafka topic configs strata checks and keeps with the topic (clients
	// set them) but does not apply.
	{name: "file.delete.delay.ms", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, 0)},
	// The throttled-replica lists are applied in cluster mode only, by the
	// replication throttles (cluster_throttle.go), not by the log.
	{name: "follower.replication.throttled.replicas", stored: true, typ: kmsg.ConfigTypeList, val: text(nil, checkThrottledReplicas)},
	{name: "index.interval.bytes", stored: true, typ: kmsg.ConfigTypeInt, val: int32In(nil, 0)},
	{name: "leader.replication.throttled.replicas", stored: true, typ: kmsg.ConfigTypeList, val: text(nil, checkThrottledReplicas)},
	{name: "local.retention.bytes", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, -2)},
	{name: "local.retention.ms", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, -2)},
	{name: "message.downconversion.enable", stored: true, typ: kmsg.ConfigTypeBoolean, val: boolean(nil)},
	{name: "message.format.version", stored: true, typ: kmsg.ConfigTypeString, val: text(nil, nil)},
	{name: "message.timestamp.after.max.ms", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, 0)},
	{name: "message.timestamp.before.max.ms", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, 0)},
	{name: "message.timestamp.difference.max.ms", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, 0)},

	{name: "remote.storage.enable", stored: true, typ: kmsg.ConfigTypeBoolean, val: boolean(nil)},
	{name: "segment.index.bytes", stored: true, typ: kmsg.ConfigTypeInt, val: int32In(nil, 4)},
	{name: "segment.jitter.ms", stored: true, typ: kmsg.ConfigTypeLong, val: longIn(nil, 0)},
})

func sortDefs(defs []configDef) []configDef {
	sort.Slice(defs, func(i, j int) bool { return defs[i].name < defs[j].name })
	return defs
}

func findDef(defs []configDef, name string) *configDef {
	i := sort.Search(len(defs), func(i int) bool { return defs[i].name >= name })
	if i < len(defs) && defs[i].name == name {
		return &defs[i]
	}
	return nil
}

// brokerConfig is the broker property name, nil if strata does not know it.
func brokerConfig(name string) *configDef { return findDef(brokerConfigDefs, name) }

// topicConfigDef is the topic config name, applied or stored; nil if
// strata does not know it.
func topicConfigDef(name string) *configDef { return findDef(topicConfigDefs, name) }

// knownTopicConfig reports whether name is a Kafka topic config strata
// applies or stores.
func knownTopicConfig(name string) bool { return topicConfigDef(name) != nil }

// describedBroker reports whether d is listed by DescribeConfigs of the
// broker (aliases are not: their primary is).
func (d *configDef) describedBroker() bool { return d.alias == "" }

// applied reports whether d is a topic config strata applies.
func (d *configDef) applied() bool { return !d.stored }

// brokerValue is a broker property's value and source: STATIC_BROKER_CONFIG
// when it differs from the built-in default, else DEFAULT_CONFIG.
func brokerValue(c *Config, name string) (string, kmsg.ConfigSource) {
	d := brokerConfig(name)
	if d == nil {
		return "", kmsg.ConfigSourceUnknown
	}
	v := d.val.get(c)
	if v != d.val.get(DefaultConfig()) {
		return v, kmsg.ConfigSourceStaticBrokerConfig
	}
	return v, kmsg.ConfigSourceDefaultConfig
}

// validateTopicConfigs checks the names and values of the given topic
// overrides (only names in only, when only is not nil).
func validateTopicConfigs(configs map[string]string, only map[string]bool) error {
	var scratch Config
	for _, k := range sortedKeys(configs) {
		if only != nil && !only[k] {
			continue
		}
		d := topicConfigDef(k)
		if d == nil {
			return fmt.Errorf("%w: unknown topic config name %q", ErrConfig, k)
		}
		if err := d.val.set(&scratch, configs[k]); err != nil {
			return fmt.Errorf("%w: invalid value %q for %s: %v", ErrConfig, configs[k], k, err)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkThrottledReplicas accepts Kafka's throttled-replica lists: "*", or
// partition:broker pairs separated by commas (empty: none).
func checkThrottledReplicas(v string) error {
	if v == "*" {
		return nil
	}
	for _, p := range splitList(v) {
		a, b, ok := strings.Cut(p, ":")
		if _, err := strconv.ParseUint(strings.TrimSpace(a), 10, 31); !ok || err != nil {
			return fmt.Errorf("%q: want partition:broker pairs or *", p)
		}
		if _, err := strconv.ParseUint(strings.TrimSpace(b), 10, 31); err != nil {
			return fmt.Errorf("%q: want partition:broker pairs or *", p)
		}
	}
	return nil
}

// appliedTopicConfigs counts the topic configs strata applies (those
// DescribeConfigs and CreateTopics report).
func appliedTopicConfigs() int {
	n := 0
	for i := range topicConfigDefs {
		if topicConfigDefs[i].applied() {
			n++
		}
	}
	return n
}
