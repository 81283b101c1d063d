package server

import (
	"testing"

	"github.com/stratalog/strata/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeConfigs(t *testing.T, s *Server, v int16, typ kmsg.ConfigResourceType, name string, synonyms bool, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = synonyms, synonyms
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, names
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), clientAt(t, s, kmsg.DescribeConfigs, v))
	if err != nil { // the client pinned at v sends v (the broker advertises 0 up)
		t.Fatalf("describe v%d: %v", req.Version, err)
	}
	return resp.Resources[0]
}

func configOf(res kmsg.DescribeConfigsResponseResource, name string) *kmsg.DescribeConfigsResponseResourceConfig {
	for i := range res.Configs {
		if res.Configs[i].Name == name {
			return &res.Configs[i]
		}
	}
	return nil
}

func TestDescribeConfigs(t *testing.T) {
	s := startServer(t, t.TempDir(), "log.retention.ms=3600000")
	createTopicWith(t, newClient(t, s), "cfg", 1, "segment.bytes", "4096")
	res := describeConfigs(t, s, 0, kmsg.ConfigResourceTypeTopic, "cfg", false)
	if res.ErrorCode != 0 || len(res.Configs) != appliedTopicConfigs() {
		t.Fatalf("v0: error %d, %d configs", res.ErrorCode, len(res.Configs))
	}
	for name, want := range map[string]struct {
		v   string
		def bool
	}{"segment.bytes": {"4096", false}, "retention.ms": {"3600000", false}, "cleanup.policy": {"delete", true}} {
		c := configOf(res, name)
		if c == nil || *c.Value != want.v || c.IsDefault != want.def {
			t.Fatalf("v0 %s: %+v", name, c)
		}
	}
	for _, v := range []int16{1, 3, 4} {
		res := describeConfigs(t, s, v, kmsg.ConfigResourceTypeTopic, "cfg", true, "segment.bytes", "retention.ms")
		if len(res.Configs) != 2 {
			t.Fatalf("v%d: config names filter: %d configs", v, len(res.Configs))
		}
		sb, rm := configOf(res, "segment.bytes"), configOf(res, "retention.ms")
		if sb.Source != kmsg.ConfigSourceDynamicTopicConfig || len(sb.ConfigSynonyms) != 2 ||
			sb.ConfigSynonyms[0].Name != "segment.bytes" || sb.ConfigSynonyms[1].Name != "log.segment.bytes" ||
			sb.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("v%d segment.bytes: %+v", v, sb)
		}
		if rm.Source != kmsg.ConfigSourceStaticBrokerConfig || len(rm.ConfigSynonyms) != 2 ||
			*rm.ConfigSynonyms[0].Value != "3600000" || *rm.ConfigSynonyms[1].Value != "604800000" {
			t.Fatalf("v%d retention.ms: %+v", v, rm)
		}
		if v >= 3 && (sb.ConfigType != kmsg.ConfigTypeInt || rm.ConfigType != kmsg.ConfigTypeLong || sb.Documentation == nil) {
			t.Fatalf("v%d: type/doc: %+v", v, sb)
		}
	}
	b := describeConfigs(t, s, 4, kmsg.ConfigResourceTypeBroker, "0", true)
	if c := configOf(b, "log.retention.ms"); b.ErrorCode != 0 || c == nil || *c.Value != "3600000" || !c.ReadOnly || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("broker: %d %+v", b.ErrorCode, c)
	}
	if c := configOf(b, "num.partitions"); c == nil || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("broker num.partitions: %+v", c)
	}
	if r := describeConfigs(t, s, 4, kmsg.ConfigResourceTypeTopic, "nope", false); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", r.ErrorCode)
	}
	if r := describeConfigs(t, s, 2, kmsg.ConfigResourceTypeBrokerLogger, "0", false); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("broker logger: %d", r.ErrorCode)
	}
}

func alterConfigs(t *testing.T, s *Server, v int16, validateOnly bool, typ kmsg.ConfigResourceType, name string, kv ...string) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), clientAt(t, s, kmsg.AlterConfigs, v))
	if err != nil { // the client pinned at v sends v (the broker advertises 0 up)
		t.Fatalf("alter v%d: %v", req.Version, err)
	}
	return resp.Resources[0].ErrorCode
}

func liveOpts(s *Server, topic string) segment.Options {
	return s.topics.partition(topic, 0).log.(*movableLog).cur().Options()
}

func TestAlterConfigs(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	createTopicWith(t, newClient(t, s), "alt", 1, "segment.bytes", "4096")
	top := kmsg.ConfigResourceTypeTopic
	for _, c := range []struct {
		v    int16
		kv   []string
		want int16
		typ  kmsg.ConfigResourceType
		name string
	}{
		{0, []string{"foo.bar", "1"}, kerr.InvalidConfig.Code, top, "alt"},
		{1, []string{"segment.bytes", "abc"}, kerr.InvalidConfig.Code, top, "alt"},
		{1, []string{"retention.ms", "-5"}, kerr.InvalidConfig.Code, top, "alt"},
		{2, []string{"retention.ms", "1000"}, kerr.UnknownTopicOrPartition.Code, top, "nope"},
		{2, []string{"log.retention.ms", "1000"}, kerr.InvalidRequest.Code, kmsg.ConfigResourceTypeBroker, "0"},
	} {
		if got := alterConfigs(t, s, c.v, false, c.typ, c.name, c.kv...); got != c.want {
			t.Fatalf("v%d %v: error %d, want %d", c.v, c.kv, got, c.want)
		}
	}
	if got := alterConfigs(t, s, 2, true, top, "alt", "retention.ms", "1000"); got != 0 || liveOpts(s, "alt").RetentionMs == 1000 {
		t.Fatalf("validate only: %d, retention %d", got, liveOpts(s, "alt").RetentionMs)
	}
	if got := alterConfigs(t, s, 2, false, top, "alt", "retention.ms", "1000", "cleanup.policy", "compact", "message.timestamp.type", "LogAppendTime"); got != 0 {
		t.Fatalf("alter: %d", got)
	}
	tp := s.topics.get("alt")
	o := liveOpts(s, "alt")
	if o.RetentionMs != 1000 || o.SegmentBytes != s.cfg.SegmentBytes || !tp.compacted.Load() || !tp.logAppendTime.Load() {
		t.Fatalf("not applied live: retention %d segment %d compacted %v", o.RetentionMs, o.SegmentBytes, tp.compacted.Load())
	}
	if _, ok := tp.configs["segment.bytes"]; ok {
		t.Fatal("AlterConfigs kept an override it was not given")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dir)
	if o := liveOpts(s2, "alt"); o.RetentionMs != 1000 || !s2.topics.get("alt").compacted.Load() {
		t.Fatalf("after restart: retention %d", o.RetentionMs)
	}
}

