package server

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/segment"
)

// appliedSettings is what the broker does with a topic's effective config: the log's
// options, the cleaner's config and the produce settings.
type appliedSettings struct {
	seg     segment.Options // the fields a topic config sets
	clean   cleaner.LogConfig
	produce produceSettings
	flags   [2]bool // LogAppendTime, compacted
	// replication: min.insync.replicas and unclean.leader.election.enable
	// (cluster mode's acks=all check and the controller's election).
	minISR  int32
	unclean bool
}

func settingsOf(t *testing.T, c *Config) appliedSettings {
	t.Helper()
	o, err := segmentOptions(c, testLogger())
	if err != nil {
		t.Fatalf("segment options: %v", err)
	}
	compact, err := parseCleanupPolicy(c.CleanupPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return appliedSettings{
		seg:     logFields(*o),
		clean:   *cleanerLogConfig(c),
		produce: *produceSettingsOf(c),
		flags:   [2]bool{c.TimestampType == "LogAppendTime", compact},
		minISR:  c.Cluster.MinInsyncReplicas,
		unclean: c.Cluster.UncleanLeaderElectionEnable,
	}
}

// logFields keeps the options a topic config sets.
func logFields(o segment.Options) segment.Options {
	return segment.Options{SegmentBytes: o.SegmentBytes, SegmentMs: o.SegmentMs, RetentionMs: o.RetentionMs, RetentionBytes: o.RetentionBytes,
		FlushMessages: o.FlushMessages, FlushMs: o.FlushMs, Preallocate: o.Preallocate}
}

// meaningCases gives each applied topic config a value whose meaning differs
// from the default, edge values (0, -1) where Kafka gives them one, and the
// other overrides it needs to take effect (a level needs its codec).
// broker is false where Kafka refuses the value at the broker.
var meaningCases = []struct {
	name, value string
	with        []string
	brokerOK    bool
}{
	{"cleanup.policy", "compact,delete", nil, true},
	{"cleanup.policy", "compact", nil, true},
	{"compression.gzip.level", "1", []string{"compression.type", "gzip"}, true},
	{"compression.lz4.level", "17", []string{"compression.type", "lz4"}, true},
	{"compression.type", "zstd", nil, true},
	{"compression.type", "uncompressed", nil, true},
	{"compression.zstd.level", "-5", []string{"compression.type", "zstd"}, true},
	{"delete.retention.ms", "0", nil, true},
	{"flush.messages", "1", nil, true},
	{"flush.ms", "0", nil, true},
	{"flush.ms", "250", nil, true},
	{"max.compaction.lag.ms", "1", nil, true},
	{"max.message.bytes", "0", nil, true},
	{"message.timestamp.type", "LogAppendTime", nil, true},
	{"min.cleanable.dirty.ratio", "0", nil, true},
	{"min.compaction.lag.ms", "5", nil, true},
	{"min.insync.replicas", "2", nil, true},
	{"preallocate", "TRUE", nil, true},
	{"retention.bytes", "0", nil, true},
	{"retention.bytes", "1", nil, true},
	{"retention.ms", "-1", nil, true},
	{"retention.ms", "0", nil, false}, // a topic may delete at once; the broker default may not
	{"retention.ms", "1", nil, true},
	{"segment.bytes", "14", nil, true},
	{"segment.ms", "1", nil, true},
	{"unclean.leader.election.enable", "true", nil, true},
}

// TestConfigMeaning: each applied topic config means the same whichever path
// sets it: as the broker property (its synonym) in server.properties, as a
// topic override resolved by topicConfig, through CreateTopics, through
// IncrementalAlterConfigs on a live topic, through AlterConfigs, and after a
// restart from the topic table; DescribeConfigs reports the value in effect
// and the live log, cleaner config and produce settings are the ones the
// value gives. Each case's value changes what is applied, so a value that a
// path dropped or defaulted would show.
func TestConfigMeaning(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range meaningCases {
		covered[c.name] = true
	}
	for i := range topicConfigDefs {
		if d := &topicConfigDefs[i]; d.applied() && !covered[d.name] {
			t.Errorf("topic config %s has no case in meaningCases", d.name)
		}
	}

	base := DefaultConfig()
	dir := t.TempDir()
	s := startServer(t, dir)
	r := dialRaw(t, s)
	type made struct {
		topic string
		want  appliedSettings
		value string // normalized
	}
	var topics []made
	for i, c := range meaningCases {
		d := topicConfigDef(c.name)
		overrides := map[string]string{c.name: c.value}
		for j := 0; j+1 < len(c.with); j += 2 {
			overrides[c.with[j]] = c.with[j+1]
		}
		eff, applied, err := topicConfig(base, overrides, strictAll, testLogger())
		if err != nil || !applied[c.name] {
			t.Fatalf("%s=%s: topic override: %v (applied %v)", c.name, c.value, err, applied)
		}
		want := settingsOf(t, eff)
		value := d.val.get(eff)

		// The broker property gives the same settings as the override.
		props := map[string]string{d.synonym: c.value}
		for j := 0; j+1 < len(c.with); j += 2 {
			props[topicConfigDef(c.with[j]).synonym] = c.with[j+1]
		}
		bc, err := ParseConfig(props, nil)
		switch {
		case c.brokerOK && err != nil:
			t.Fatalf("%s=%s: broker %s refused: %v", c.name, c.value, d.synonym, err)
		case !c.brokerOK && err == nil:
			t.Fatalf("%s=%s: broker %s accepted, Kafka refuses it", c.name, c.value, d.synonym)
		case c.brokerOK:
			if got := settingsOf(t, bc); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s=%s: broker %s applies %+v, the topic override %+v", c.name, c.value, d.synonym, got, want)
			}
			if bv, _ := brokerValue(bc, d.synonym); bv != value {
				t.Fatalf("%s=%s: broker value %q, topic value %q", c.name, c.value, bv, value)
			}
		}
		// And differ from the defaults: the value reaches what is applied.
		extra := map[string]string{}
		for j := 0; j+1 < len(c.with); j += 2 {
			extra[c.with[j]] = c.with[j+1]
		}
		ctx, _, _ := topicConfig(base, extra, strictAll, testLogger())
		if reflect.DeepEqual(settingsOf(t, ctx), want) {
			t.Fatalf("%s=%s applies the same as without it: %+v", c.name, c.value, want)
		}

		// Through CreateTopics.
		created := fmt.Sprintf("mean-%d", i)
		kv := []string{c.name, c.value}
		kv = append(kv, c.with...)
		if code := createWithConfigs(t, r, created, kv...); code != 0 {
			t.Fatalf("%s=%s: CreateTopics error %d", c.name, c.value, code)
		}
		topics = append(topics, made{created, want, value})
		// Through IncrementalAlterConfigs on a live topic.
		altered := fmt.Sprintf("inc-%d", i)
		if code := createWithConfigs(t, r, altered); code != 0 {
			t.Fatal(code)
		}
		ops := []any{c.name, kmsg.IncrementalAlterConfigOpSet, c.value}
		for j := 0; j+1 < len(c.with); j += 2 {
			ops = append(ops, c.with[j], kmsg.IncrementalAlterConfigOpSet, c.with[j+1])
		}
		if code := incAlter(t, s, 1, altered, ops...); code != 0 {
			t.Fatalf("%s=%s: IncrementalAlterConfigs error %d", c.name, c.value, code)
		}
		topics = append(topics, made{altered, want, value})
		// Through AlterConfigs.
		replaced := fmt.Sprintf("alt-%d", i)
		if code := createWithConfigs(t, r, replaced); code != 0 {
			t.Fatal(code)
		}
		if code := alterConfigs(t, s, 1, false, kmsg.ConfigResourceTypeTopic, replaced, kv...); code != 0 {
			t.Fatalf("%s=%s: AlterConfigs error %d", c.name, c.value, code)
		}
		topics = append(topics, made{replaced, want, value})
	}

	check := func(s *Server, when string) {
		t.Helper()
		for _, m := range topics {
			tp := s.topics.get(m.topic)
			got := settingsOf(t, s.topics.effective(tp))
			if !reflect.DeepEqual(got, m.want) {
				t.Fatalf("%s %s: effective config applies %+v, want %+v", when, m.topic, got, m.want)
			}
			if lo := logFields(liveOpts(s, m.topic)); !reflect.DeepEqual(lo, m.want.seg) {
				t.Fatalf("%s %s: live log options %+v, want %+v", when, m.topic, lo, m.want.seg)
			}
			if ps := *tp.produceSettings(s.cfg); ps != m.want.produce || tp.logAppendTime.Load() != m.want.flags[0] || tp.compacted.Load() != m.want.flags[1] {
				t.Fatalf("%s %s: produce settings %+v flags %v %v, want %+v %v", when, m.topic, ps, tp.logAppendTime.Load(), tp.compacted.Load(), m.want.produce, m.want.flags)
			}
		}
	}
	check(s, "live")
	// DescribeConfigs reports the value in effect as a topic override.
	for i, c := range meaningCases {
		for _, m := range topics[3*i : 3*i+3] {
			res := describeConfigs(t, s, 4, kmsg.ConfigResourceTypeTopic, m.topic, false, c.name)
			got := configOf(res, c.name)
			if got == nil || got.Value == nil || *got.Value != m.value || got.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Fatalf("%s: DescribeConfigs %s = %+v, want %q from the topic", m.topic, c.name, got, m.value)
			}
		}
	}
	s.Close()
	check(startServer(t, dir), "after a restart,")
}

