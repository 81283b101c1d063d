package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterMetadata is a three-broker cluster (1, 2, 3; broker 4 is dead) as
// kadm reports it, with every case --describe's report flags look at:
//
//	payments  RF 3, min.insync.replicas=2 (a topic override) and a static broker
//	          segment.bytes: p0 healthy; p1 one follower out of the ISR (at min
//	          ISR); p2 no leader, ISR empty; p3 led by dead broker 4, ISR just 4
//	orders    RF 3, no min.insync.replicas reported (Kafka's ZooKeeper path);
//	          p0 in a reassignment 3 -> 4 (replicas 1,2,3,4, adding 4,
//	          removing 3), p1 healthy
//	__consumer_offsets  internal, one healthy partition
//	gone      deleted between the listing and the describe
func clusterMetadata() (kadm.Metadata, kadm.ResourceConfigs, kadm.ListPartitionReassignmentsResponses) {
	id := func(b byte) kadm.TopicID {
		var t kadm.TopicID
		for i := range t {
			t[i] = b + byte(i)*17 // bytes >= 0xf8 exercise the URL-safe alphabet
		}
		return t
	}
	part := func(topic string, p, leader int32, replicas, isr, offline []int32) kadm.PartitionDetail {
		pd := kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, LeaderEpoch: 7, Replicas: replicas, ISR: isr, OfflineReplicas: offline}
		if leader < 0 {
			pd.Err = kerr.LeaderNotAvailable
		}
		return pd
	}
	md := kadm.Metadata{
		Cluster: "c", Controller: 1,
		Brokers: kadm.BrokerDetails{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}},
		Topics: kadm.TopicDetails{
			"payments": {Topic: "payments", ID: id(0xfe), Partitions: kadm.PartitionDetails{
				3: part("payments", 3, 4, []int32{4, 1, 2}, []int32{4}, nil),
				0: part("payments", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil),
				2: part("payments", 2, -1, []int32{3, 1, 2}, []int32{}, []int32{3}),
				1: part("payments", 1, 2, []int32{2, 3, 1}, []int32{2, 3}, nil),
			}},
			"orders": {Topic: "orders", ID: id(1), Partitions: kadm.PartitionDetails{
				0: part("orders", 0, 1, []int32{1, 2, 3, 4}, []int32{1, 2, 3}, nil),
				1: part("orders", 1, 2, []int32{2, 3, 1}, []int32{2, 3, 1}, nil),
			}},
			"__consumer_offsets": {Topic: "__consumer_offsets", ID: id(9), IsInternal: true, Partitions: kadm.PartitionDetails{
				0: part("__consumer_offsets", 0, 3, []int32{3, 1, 2}, []int32{3, 1, 2}, nil),
			}},
			"gone": {Topic: "gone", Err: kerr.UnknownTopicOrPartition, Partitions: kadm.PartitionDetails{}},
		},
	}
	s := kadm.StringPtr
	configs := kadm.ResourceConfigs{
		{Name: "payments", Configs: []kadm.Config{
			{Key: "segment.bytes", Value: s("1073741824"), Source: kmsg.ConfigSourceStaticBrokerConfig},
			{Key: "min.insync.replicas", Value: s("2"), Source: kmsg.ConfigSourceDynamicTopicConfig},
			{Key: "retention.ms", Value: s("604800000"), Source: kmsg.ConfigSourceDefaultConfig},
		}},
		{Name: "orders", Configs: []kadm.Config{
			{Key: "retention.ms", Value: s("604800000"), Source: kmsg.ConfigSourceDefaultConfig},
		}},
		{Name: "__consumer_offsets", Configs: []kadm.Config{
			{Key: "cleanup.policy", Value: s("compact"), Source: kmsg.ConfigSourceDynamicTopicConfig},
			{Key: "min.insync.replicas", Value: s("2"), Source: kmsg.ConfigSourceDynamicBrokerConfig},
			{Key: "sasl.secret", Value: nil, Sensitive: true, Source: kmsg.ConfigSourceDynamicTopicConfig},
		}},
		{Name: "gone", Err: kerr.UnknownTopicOrPartition},
	}
	ra := kadm.ListPartitionReassignmentsResponses{"orders": {0: {Topic: "orders", Partition: 0,
		Replicas: []int32{1, 2, 3, 4}, AddingReplicas: []int32{4}, RemovingReplicas: []int32{3}}}}
	return md, configs, ra
}

// describeCases are the --describe flag sets compared with golden files.
var describeCases = []struct {
	name string
	o    describeOpts
}{
	{"all", describeOpts{}},
	{"under-replicated", describeOpts{underReplicated: true}},
	{"unavailable", describeOpts{unavailable: true}},
	{"under-min-isr", describeOpts{underMinISR: true}},
	{"at-min-isr", describeOpts{atMinISR: true}},
	{"under-replicated+unavailable", describeOpts{underReplicated: true, unavailable: true}},
	{"topics-with-overrides", describeOpts{withOverrides: true}},
}

// TestDescribeFormatGolden: the plan and Kafka's text for a multi-broker
// cluster, one golden file per flag set (testdata/topics/describe-*.txt).
func TestDescribeFormatGolden(t *testing.T) {
	md, configs, ra := clusterMetadata()
	v := viewFromMetadata(md, configs, ra)
	for _, c := range describeCases {
		t.Run(c.name, func(t *testing.T) {
			checkGolden(t, "describe-"+c.name+".txt", formatDescribe(planDescribe(v, c.o)))
		})
	}
	t.Run("json", func(t *testing.T) {
		var b strings.Builder
		for _, c := range describeCases {
			if err := writeJSON(&b, describeJSONOut(planDescribe(v, c.o), v)); err != nil {
				t.Fatal(err)
			}
		}
		checkGolden(t, "describe-json.txt", b.String())
	})
}

