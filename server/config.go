package server

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/internal/metrics"
)

// Config is the broker configuration, with Kafka's property names. Build one
// with DefaultConfig, LoadConfig or ParseConfig; zero values are not
// defaults, and a zero means what Kafka's 0 means (retention.ms=0: delete at
// once). What each property accepts and means is in one table,
// brokerConfigDefs (configdefs.go); a topic's effective config is a copy of
// this one with its overrides stored through topicConfigDefs.
type Config struct {
	NodeID                int32             // node.id / broker.id (default 0; -1 in cluster mode: generated)
	Listeners             []Listener        // listeners (default PLAINTEXT://127.0.0.1:9092)
	AdvertisedListeners   []Listener        // advertised.listeners (default: listeners)
	LogDirs               []string          // log.dirs / log.dir (default ./data)
	NumPartitions         int32             // num.partitions (default 1)
	AutoCreateTopics      bool              // auto.create.topics.enable (default true)
	DefaultReplication    int16             // default.replication.factor (default 1; a single node serves only 1)
	SegmentBytes          int64             // log.segment.bytes (default 1 GiB)
	SegmentMs             int64             // log.roll.ms / log.roll.hours (default 7 days)
	RetentionMs           int64             // log.retention.ms / .minutes / .hours (default 7 days; -1 forever; a topic's 0 deletes at once)
	RetentionBytes        int64             // log.retention.bytes (default -1; negative: no limit; 0 keeps nothing)
	FlushMessages         int64             // log.flush.interval.messages (default: never)
	FlushMs               int64             // log.flush.interval.ms (default: never; 0 at the flusher's next check)
	Preallocate           bool              // log.preallocate: fallocate segment files ahead of the writer (default false)
	MessageMaxBytes       int32             // message.max.bytes (default 1048588)
	SocketRequestMaxBytes int32             // socket.request.max.bytes (default 104857600)
	ConnectionsMaxIdleMs  int64             // connections.max.idle.ms (default 600000; negative: never)
	ShutdownTimeoutMs     int64             // strata.shutdown.timeout.ms: wait for in-flight requests (default 30000)
	MetricsListener       string            // strata.metrics.listener: host:port of /metrics and the status page (default 127.0.0.1:9644; empty: off)
	metrics               *metrics.Registry // the running broker's registry (set by Start): log flushes report to it
	RequestSlowMs         int64             // strata.request.slow.ms: log a request slower than this (default 1000; 0 every request; negative off)
	LogSummaryIntervalMs  int64             // strata.log.summary.interval.ms: the broker's one-line summary (default 60000; 0 or negative off)
	ConsumerLagRefreshMs  int64             // strata.consumer.lag.refresh.ms: how often a coordinator asks leaders elsewhere for high watermarks (default 10000; 0 or negative off)
	LogFormat             string            // strata.log.format: text (default) or json; read by "strata broker"
	MaxPartitionsPerTopic int32             // strata.max.partitions.per.topic: CreateTopics/CreatePartitions cap (default 10000)
	RetentionCheckMs      int64             // log.retention.check.interval.ms (default 300000)
	TimestampType         string            // log.message.timestamp.type: CreateTime (default) or LogAppendTime
	CleanupPolicy         string            // log.cleanup.policy: delete (default), compact or both
	CheckpointIntervalMs  int64             // log.flush.offset.checkpoint.interval.ms (default 60000)
	RecoveryThreads       int               // num.recovery.threads.per.data.dir (default 2)
	DeleteTopicEnable     bool              // delete.topic.enable (default true)
	FileDeleteDelayMs     int64             // file.delete.delay.ms: deleted topics' dirs linger (default 60000)
	// Resource bounds, Kafka's names and defaults (conn_limits.go).
	MaxConnections               int32            // max.connections (default unlimited): at the limit the broker stops accepting
	MaxConnectionsPerIP          int32            // max.connections.per.ip (default unlimited): more are closed at once
	MaxConnectionsPerIPOverrides map[string]int32 // max.connections.per.ip.overrides: host or address -> limit
	QueuedMaxRequestBytes        int64            // queued.max.request.bytes: memory for requests read but not served (default -1: no limit)
	FetchMaxBytes                int32            // fetch.max.bytes: record bytes per Fetch response (default 55 MiB)
	QuotaWindowNum               int              // quota.window.num: samples of a client quota's rate (default 11)
	QuotaWindowSizeSeconds       int              // quota.window.size.seconds: each sample's time span (default 1)
	// Cleaner settings (log.cleaner.*), Kafka's defaults.
	CleanerEnable            bool    // log.cleaner.enable (default true)
	CleanerThreads           int     // log.cleaner.threads (default 1)
	CleanerDedupeBufferBytes int64   // log.cleaner.dedupe.buffer.size (default 128 MiB)
	CleanerLoadFactor        float64 // log.cleaner.io.buffer.load.factor (default 0.9)
	CleanerIOMaxBytesPerSec  float64 // log.cleaner.io.max.bytes.per.second (default math.MaxFloat64: unlimited)
	// AlterLogDirsIOMaxBytesPerSec is replica.alter.log.dirs.io.max.bytes.per.second:
	// the copy rate of a replica moving between log dirs (0: unlimited).
	AlterLogDirsIOMaxBytesPerSec int64
	CleanerBackoffMs             int64   // log.cleaner.backoff.ms (default 15000)
	MinCleanableRatio            float64 // log.cleaner.min.cleanable.ratio (default 0.5)
	DeleteRetentionMs            int64   // log.cleaner.delete.retention.ms (default 1 day)
	MinCompactionLagMs           int64   // log.cleaner.min.compaction.lag.ms (default 0)
	MaxCompactionLagMs           int64   // log.cleaner.max.compaction.lag.ms (default: never)
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
	// Transaction coordinator (txn_coord.go), Kafka's names and defaults.
	TxnStateNumPartitions int32 // transaction.state.log.num.partitions (50)
	TxnStateSegmentBytes  int64 // transaction.state.log.segment.bytes (100 MiB)
	// TxnStateReplicationFactor and TxnStateMinISR are
	// transaction.state.log.replication.factor (3) and
	// transaction.state.log.min.isr (2), used in cluster mode.
	TxnStateReplicationFactor int16
	TxnStateMinISR            int32
	TxnMaxTimeoutMs           int32 // transaction.max.timeout.ms (900000)
	TxnIDExpirationMs         int64 // transactional.id.expiration.ms (7 days)
	TxnAbortIntervalMs        int64 // transaction.abort.timed.out.transaction.cleanup.interval.ms (10000)
	TxnRemoveIntervalMs       int64 // transaction.remove.expired.transaction.cleanup.interval.ms (3600000)
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
	// Cluster mode (cluster_config.go): zookeeper.connect turns it on.
	Cluster ClusterConfig
	// Security: TLS and SASL properties (security_config.go).
	Security SecurityConfig
	Unknown  []string // keys seen but not understood (warned about)
}

