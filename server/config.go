package server

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
)

// Config is the broker configuration, with Kafka's property names. Build one
// with DefaultConfig, LoadConfig or ParseConfig; zero values are not defaults.
type Config struct {
	NodeID                int32      // node.id / broker.id (default 0)
	Listeners             []Listener // listeners (default PLAINTEXT://127.0.0.1:9092)
	AdvertisedListeners   []Listener // advertised.listeners (default: listeners)
	LogDirs               []string   // log.dirs / log.dir (default ./data)
	NumPartitions         int32      // num.partitions (default 1)
	AutoCreateTopics      bool       // auto.create.topics.enable (default true)
	DefaultReplication    int16      // default.replication.factor (default 1; only 1 is served)
	SegmentBytes          int64      // log.segment.bytes (default 1 GiB)
	SegmentMs             int64      // log.roll.ms / log.roll.hours (default 7 days)
	RetentionMs           int64      // log.retention.ms / .minutes / .hours (default 7 days; -1 forever)
	RetentionBytes        int64      // log.retention.bytes (default -1)
	FlushMessages         int64      // log.flush.interval.messages (default: never)
	FlushMs               int64      // log.flush.interval.ms (default: never)
	Preallocate           bool       // log.preallocate: fallocate segment files ahead of the writer (default false)
	MessageMaxBytes       int32      // message.max.bytes (default 1048588)
	SocketRequestMaxBytes int32      // socket.request.max.bytes (default 104857600)
	ConnectionsMaxIdleMs  int64      // connections.max.idle.ms (default 600000)
	ShutdownTimeoutMs     int64      // strata.shutdown.timeout.ms: wait for in-flight requests (default 30000)
	MaxPartitionsPerTopic int32      // strata.max.partitions.per.topic: CreateTopics/CreatePartitions cap (default 10000)
	RetentionCheckMs      int64      // log.retention.check.interval.ms (default 300000)
	TimestampType         string     // log.message.timestamp.type: CreateTime (default) or LogAppendTime
	CleanupPolicy         string     // log.cleanup.policy: delete (default), compact or both
	CheckpointIntervalMs  int64      // log.flush.offset.checkpoint.interval.ms (default 60000)
	RecoveryThreads       int        // num.recovery.threads.per.data.dir (default 2)
	DeleteTopicEnable     bool       // delete.topic.enable (default true)
	FileDeleteDelayMs     int64      // file.delete.delay.ms: deleted topics' dirs linger (default 60000)
	// Cleaner settings (log.cleaner.*), Kafka's defaults.
	CleanerEnable            bool    // log.cleaner.enable (default true)
	CleanerThreads           int     // log.cleaner.threads (default 1)
	CleanerDedupeBufferBytes int64   // log.cleaner.dedupe.buffer.size (default 128 MiB)
	CleanerLoadFactor        float64 // log.cleaner.io.buffer.load.factor (default 0.9)
	CleanerIOMaxBytesPerSec  float64 // log.cleaner.io.max.bytes.per.second (default unlimited)
	CleanerBackoffMs         int64   // log.cleaner.backoff.ms (default 15000)
	MinCleanableRatio        float64 // log.cleaner.min.cleanable.ratio (default 0.5)
	DeleteRetentionMs        int64   // log.cleaner.delete.retention.ms (default 1 day)
	MinCompactionLagMs       int64   // log.cleaner.min.compaction.lag.ms (default 0)
	MaxCompactionLagMs       int64   // log.cleaner.max.compaction.lag.ms (default: never)
	// ProduceValidation is strata.produce.validation: "full" (default, as
	// Kafka: compressed batches are decompressed to check every record) or
	// "header" (trust a compressed batch after its header and CRC checks,
	// except on compacted topics, whose records must be checked for keys).
	ProduceValidation string
	// Group coordinator and __consumer_offsets settings, Kafka's names and
	// defaults.
	GroupInitialRebalanceDelayMs int64 // group.initial.rebalance.delay.ms (default 3000)
	GroupMinSessionTimeoutMs     int32 // group.min.session.timeout.ms (default 6000)
	GroupMaxSessionTimeoutMs     int32 // group.max.session.timeout.ms (default 1800000)
	GroupMaxSize                 int32 // group.max.size (default unlimited)
	OffsetsTopicNumPartitions    int32 // offsets.topic.num.partitions (default 50)
	OffsetsTopicSegmentBytes     int64 // offsets.topic.segment.bytes (default 100 MiB)
	OffsetsRetentionMs           int64 // offsets.retention.minutes (default 7 days)
	OffsetsRetentionCheckMs      int64 // offsets.retention.check.interval.ms (default 600000)
	OffsetMetadataMaxBytes       int32 // offset.metadata.max.bytes (default 4096)
	// CompressionType is compression.type, the default of the topic config:
	// producer (default: batches stored as sent), uncompressed, gzip,
	// snappy, lz4 or zstd.
	CompressionType string
	// GzipLevel, LZ4Level and ZstdLevel are compression.gzip.level (1-9,
	// -1 the codec's default; default -1), compression.lz4.level (1-17,
	// default 9, which as in Kafka is lz4's fast compressor) and
	// compression.zstd.level (-131072 to 22, default 3), Kafka's KIP-390
	// levels for batches the broker recompresses.
	GzipLevel, LZ4Level, ZstdLevel int
	Unknown                        []string // keys seen but not understood (warned about)
}