// TestDescribeRules checks the report flags' rules one partition at a time
// rather than through a golden file, so a wrong rule names itself.
func TestDescribeRules(t *testing.T) {
	md, configs, ra := clusterMetadata()
	v := viewFromMetadata(md, configs, ra)
	got := map[string]describedPartition{}
	for _, d := range planDescribe(v, describeOpts{}) {
		for _, p := range d.partitions {
			got[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p
		}
	}
	for _, c := range []struct {
		p                                      string
		underRep, unavailable, underMin, atMin bool
	}{
		{"payments-0", false, false, false, false},
		{"payments-1", true, false, false, true},
		{"payments-2", true, true, true, false},
		{"payments-3", true, true, true, false},
		{"orders-0", false, false, false, false}, // 3 in sync of RF 3 (replica 4 is being added)
		{"orders-1", false, false, false, false},
		{"__consumer_offsets-0", false, false, false, false}, // 3 in sync > min ISR 2
	} {
		p, ok := got[c.p]
		if !ok {
			t.Errorf("%s not described", c.p)
			continue
		}
		if p.UnderReplicated != c.underRep || p.Unavailable != c.unavailable || p.UnderMinISR != c.underMin || p.AtMinISR != c.atMin {
			t.Errorf("%s: under-replicated %v unavailable %v under-min-isr %v at-min-isr %v, want %v %v %v %v",
				c.p, p.UnderReplicated, p.Unavailable, p.UnderMinISR, p.AtMinISR, c.underRep, c.unavailable, c.underMin, c.atMin)
		}
	}
	if _, ok := got["gone-0"]; ok {
		t.Error("a topic that failed to describe has partitions in the plan")
	}
	// The view keeps the topic's error for the caller to report.
	for _, tv := range v.topics {
		if tv.name == "gone" && tv.err == nil {
			t.Error("topic gone: no error in the view")
		}
	}
}

// TestReplicationFactorDuringReassignment: Kafka counts a partition being
// reassigned without the replicas it is adding, and not at all once the
// reassignment no longer touches its replicas.
func TestReplicationFactorDuringReassignment(t *testing.T) {
	for _, c := range []struct {
		replicas []int32
		ra       *reassignment
		want     int
	}{
		{[]int32{1, 2, 3}, nil, 3},
		{[]int32{1, 2, 3, 4}, &reassignment{replicas: []int32{1, 2, 3, 4}, adding: []int32{4}, removing: []int32{3}}, 3},
		{[]int32{1, 2, 3, 4, 5}, &reassignment{replicas: []int32{1, 2, 3, 4, 5}, adding: []int32{4, 5}}, 3},
		// Finished between the two requests: the new replicas are the truth.
		{[]int32{1, 2, 4}, &reassignment{replicas: []int32{1, 2, 3, 4}, adding: []int32{5}, removing: []int32{3}}, 3},
	} {
		p := partitionView{replicas: c.replicas, reassignment: c.ra}
		if got := replicationFactor(&p); got != c.want {
			t.Errorf("replicas %v, reassignment %+v: RF %d, want %d", c.replicas, c.ra, got, c.want)
		}
	}
}

// TestDescribeMarkedForDeletion: a topic a ZooKeeper backend reports as
// pending deletion gets Kafka's "MarkedForDeletion: true" on every line,
// and "T - marked for deletion" in --list.
func TestDescribeMarkedForDeletion(t *testing.T) {
	v := &clusterView{liveBrokers: map[int32]bool{0: true}, topics: []topicView{{name: "old", markedForDeletion: true,
		partitions: []partitionView{{partition: 0, leader: 0, replicas: []int32{0}, isr: []int32{0}}}}}}
	got := formatDescribe(planDescribe(v, describeOpts{}))
	want := "Topic: old\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \tMarkedForDeletion: true\n" +
		"\tTopic: old\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tMarkedForDeletion: true\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := formatListing([]topicListing{{name: "a"}, {name: "old", markedForDeletion: true}}); got != "a\nold - marked for deletion\n" {
		t.Errorf("--list: %q", got)
	}
}

// TestTopicIDString: Kafka prints a topic id as URL-safe base64 without
// padding (Uuid.toString), not kadm's standard base64 with padding.
func TestTopicIDString(t *testing.T) {
	id := [16]byte{0xfb, 0xff, 0xbf, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xff}
	got := topicIDString(id)
	if got != "-_-__gECAwQFBgcICQoL_w" {
		t.Errorf("topicIDString = %q", got)
	}
	if topicIDString([16]byte{}) != "" {
		t.Error("the zero id must print as nothing (Kafka omits TopicId)")
	}
}

// TestViewFromMetadataConfigs: a config is printed unless its source is
// DEFAULT_CONFIG (Kafka's ConfigEntry.isDefault), so a static broker
// setting shows (Kafka's well-known "Configs: segment.bytes=1073741824");
// a value the broker withholds prints as Kafka's null.
func TestViewFromMetadataConfigs(t *testing.T) {
	md, configs, ra := clusterMetadata()
	v := viewFromMetadata(md, configs, ra)
	got := map[string]string{}
	for _, d := range planDescribe(v, describeOpts{withOverrides: true}) {
		got[d.header.Topic] = fmt.Sprint(d.header.Configs)
	}
	want := map[string]string{
		"payments":           "map[min.insync.replicas:2 segment.bytes:1073741824]",
		"__consumer_offsets": "map[cleanup.policy:compact min.insync.replicas:2 sasl.secret:null]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("--topics-with-overrides configs: %v, want %v", got, want)
	}
	if _, err := json.Marshal(describeJSONOut(planDescribe(v, describeOpts{}), v)); err != nil {
		t.Fatal(err)
	}
}