// Listener is one NAME://host:port endpoint. The name is the listener's
// (PLAINTEXT, or any name listener.security.protocol.map maps to a
// protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL).
type Listener struct {
	Name string // listener name, upper case
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
	// DefaultMetricsListener is strata.metrics.listener's default: the
	// port Redpanda uses for its metrics, on loopback.
	DefaultMetricsListener = "127.0.0.1:9644"
	DefaultFetchMaxBytes   = 55 << 20
	// DefaultRequestSlowMs is strata.request.slow.ms's default: a request
	// that took a second (a consumer fetch's long-poll wait not counted)
	// is worth a line.
	DefaultRequestSlowMs = 1000
	// DefaultLogSummaryIntervalMs is strata.log.summary.interval.ms's
	// default: a summary line a minute.
	DefaultLogSummaryIntervalMs = 60000
	// DefaultConsumerLagRefreshMs is strata.consumer.lag.refresh.ms's
	// default: the high watermarks of partitions led elsewhere, for
	// consumer lag, are at most ten seconds old (Burrow's default
	// offset refresh).
	DefaultConsumerLagRefreshMs = 10000
	defaultSegmentBytes         = 1 << 30
	defaultWeekMs               = 7 * 24 * 3600 * 1000
)

// DefaultConfig is the embedded single-node default.
func DefaultConfig() *Config {
	l, _ := parseListeners(DefaultListener)
	return &Config{
		Listeners:              l,
		LogDirs:                []string{DefaultLogDir},
		NumPartitions:          1,
		AutoCreateTopics:       true,
		DefaultReplication:     1,
		SegmentBytes:           defaultSegmentBytes,
		SegmentMs:              defaultWeekMs,
		RetentionMs:            defaultWeekMs,
		RetentionBytes:         -1,
		FlushMessages:          math.MaxInt64,
		FlushMs:                math.MaxInt64,
		MessageMaxBytes:        DefaultMessageMaxBytes,
		SocketRequestMaxBytes:  DefaultSocketRequestMaxBytes,
		ConnectionsMaxIdleMs:   600000,
		QuotaWindowNum:         11,
		QuotaWindowSizeSeconds: 1,
		ShutdownTimeoutMs:      30000,
		MetricsListener:        DefaultMetricsListener,
		RequestSlowMs:          DefaultRequestSlowMs,
		LogSummaryIntervalMs:   DefaultLogSummaryIntervalMs,
		ConsumerLagRefreshMs:   DefaultConsumerLagRefreshMs,
		LogFormat:              "text",
		MaxPartitionsPerTopic:  DefaultMaxPartitionsPerTopic,
		RetentionCheckMs:       300000,
		TimestampType:          "CreateTime",
		CleanupPolicy:          "delete",
		ProduceValidation:      "full",
		CompressionType:        "producer",
		GzipLevel:              -1,
		LZ4Level:               lz4DefaultLevel,
		ZstdLevel:              3,
		CheckpointIntervalMs:   60000,
		RecoveryThreads:        2,
		DeleteTopicEnable:      true,
		FileDeleteDelayMs:      60000,

		MaxConnections:        math.MaxInt32,
		MaxConnectionsPerIP:   math.MaxInt32,
		QueuedMaxRequestBytes: -1,
		FetchMaxBytes:         DefaultFetchMaxBytes,

		CleanerEnable:            true,
		CleanerThreads:           1,
		CleanerDedupeBufferBytes: 128 << 20,
		CleanerLoadFactor:        0.9,
		CleanerIOMaxBytesPerSec:  math.MaxFloat64,
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
		TxnStateNumPartitions:        50,
		TxnStateSegmentBytes:         100 << 20,
		TxnStateReplicationFactor:    3,
		TxnStateMinISR:               2,
		TxnMaxTimeoutMs:              900000,
		TxnIDExpirationMs:            defaultWeekMs,
		TxnAbortIntervalMs:           10000,
		TxnRemoveIntervalMs:          3600000,

		Cluster: defaultClusterConfig(),
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
// in which keys are applied, so later aliases win deterministically. Each
// key is parsed and checked by its def in brokerConfigDefs.
func ParseConfig(props map[string]string, order []string) (*Config, error) {
	c := DefaultConfig()
	if order == nil {
		for k := range props {
			order = append(order, k)
		}
		sort.Strings(order)
	}
	best := map[string]int{} // highest rank set so far per property
	for _, k := range order {
		v, ok := props[k]
		if !ok {
			continue
		}
		d := brokerConfig(k)
		if d == nil && c.Security.set(k, v) {
			continue
		}
		if d == nil {
			c.Unknown = append(c.Unknown, k)
			continue
		}
		primary := d.name
		if d.alias != "" {
			primary = d.alias
		}
		if r, seen := best[primary]; seen && d.rank < r {
			continue // a more precise spelling was set (Kafka's .ms over .hours)
		}
		best[primary] = d.rank
		if err := d.val.set(c, v); err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %w", ErrConfig, k, v, err)
		}
	}
	if _, set := best["node.id"]; !set && c.Cluster.ZookeeperConnect != "" {
		c.NodeID = -1 // Kafka's broker.id default in ZooKeeper mode: generated
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate reports the first invalid setting: each property's check from
// brokerConfigDefs, then the checks across properties.
func (c *Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrConfig}, a...)...) }
	for i := range brokerConfigDefs {
		d := &brokerConfigDefs[i]
		if d.alias != "" {
			continue // checked through its primary
		}
		if err := d.val.check(c); err != nil {
			return bad("%s: %v", d.name, err)
		}
	}
	switch {
	case c.NumPartitions > c.MaxPartitionsPerTopic:
		return bad("strata.max.partitions.per.topic %d must be at least num.partitions %d", c.MaxPartitionsPerTopic, c.NumPartitions)
	case c.CleanerDedupeBufferBytes/int64(c.CleanerThreads) < cleaner.SlotBytes:
		return bad("log.cleaner.dedupe.buffer.size %d too small for %d threads", c.CleanerDedupeBufferBytes, c.CleanerThreads)
	case c.GroupMaxSessionTimeoutMs < c.GroupMinSessionTimeoutMs:
		return bad("group.max.session.timeout.ms %d below group.min.session.timeout.ms %d", c.GroupMaxSessionTimeoutMs, c.GroupMinSessionTimeoutMs)
	case c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0:
		return bad("max.connections.per.ip may be 0 only with max.connections.per.ip.overrides")
	case c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes):
		return bad("queued.max.request.bytes %d must be at least socket.request.max.bytes %d (or -1: no limit)", c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes)
	}
	if err := checkLogConfig(c); err != nil {
		return bad("%v", err)
	}
	if err := checkClusterConfig(c); err != nil {
		return bad("%v", err)
	}
	if err := checkSecurity(c); err != nil {
		return bad("%v", err)
	}
	return nil
}