// TestBrokerConfigDefs: every broker property's default passes its own
// check and reads back through its parser unchanged, and edge values take
// Kafka's meaning.
func TestBrokerConfigDefs(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range brokerConfigDefs {
		d := &brokerConfigDefs[i]
		if d.alias != "" {
			if brokerConfig(d.alias) == nil {
				t.Errorf("%s: alias of unknown %s", d.name, d.alias)
			}
			continue
		}
		v := d.val.get(def)
		c := DefaultConfig()
		if v == "" && (d.name == "advertised.listeners" || d.name == "max.connections.per.ip.overrides") {
			continue // empty: none
		}
		if err := d.val.set(c, v); err != nil || d.val.get(c) != v {
			t.Errorf("%s: default %q does not read back: %v, %q", d.name, v, err, d.val.get(c))
		}
	}
	for _, c := range []struct {
		kv   string
		ok   bool
		get  func(*Config) any
		want any
	}{
		{"connections.max.idle.ms=-1", true, func(c *Config) any { return c.ConnectionsMaxIdleMs }, int64(-1)},
		{"max.connections=0", true, func(c *Config) any { return c.MaxConnections }, int32(0)},
		{"max.connections.per.ip=0", false, nil, nil}, // only with overrides
		{"queued.max.request.bytes=0", true, func(c *Config) any { return c.QueuedMaxRequestBytes }, int64(0)},
		{"queued.max.request.bytes=1000", false, nil, nil}, // below socket.request.max.bytes
		{"fetch.max.bytes=1023", false, nil, nil},
		{"log.flush.interval.ms=0", true, func(c *Config) any { return c.FlushMs }, int64(0)},
		{"log.cleaner.backoff.ms=0", true, func(c *Config) any { return c.CleanerBackoffMs }, int64(0)},
		{"log.cleaner.io.max.bytes.per.second=0", false, nil, nil},
		{"log.cleaner.min.cleanable.ratio=NaN", false, nil, nil},
		{"log.preallocate=1", false, nil, nil}, // Kafka's BOOLEAN is true or false
		{"log.retention.bytes=-7", true, func(c *Config) any { return c.RetentionBytes }, int64(-7)},
		{"log.roll.hours=0", false, nil, nil},
		{"log.roll.hours=2", true, func(c *Config) any { return c.SegmentMs }, int64(2 * 3600 * 1000)},
		{"offsets.retention.minutes=0", false, nil, nil},
	} {
		cfg, err := LoadConfig("", []string{c.kv}, nil)
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok=%v", c.kv, err, c.ok)
			continue
		}
		if c.ok {
			if got := c.get(cfg); got != c.want {
				t.Errorf("%s: %v, want %v", c.kv, got, c.want)
			}
		}
	}
	cfg, err := LoadConfig("", []string{"max.connections.per.ip=0", "max.connections.per.ip.overrides=127.0.0.1:5, [::1]:6 ,localhost:0"}, nil)
	if err != nil || cfg.MaxConnectionsPerIPOverrides["127.0.0.1"] != 5 || cfg.MaxConnectionsPerIPOverrides["::1"] != 6 || len(cfg.MaxConnectionsPerIPOverrides) != 3 {
		t.Fatalf("per-ip overrides: %v %v", err, cfg)
	}
}