// Listener is one PLAINTEXT://host:port endpoint.
type Listener struct {
	Name string // security protocol / listener name, PLAINTEXT
	Host string
	Port int32
}

func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
}

// Defaults, Kafka's.
const (
	DefaultListener              = "PLAINTEXT://127.0.0.1:9092"
	DefaultLogDir                = "./data"
	DefaultMessageMaxBytes       = 1048588
	DefaultSocketRequestMaxBytes = 104857600
	defaultSegmentBytes          = 1 << 30
	defaultWeekMs                = 7 * 24 * 3600 * 1000
)

// DefaultConfig is the embedded single-node default.
func DefaultConfig() *Config {
	l, _ := parseListeners(DefaultListener)
	return &Config{
		Listeners:             l,
		LogDirs:               []string{DefaultLogDir},
		NumPartitions:         1,
		AutoCreateTopics:      true,
		DefaultReplication:    1,
		SegmentBytes:          defaultSegmentBytes,
		SegmentMs:             defaultWeekMs,
		RetentionMs:           defaultWeekMs,
		RetentionBytes:        -1,
		FlushMessages:         math.MaxInt64,
		FlushMs:               math.MaxInt64,
		MessageMaxBytes:       DefaultMessageMaxBytes,
		SocketRequestMaxBytes: DefaultSocketRequestMaxBytes,
		ConnectionsMaxIdleMs:  600000,
		ShutdownTimeoutMs:     30000,
		MaxPartitionsPerTopic: DefaultMaxPartitionsPerTopic,
		RetentionCheckMs:      300000,
		TimestampType:         "CreateTime",
		CleanupPolicy:         "delete",
		ProduceValidation:     "full",
		CompressionType:       "producer",
		GzipLevel:             -1,
		LZ4Level:              lz4DefaultLevel,
		ZstdLevel:             3,
		CheckpointIntervalMs:  60000,
		RecoveryThreads:       2,
		DeleteTopicEnable:     true,
		FileDeleteDelayMs:     60000,

		CleanerEnable:            true,
		CleanerThreads:           1,
		CleanerDedupeBufferBytes: 128 << 20,
		CleanerLoadFactor:        0.9,
		CleanerBackoffMs:         15000,
		MinCleanableRatio:        0.5,
		DeleteRetentionMs:        24 * 3600 * 1000,
		MaxCompactionLagMs:       math.MaxInt64,

		GroupInitialRebalanceDelayMs: 3000,
		GroupMinSessionTimeoutMs:     6000,
		GroupMaxSessionTimeoutMs:     1800000,
		GroupMaxSize:                 math.MaxInt32,
		OffsetsTopicNumPartitions:    50,
		OffsetsTopicSegmentBytes:     100 << 20,
		OffsetsRetentionMs:           defaultWeekMs,
		OffsetsRetentionCheckMs:      600000,
		OffsetMetadataMaxBytes:       4096,
	}
}