// checkLogConfig is Kafka's LogConfig.validateValues, the check across a
// log's settings, for the broker's defaults and each topic's effective
// config.
func checkLogConfig(c *Config) error {
	if c.MinCompactionLagMs > c.MaxCompactionLagMs {
		return fmt.Errorf("min.compaction.lag.ms %d above max.compaction.lag.ms %d", c.MinCompactionLagMs, c.MaxCompactionLagMs)
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

// parseListeners parses "NAME://host:port[,...]"; names are upper-cased,
// as Kafka does, and must be distinct. Which protocol a name speaks is
// listener.security.protocol.map's (checked in Validate).
func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	for _, s := range splitList(v) {
		name, addr, ok := strings.Cut(s, "://")
		if !ok || !validListenerName(name) {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", s)
		}
		name = strings.ToUpper(name)
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("listener name %s is used more than once: each listener needs a name of its own", name)
			}
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
	return out, nil
}

func checkListeners(l []Listener) error {
	if len(l) == 0 {
		return fmt.Errorf("no listeners")
	}
	return nil
}

// checkAdvertised accepts no advertised listeners (then: listeners) or ones
// with a host clients can dial.
func checkAdvertised(l []Listener) error {
	for _, a := range l {
		if a.Host == "" {
			return fmt.Errorf("advertised listener %s needs a host", a)
		}
	}
	return nil
}

func joinListeners(l []Listener) string {
	s := make([]string, len(l))
	for i, a := range l {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

func parseDirs(v string) ([]string, error) { return splitList(v), nil }

func checkDirs(d []string) error {
	if len(d) == 0 {
		return fmt.Errorf("no log dirs")
	}
	return nil
}

// parseIPOverrides parses max.connections.per.ip.overrides: host:count
// pairs, comma separated; a host is an address or a name (resolved when the
// broker starts). An IPv6 address may be bracketed.
func parseIPOverrides(v string) (map[string]int32, error) {
	var out map[string]int32
	for _, p := range splitList(v) {
		i := strings.LastIndexByte(p, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q: want host:count", p)
		}
		host := strings.Trim(strings.TrimSpace(p[:i]), "[]")
		n, err := strconv.ParseInt(strings.TrimSpace(p[i+1:]), 10, 32)
		if err != nil || n < 0 || host == "" {
			return nil, fmt.Errorf("%q: want host:count with a count of at least 0", p)
		}
		if out == nil {
			out = map[string]int32{}
		}
		out[host] = int32(n)
	}
	return out, nil
}

func showIPOverrides(m map[string]int32) string {
	s := make([]string, 0, len(m))
	for h, n := range m {
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		s = append(s, h+":"+strconv.Itoa(int(n)))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
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