func incAlter(t *testing.T, s *Server, v int16, name string, ops ...any) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
	for i := 0; i+2 < len(ops)+1; i += 3 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = ops[i].(string), ops[i+1].(kmsg.IncrementalAlterConfigOp)
		if ops[i+2] != nil {
			c.Value = kmsg.StringPtr(ops[i+2].(string))
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), clientAt(t, s, kmsg.IncrementalAlterConfigs, v))
	if err != nil { // the client pinned at v sends v (the broker advertises 0 up)
		t.Fatalf("incremental v%d: %v", req.Version, err)
	}
	return resp.Resources[0].ErrorCode
}

func TestIncrementalAlterConfigs(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopicWith(t, newClient(t, s), "inc", 1, "segment.bytes", "4096")
	set, del, app, sub := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	if c := incAlter(t, s, 0, "inc", "retention.ms", set, "2000", "cleanup.policy", app, "compact"); c != 0 {
		t.Fatalf("set/append: %d", c)
	}
	cf, _ := s.topics.topicConfigs("inc")
	if cf["retention.ms"] != "2000" || cf["cleanup.policy"] != "delete,compact" || cf["segment.bytes"] != "4096" || liveOpts(s, "inc").RetentionMs != 2000 {
		t.Fatalf("after set/append: %v", cf)
	}
	if c := incAlter(t, s, 1, "inc", "cleanup.policy", sub, "delete", "retention.ms", del, nil); c != 0 {
		t.Fatalf("subtract/delete: %d", c)
	}
	cf, _ = s.topics.topicConfigs("inc")
	if cf["cleanup.policy"] != "compact" || cf["retention.ms"] != "" || liveOpts(s, "inc").RetentionMs != s.cfg.RetentionMs || !s.topics.get("inc").compacted.Load() {
		t.Fatalf("after subtract/delete: %v", cf)
	}
	for _, c := range []struct {
		ops  []any
		want int16
	}{
		{[]any{"retention.ms", app, "5"}, kerr.InvalidConfig.Code},
		{[]any{"no.such.config", set, "5"}, kerr.InvalidConfig.Code},
		{[]any{"segment.ms", set, "0"}, kerr.InvalidConfig.Code},
		{[]any{"cleanup.policy", sub, "compact"}, kerr.InvalidConfig.Code}, // empty policy
		{[]any{"retention.ms", set, "1", "retention.ms", set, "2"}, kerr.InvalidRequest.Code},
		{[]any{"retention.ms", set, nil}, kerr.InvalidRequest.Code},
		{[]any{"retention.ms", kmsg.IncrementalAlterConfigOp(9), "1"}, kerr.InvalidRequest.Code},
	} {
		if got := incAlter(t, s, 1, "inc", c.ops...); got != c.want {
			t.Fatalf("%v: error %d, want %d", c.ops, got, c.want)
		}
	}
	if got := incAlter(t, s, 1, "nope", "retention.ms", set, "1"); got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", got)
	}
	if cf2, _ := s.topics.topicConfigs("inc"); len(cf2) != len(cf) || cf2["cleanup.policy"] != "compact" {
		t.Fatalf("failed requests changed configs: %v", cf2)
	}
}

// TestCreateTopicsConfigs: CreateTopics rejects unknown config names and
// bad values with INVALID_CONFIG, accepts Kafka configs strata only stores,
// and reports the new topic's configs at v5+.
func TestCreateTopicsConfigs(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	for _, c := range []struct {
		kv   []string
		want int16
	}{
		{[]string{"no.such.config", "1"}, kerr.InvalidConfig.Code},
		{[]string{"retention.ms", "-7"}, kerr.InvalidConfig.Code},
		{[]string{"min.cleanable.dirty.ratio", "2"}, kerr.InvalidConfig.Code},
		{[]string{"compression.type", "zstd", "min.insync.replicas", "1"}, 0},
	} {
		if got := createWithConfigs(t, r, "cc", c.kv...); got != c.want {
			t.Fatalf("%v: error %d, want %d", c.kv, got, c.want)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "cc2", 1, 1
	rc := kmsg.NewCreateTopicsRequestTopicConfig()
	rc.Name, rc.Value = "retention.ms", kmsg.StringPtr("1000")
	rt.Configs = append(rt.Configs, rc)
	req.Topics = append(req.Topics, rt)
	resp := r.roundTrip(req, 7).(*kmsg.CreateTopicsResponse)
	found := false
	for _, c := range resp.Topics[0].Configs {
		if c.Name == "retention.ms" {
			found = *c.Value == "1000" && c.Source == int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
	}
	if resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Configs) != appliedTopicConfigs() || !found {
		t.Fatalf("v7 configs: %+v", resp.Topics[0])
	}
}