// LoadConfig reads a server.properties file (path may be empty: defaults),
// then applies overrides ("key=value", later wins). Unknown keys are logged
// at warn level and kept in Config.Unknown.
func LoadConfig(path string, overrides []string, log *slog.Logger) (*Config, error) {
	props := map[string]string{}
	var order []string
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		defer f.Close()
		kv, keys, err := ParseProperties(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
		}
		props, order = kv, keys
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: override %q is not key=value", ErrConfig, o)
		}
		if _, seen := props[k]; !seen {
			order = append(order, k)
		}
		props[k] = strings.TrimSpace(v)
	}
	c, err := ParseConfig(props, order)
	if err != nil {
		return nil, err
	}
	if log != nil {
		for _, k := range c.Unknown {
			log.Warn("unknown or unsupported config key ignored", "key", k)
		}
	}
	return c, nil
}

// ParseProperties reads Java properties text: "key=value", "key: value" or
// "key value" lines, '#' and '!' comments, trailing-backslash continuations,
// and the escapes \t \n \r \\ \= \: \uXXXX. keys lists keys in file order.
func ParseProperties(r io.Reader) (kv map[string]string, keys []string, err error) {
	kv = map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical strings.Builder
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if n := trailingBackslashes(line); n%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		k, v := splitProperty(logical.String())
		logical.Reset()
		if _, seen := kv[k]; !seen {
			keys = append(keys, k)
		}
		kv[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if logical.Len() > 0 {
		k, v := splitProperty(logical.String())
		if _, seen := kv[k]; !seen {
			keys = append(keys, k)
		}
		kv[k] = v
	}
	return kv, keys, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// whitespace and unescapes both parts.
func splitProperty(line string) (string, string) {
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
	}
	if i > len(line) {
		i = len(line)
	}
	key := line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') && (i == len(line) || line[i] == ' ' || line[i] == '\t' || line[i] == '\f' || line[i] == '=' || line[i] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return unescapeProperty(key), unescapeProperty(rest)
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 <= len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// ParseConfig builds a Config from properties; order (optional) is the order
// in which keys are applied, so later aliases win deterministically.
func ParseConfig(props map[string]string, order []string) (*Config, error) {
	c := DefaultConfig()
	if order == nil {
		for k := range props {
			order = append(order, k)
		}
	}
	// Kafka's precedence: log.retention.ms > .minutes > .hours; log.dirs > log.dir.
	rank := map[string]int{"log.retention.hours": 1, "log.retention.minutes": 2, "log.retention.ms": 3, "log.roll.hours": 1, "log.roll.ms": 2, "log.dir": 1, "log.dirs": 2}
	best := map[string]int{}
	var advertised string
	for _, k := range order {
		v, ok := props[k]
		if !ok {
			continue
		}
		if err := c.set(k, v, rank, best, &advertised); err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %w", ErrConfig, k, v, err)
		}
	}
	if advertised != "" {
		l, err := parseListeners(advertised)
		if err != nil {
			return nil, fmt.Errorf("%w: advertised.listeners=%q: %w", ErrConfig, advertised, err)
		}
		c.AdvertisedListeners = l
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) set(k, v string, rank, best map[string]int, advertised *string) error {
	group := func(g string) bool { // true when k outranks what set g so far
		if rank[k] < best[g] {
			return false
		}
		best[g] = rank[k]
		return true
	}
	var err error
	switch k {
	case "node.id", "broker.id":
		var n int64
		n, err = strconv.ParseInt(v, 10, 32)
		c.NodeID = int32(n)
	case "listeners":
		c.Listeners, err = parseListeners(v)
	case "advertised.listeners":
		*advertised = v
	case "log.dirs", "log.dir":
		if group("dirs") {
			c.LogDirs = splitList(v)
		}
	case "num.partitions":
		var n int64
		n, err = strconv.ParseInt(v, 10, 32)
		c.NumPartitions = int32(n)
	case "auto.create.topics.enable":
		c.AutoCreateTopics, err = strconv.ParseBool(v)
	case "default.replication.factor":
		var n int64
		n, err = strconv.ParseInt(v, 10, 16)
		c.DefaultReplication = int16(n)
	case "log.segment.bytes":
		c.SegmentBytes, err = strconv.ParseInt(v, 10, 64)
	case "log.roll.ms", "log.roll.hours":
		var n int64
		if n, err = strconv.ParseInt(v, 10, 64); err == nil && group("roll") {
			if k == "log.roll.hours" {
				n *= 3600 * 1000
			}
			c.SegmentMs = n
		}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		var n int64
		if n, err = strconv.ParseInt(v, 10, 64); err == nil && group("retention") {
			switch {
			case n < 0:
				n = -1
			case k == "log.retention.minutes":
				n *= 60 * 1000
			case k == "log.retention.hours":
				n *= 3600 * 1000
			}
			c.RetentionMs = n
		}
	case "log.retention.bytes":
		c.RetentionBytes, err = strconv.ParseInt(v, 10, 64)
	case "log.flush.interval.messages":
		c.FlushMessages, err = strconv.ParseInt(v, 10, 64)
	case "log.flush.interval.ms":
		c.FlushMs, err = strconv.ParseInt(v, 10, 64)
	case "log.preallocate":
		c.Preallocate, err = strconv.ParseBool(v)
	case "message.max.bytes":
		var n int64
		n, err = strconv.ParseInt(v, 10, 32)
		c.MessageMaxBytes = int32(n)
	case "socket.request.max.bytes":
		var n int64
		n, err = strconv.ParseInt(v, 10, 32)
		c.SocketRequestMaxBytes = int32(n)
	case "connections.max.idle.ms":
		c.ConnectionsMaxIdleMs, err = strconv.ParseInt(v, 10, 64)
	case "log.message.timestamp.type":
		c.TimestampType = v
	case "log.cleanup.policy":
		c.CleanupPolicy = v
	case "strata.produce.validation":
		c.ProduceValidation = v
	case "compression.type":
		c.CompressionType = v
	case "compression.gzip.level", "compression.lz4.level", "compression.zstd.level":
		d, _ := levelDefNamed(k)
		if err = d.check(v); err == nil {
			*d.field(c), err = strconv.Atoi(strings.TrimSpace(v))
		}
	case "log.retention.check.interval.ms":
		c.RetentionCheckMs, err = strconv.ParseInt(v, 10, 64)
	case "strata.shutdown.timeout.ms":
		c.ShutdownTimeoutMs, err = strconv.ParseInt(v, 10, 64)
	case "strata.max.partitions.per.topic":
		var n int64
		n, err = strconv.ParseInt(v, 10, 32)
		c.MaxPartitionsPerTopic = int32(n)
	case "log.flush.offset.checkpoint.interval.ms":
		c.CheckpointIntervalMs, err = strconv.ParseInt(v, 10, 64)
	case "num.recovery.threads.per.data.dir":
		c.RecoveryThreads, err = strconv.Atoi(v)
	case "delete.topic.enable":
		c.DeleteTopicEnable, err = strconv.ParseBool(v)
	case "file.delete.delay.ms":
		c.FileDeleteDelayMs, err = strconv.ParseInt(v, 10, 64)
	case "log.cleaner.enable":
		c.CleanerEnable, err = strconv.ParseBool(v)
	case "log.cleaner.threads":
		c.CleanerThreads, err = strconv.Atoi(v)
	case "log.cleaner.dedupe.buffer.size":
		c.CleanerDedupeBufferBytes, err = strconv.ParseInt(v, 10, 64)
	case "log.cleaner.io.buffer.load.factor":
		c.CleanerLoadFactor, err = strconv.ParseFloat(v, 64)
	case "log.cleaner.io.max.bytes.per.second":
		c.CleanerIOMaxBytesPerSec, err = strconv.ParseFloat(v, 64)
	case "log.cleaner.backoff.ms":
		c.CleanerBackoffMs, err = strconv.ParseInt(v, 10, 64)
	case "log.cleaner.min.cleanable.ratio":
		c.MinCleanableRatio, err = strconv.ParseFloat(v, 64)
	case "log.cleaner.delete.retention.ms":
		c.DeleteRetentionMs, err = strconv.ParseInt(v, 10, 64)
	case "log.cleaner.min.compaction.lag.ms":
		c.MinCompactionLagMs, err = strconv.ParseInt(v, 10, 64)
	case "log.cleaner.max.compaction.lag.ms":
		c.MaxCompactionLagMs, err = strconv.ParseInt(v, 10, 64)
	case "group.initial.rebalance.delay.ms":
		c.GroupInitialRebalanceDelayMs, err = strconv.ParseInt(v, 10, 64)
	case "group.min.session.timeout.ms":
		c.GroupMinSessionTimeoutMs, err = parseInt32(v)
	case "group.max.session.timeout.ms":
		c.GroupMaxSessionTimeoutMs, err = parseInt32(v)
	case "group.max.size":
		c.GroupMaxSize, err = parseInt32(v)
	case "offsets.topic.num.partitions":
		c.OffsetsTopicNumPartitions, err = parseInt32(v)
	case "offsets.topic.segment.bytes":
		c.OffsetsTopicSegmentBytes, err = strconv.ParseInt(v, 10, 64)
	case "offsets.retention.minutes":
		var n int64
		if n, err = strconv.ParseInt(v, 10, 64); err == nil {
			c.OffsetsRetentionMs = n * 60 * 1000
		}
	case "offsets.retention.check.interval.ms":
		c.OffsetsRetentionCheckMs, err = strconv.ParseInt(v, 10, 64)
	case "offset.metadata.max.bytes":
		c.OffsetMetadataMaxBytes, err = parseInt32(v)
	default:
		c.Unknown = append(c.Unknown, k)
	}
	return err
}

func parseInt32(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrConfig}, a...)...) }
	switch {
	case c.NodeID < 0:
		return bad("node.id %d must not be negative", c.NodeID)
	case len(c.Listeners) == 0:
		return bad("no listeners")
	case len(c.LogDirs) == 0:
		return bad("no log.dirs")
	case c.NumPartitions < 1:
		return bad("num.partitions %d must be positive", c.NumPartitions)
	case c.MaxPartitionsPerTopic < 1 || c.NumPartitions > c.MaxPartitionsPerTopic:
		return bad("strata.max.partitions.per.topic %d must be positive and at least num.partitions %d", c.MaxPartitionsPerTopic, c.NumPartitions)
	case c.DefaultReplication != 1:
		return bad("default.replication.factor %d: a single node serves only 1", c.DefaultReplication)
	case c.SegmentBytes < 14 || c.SegmentBytes > math.MaxInt32:
		return bad("log.segment.bytes %d out of range", c.SegmentBytes)
	case c.SegmentMs < 1:
		return bad("log.roll.ms %d must be positive", c.SegmentMs)
	case c.FlushMessages < 1 || c.FlushMs < 1:
		return bad("log.flush.interval.* must be positive")
	case c.RetentionCheckMs < 1:
		return bad("log.retention.check.interval.ms %d must be positive", c.RetentionCheckMs)
	case c.CheckpointIntervalMs < 1:
		return bad("log.flush.offset.checkpoint.interval.ms %d must be positive", c.CheckpointIntervalMs)
	case c.RecoveryThreads < 1:
		return bad("num.recovery.threads.per.data.dir %d must be positive", c.RecoveryThreads)
	case c.FileDeleteDelayMs < 0:
		return bad("file.delete.delay.ms %d must not be negative", c.FileDeleteDelayMs)
	case c.CleanerThreads < 1 || c.CleanerDedupeBufferBytes < 1 || c.CleanerLoadFactor <= 0 || c.CleanerLoadFactor > 1 || c.CleanerBackoffMs < 0:
		return bad("log.cleaner.* settings out of range")
	case c.MinCleanableRatio < 0 || c.MinCleanableRatio > 1 || c.DeleteRetentionMs < 0 || c.MinCompactionLagMs < 0 || c.MaxCompactionLagMs < 1:
		return bad("log.cleaner.* topic defaults out of range")
	case c.MessageMaxBytes < 0:
		return bad("message.max.bytes %d must not be negative", c.MessageMaxBytes)
	case c.SocketRequestMaxBytes < 1:
		return bad("socket.request.max.bytes %d must be positive", c.SocketRequestMaxBytes)
	case c.GroupInitialRebalanceDelayMs < 0:
		return bad("group.initial.rebalance.delay.ms %d must not be negative", c.GroupInitialRebalanceDelayMs)
	case c.GroupMinSessionTimeoutMs < 1 || c.GroupMaxSessionTimeoutMs < c.GroupMinSessionTimeoutMs:
		return bad("group.min/max.session.timeout.ms %d/%d out of range", c.GroupMinSessionTimeoutMs, c.GroupMaxSessionTimeoutMs)
	case c.GroupMaxSize < 1:
		return bad("group.max.size %d must be positive", c.GroupMaxSize)
	case c.OffsetsTopicNumPartitions < 1:
		return bad("offsets.topic.num.partitions %d must be positive", c.OffsetsTopicNumPartitions)
	case c.OffsetsTopicSegmentBytes < 14 || c.OffsetsTopicSegmentBytes > math.MaxInt32:
		return bad("offsets.topic.segment.bytes %d out of range", c.OffsetsTopicSegmentBytes)
	case c.OffsetsRetentionMs < 1 || c.OffsetsRetentionCheckMs < 1:
		return bad("offsets.retention.* must be positive")
	case c.OffsetMetadataMaxBytes < 0:
		return bad("offset.metadata.max.bytes %d must not be negative", c.OffsetMetadataMaxBytes)
	}
	if err := checkTimestampType(c.TimestampType); err != nil {
		return bad("log.message.timestamp.type: %v", err)
	}
	if _, err := parseCleanupPolicy(c.CleanupPolicy); err != nil {
		return bad("log.cleanup.policy: %v", err)
	}
	if err := checkCompressionType(c.CompressionType); err != nil {
		return bad("compression.type %q: %v", c.CompressionType, err)
	}
	if c.ProduceValidation != "full" && c.ProduceValidation != "header" {
		return bad("strata.produce.validation %q: want full or header", c.ProduceValidation)
	}
	for _, l := range c.AdvertisedListeners {
		if l.Host == "" {
			return bad("advertised listener %s needs a host", l)
		}
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseListeners parses "PLAINTEXT://host:port[,...]". Only PLAINTEXT is served.
func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	for _, s := range splitList(v) {
		name, addr, ok := strings.Cut(s, "://")
		if !ok {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", s)
		}
		if name != "PLAINTEXT" {
			return nil, fmt.Errorf("listener %q: only PLAINTEXT is supported", s)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", s, err)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("listener %q: port: %w", s, err)
		}
		out = append(out, Listener{Name: name, Host: host, Port: int32(p)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty listener list")
	}
	return out, nil
}

func checkTimestampType(v string) error {
	if v != "CreateTime" && v != "LogAppendTime" {
		return fmt.Errorf("%q: want CreateTime or LogAppendTime", v)
	}
	return nil
}

// parseCleanupPolicy checks a cleanup.policy list and says whether it
// includes compact.
func parseCleanupPolicy(v string) (compact bool, err error) {
	list := splitList(v)
	if len(list) == 0 {
		return false, fmt.Errorf("empty policy")
	}
	for _, p := range list {
		switch p {
		case "compact":
			compact = true
		case "delete":
		default:
			return false, fmt.Errorf("%q: want delete and/or compact", p)
		}
	}
	return compact, nil
}
