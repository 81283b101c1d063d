package cluster

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "znodes", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustUUID(t *testing.T, s string) [16]byte {
	t.Helper()
	u, err := ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestZnodeGolden encodes values and compares with the golden files, written
// by hand in Kafka's format (keys in the order Kafka 2.8/3.x writes them),
// then decodes the golden files back to the same values.
func TestZnodeGolden(t *testing.T) {
	topicID := mustUUID(t, "ZOLr9CLNQjSW70hyIHx6BQ")
	cases := []struct {
		file   string
		encode func() []byte
		decode func([]byte) (any, error)
		want   any
	}{
		{"cluster_id.json", func() []byte { return EncodeClusterID("Sfr7YvlkRHSHrmSrwq9mug") },
			func(b []byte) (any, error) { return DecodeClusterID(b) }, "Sfr7YvlkRHSHrmSrwq9mug"},
		{"broker_v5.json", nil, nil, BrokerRegistration{ID: 1, Version: 5, JMXPort: -1, Timestamp: 1700000000000,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: 0, Host: "b1", Port: 9092}}, Features: map[string]VersionRange{}}},
		{"broker_v5_rack_multi.json", nil, nil, BrokerRegistration{ID: 1, Version: 5, JMXPort: 9999, Timestamp: 1700000000123,
			Rack:      "rack-a",
			Endpoints: []Endpoint{{Listener: "INTERNAL", SecurityProtocol: 0, Host: "::1", Port: 9092}, {Listener: "EXTERNAL", SecurityProtocol: 3, Host: "b1.example.com", Port: 19093}},
			Features:  map[string]VersionRange{"metadata.version": {1, 7}}}},
		{"broker_v5_no_plaintext.json", nil, nil, BrokerRegistration{ID: 1, Version: 5, JMXPort: -1, Timestamp: 1700000000000,
			Endpoints: []Endpoint{{Listener: "SSL", SecurityProtocol: 1, Host: "b2", Port: 9093}}, Features: map[string]VersionRange{}}},
		{"topic_v3.json", nil, nil, TopicAssignment{Version: 3, TopicID: topicID,
			Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}},
			Adding:     map[int32][]int32{}, Removing: map[int32][]int32{}}},
		{"topic_v3_reassigning.json", nil, nil, TopicAssignment{Version: 3, TopicID: topicID,
			Partitions: map[int32][]int32{0: {1, 2, 3, 4}, 1: {2, 3, 1}},
			Adding:     map[int32][]int32{0: {4}}, Removing: map[int32][]int32{0: {3}}}},
		{"topic_v3_no_id.json", nil, nil, TopicAssignment{Version: 3,
			Partitions: map[int32][]int32{0: {0}}, Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}},
		{"partition_state.json", nil, nil, PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, ControllerEpoch: 5}},
		{"partition_state_recovering.json", nil, nil, PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2}, ControllerEpoch: 6,
			LeaderRecoveryState: LeaderRecovering}},
		{"partition_state_no_leader.json", nil, nil, PartitionState{Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{3}, ControllerEpoch: 7}},
		{"controller_v1.json", func() []byte { return EncodeController(1, 1700000000000) },
			func(b []byte) (any, error) { return DecodeController(b) },
			ControllerInfo{Version: 1, BrokerID: 1, Timestamp: 1700000000000, KRaftControllerEpoch: -1}},
		{"controller_epoch.txt", func() []byte { return EncodeControllerEpoch(7) },
			func(b []byte) (any, error) { return DecodeControllerEpoch(b) }, int32(7)},
		{"topic_config.json", func() []byte {
			return EncodeEntityConfig(map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"})
		}, func(b []byte) (any, error) { return DecodeEntityConfig(TopicConfigPath("T"), b) },
			map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}},
		{"topic_config_empty.json", func() []byte { return EncodeEntityConfig(nil) },
			func(b []byte) (any, error) { return DecodeEntityConfig(TopicConfigPath("T"), b) }, map[string]string{}},
		{"config_change_v2.json", func() []byte { return EncodeConfigChange("topics/T") },
			func(b []byte) (any, error) {
				return DecodeConfigChange(ConfigChangesPath+"/config_change_0000000001", b)
			},
			ConfigChange{EntityType: "topics", EntityName: "T"}},
		{"reassign_partitions.json", func() []byte {
			return EncodeReassignPartitions([]PartitionReplicas{{"t", 0, []int32{1, 2, 3}}, {"t", 1, []int32{2, 3, 4}}})
		}, func(b []byte) (any, error) { return DecodeReassignPartitions(b) },
			[]PartitionReplicas{{"t", 0, []int32{1, 2, 3}}, {"t", 1, []int32{2, 3, 4}}}},
		{"preferred_replica_election.json", func() []byte {
			return EncodePreferredReplicaElection([]TopicPartition{{"t", 0}, {"u", 2}})
		}, func(b []byte) (any, error) { return DecodePreferredReplicaElection(b) }, []TopicPartition{{"t", 0}, {"u", 2}}},
		{"isr_change.json", func() []byte { return EncodeIsrChange([]TopicPartition{{"t", 0}}) },
			func(b []byte) (any, error) { return DecodeIsrChange(IsrChangeCreatePath()+"0000000042", b) },
			[]TopicPartition{{"t", 0}}},
		{"log_dir_event.json", func() []byte { return EncodeLogDirEvent(3) },
			func(b []byte) (any, error) { return DecodeLogDirEvent(LogDirEventCreatePath()+"0000000000", b) },
			int32(3)},
		{"producer_id_block.json", func() []byte { return ProducerIDBlock{2, 0, 999}.Encode() },
			func(b []byte) (any, error) { v, _, err := DecodeProducerIDBlock(b); return v, err },
			ProducerIDBlock{2, 0, 999}},
		{"feature_v1.json", nil, nil, FeatureZNode{Version: 1, Status: FeatureEnabled, Features: map[string]VersionRange{}}},
		{"feature_v1_levels.json", nil, nil, FeatureZNode{Version: 1, Status: FeatureEnabled,
			Features: map[string]VersionRange{"metadata.version": {1, 7}}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			want := golden(t, c.file)
			encode, decode := c.encode, c.decode
			switch v := c.want.(type) {
			case BrokerRegistration:
				encode = v.Encode
				decode = func(b []byte) (any, error) { return DecodeBrokerRegistration(v.ID, b) }
			case TopicAssignment:
				encode = v.Encode
				decode = func(b []byte) (any, error) { return DecodeTopicAssignment("T", b) }
			case PartitionState:
				encode = v.Encode
				decode = func(b []byte) (any, error) { return DecodePartitionState("T", 0, b) }
			case FeatureZNode:
				encode = v.Encode
				decode = func(b []byte) (any, error) { return DecodeFeatureZNode(b) }
			}
			if got := encode(); !bytes.Equal(got, want) {
				t.Errorf("encode:\n got %s\nwant %s", got, want)
			}
			got, err := decode(want)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decode:\n got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

// TestZnodeDecodeKafkaVariants decodes JSON as other Kafka versions wrote
// it: other key orders, older versions, numbers where strings are usual,
// unknown keys.
func TestZnodeDecodeKafkaVariants(t *testing.T) {
	topicID := mustUUID(t, "ZOLr9CLNQjSW70hyIHx6BQ")
	cases := []struct {
		file   string
		decode func([]byte) (any, error)
		want   any
	}{
		{"kafka_broker_v5_other_order.json", brokerDecoder(101), BrokerRegistration{ID: 101, Version: 5, JMXPort: -1,
			Timestamp: 1707276552023, Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: 0, Host: "localhost", Port: 9091}},
			Features: map[string]VersionRange{}}},
		{"kafka_broker_v4_rack.json", brokerDecoder(2), BrokerRegistration{ID: 2, Version: 4, JMXPort: 9999,
			Timestamp: 2233345666, Rack: "dc1",
			Endpoints: []Endpoint{{Listener: "CLIENT", SecurityProtocol: 0, Host: "host1", Port: 9092}, {Listener: "REPLICATION", SecurityProtocol: 1, Host: "host1", Port: 9093}}}},
		{"kafka_broker_v2.json", brokerDecoder(3), BrokerRegistration{ID: 3, Version: 2, JMXPort: 9999,
			Timestamp: 2233345666,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: 0, Host: "host1", Port: 9092}, {Listener: "SSL", SecurityProtocol: 1, Host: "host1", Port: 9093}}}},
		{"kafka_broker_v1.json", brokerDecoder(4), BrokerRegistration{ID: 4, Version: 1, JMXPort: 9999,
			Timestamp: 2233345666, Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: 0, Host: "localhost", Port: 9092}}}},
		{"kafka_broker_v5_extra.json", brokerDecoder(5), BrokerRegistration{ID: 5, Version: 5, JMXPort: -1,
			Timestamp: 1700000000000, Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: 0, Host: "h", Port: 9092}},
			Features: map[string]VersionRange{"f": {1, 3}}}},
		{"kafka_topic_v1.json", topicDecoder, TopicAssignment{Version: 1,
			Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 3}}, Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}},
		{"kafka_topic_v2.json", topicDecoder, TopicAssignment{Version: 2,
			Partitions: map[int32][]int32{0: {1, 2, 3}}, Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}},
		// adding_replicas of partition 7, which the topic does not have, is dropped as Kafka does
		{"kafka_topic_v3_other_order.json", topicDecoder, TopicAssignment{Version: 3, TopicID: topicID,
			Partitions: map[int32][]int32{0: {1, 2, 3, 4}}, Adding: map[int32][]int32{0: {4}}, Removing: map[int32][]int32{0: {3}}}},
		{"kafka_partition_state_other_order.json", func(b []byte) (any, error) { return DecodePartitionState("T", 0, b) },
			PartitionState{Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 3, 1}, ControllerEpoch: 1}},
		{"kafka_controller_v2.json", func(b []byte) (any, error) { return DecodeController(b) },
			ControllerInfo{Version: 2, BrokerID: 0, Timestamp: 1719917952299, KRaftControllerEpoch: -1}},
		{"kafka_controller_other_order.json", func(b []byte) (any, error) { return DecodeController(b) },
			ControllerInfo{Version: 1, BrokerID: 3, Timestamp: 1643692590537, KRaftControllerEpoch: -1}},
		{"kafka_config_change_v1.json", func(b []byte) (any, error) { return DecodeConfigChange("/config/changes/x", b) },
			ConfigChange{EntityType: "topics", EntityName: "T"}},
		{"kafka_feature_v2.json", func(b []byte) (any, error) { return DecodeFeatureZNode(b) },
			FeatureZNode{Version: 2, Status: 1, Features: map[string]VersionRange{"metadata.version": {1, 7}}}},
		{"kafka_topic_config_other_order.json", func(b []byte) (any, error) { return DecodeEntityConfig("/config/topics/T", b) },
			map[string]string{"retention.ms": "100000"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, err := c.decode(golden(t, c.file))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decode:\n got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

func brokerDecoder(id int32) func([]byte) (any, error) {
	return func(b []byte) (any, error) { return DecodeBrokerRegistration(id, b) }
}

func topicDecoder(b []byte) (any, error) { return DecodeTopicAssignment("T", b) }

// TestZnodeDecodeMalformed feeds each decoder bad data: every one must
// return an error wrapping ErrBadZnode that names the znode, never panic,
// never return a half-read value as good.
func TestZnodeDecodeMalformed(t *testing.T) {
	type dec struct {
		name string
		path string
		fn   func([]byte) error
	}
	decs := []dec{
		{"broker", "/brokers/ids/7", func(b []byte) error { _, err := DecodeBrokerRegistration(7, b); return err }},
		{"topic", "/brokers/topics/T", func(b []byte) error { _, err := DecodeTopicAssignment("T", b); return err }},
		{"state", "/brokers/topics/T/partitions/3/state", func(b []byte) error { _, err := DecodePartitionState("T", 3, b); return err }},
		{"controller", "/controller", func(b []byte) error { _, err := DecodeController(b); return err }},
		{"cluster id", "/cluster/id", func(b []byte) error { _, err := DecodeClusterID(b); return err }},
		{"config change", "/config/changes/c", func(b []byte) error { _, err := DecodeConfigChange("/config/changes/c", b); return err }},
		{"reassign", "/admin/reassign_partitions", func(b []byte) error { _, err := DecodeReassignPartitions(b); return err }},
		{"preferred", "/admin/preferred_replica_election", func(b []byte) error { _, err := DecodePreferredReplicaElection(b); return err }},
		{"isr change", "/isr_change_notification/i", func(b []byte) error { _, err := DecodeIsrChange("/isr_change_notification/i", b); return err }},
		{"log dir event", "/log_dir_event_notification/l", func(b []byte) error {
			_, err := DecodeLogDirEvent("/log_dir_event_notification/l", b)
			return err
		}},
		{"feature", "/feature", func(b []byte) error { _, err := DecodeFeatureZNode(b); return err }},
	}
	common := []string{"", "null", "[]", "{", "\"x\"", "42", "{\"version\":1", "\xff\xfe", "{}"}
	specific := map[string][]string{
		"broker": {
			`{"version":"5","jmx_port":-1,"endpoints":[]}`,
			`{"version":5,"jmx_port":-1}`,
			`{"version":0,"jmx_port":-1,"endpoints":[]}`,
			`{"version":5,"jmx_port":1.5,"endpoints":[]}`,
			`{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT:/h:1"]}`,
			`{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h"]}`,
			`{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:99999"]}`,
			`{"version":5,"jmx_port":-1,"endpoints":[42]}`,
			`{"version":5,"jmx_port":-1,"endpoints":["SSL://h:1"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}`,
			`{"version":5,"jmx_port":-1,"endpoints":[],"listener_security_protocol_map":{"PLAINTEXT":1}}`,
			`{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"max_version":1}}}`,
			`{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":3,"max_version":1}}}`,
			`{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":1,"max_version":70000}}}`,
			`{"version":5,"jmx_port":-1,"endpoints":[],"rack":7}`,
			`{"version":1,"jmx_port":-1,"port":9092}`,
			`{"version":5,"jmx_port":null,"endpoints":[]}`,
			`{"version":5,"jmx_port":-1,"endpoints":["X://h:1"],"listener_security_protocol_map":{"X":"FOO"}}`,
			`{"version":2,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}`,
			`{"version":99999999999,"jmx_port":-1,"endpoints":[]}`,
		},
		"topic": {
			`{"version":3,"partitions":{"x":[1]}}`,
			`{"version":3,"partitions":{"-1":[1]}}`,
			`{"version":3,"partitions":{"0":[1,null]}}`,
			`{"version":3,"partitions":{"0":[1.0]}}`,
			`{"version":3,"partitions":{"0":"1,2"}}`,
			`{"version":3,"partitions":{"0":[4294967296]}}`,
			`{"version":3,"partitions":[]}`,
			`{"version":3,"partitions":{"0":[1]},"topic_id":"short"}`,
			`{"version":3,"partitions":{"0":[1]},"topic_id":7}`,
			`{"version":3,"partitions":{"0":[1]},"adding_replicas":{"0":["4"]}}`,
		},
		"state": {
			`{"leader":1,"leader_epoch":0,"isr":[1]}`,
			`{"leader":1,"leader_epoch":0,"controller_epoch":1}`,
			`{"leader":"1","leader_epoch":0,"isr":[1],"controller_epoch":1}`,
			`{"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1,"leader_recovery_state":2}`,
			`{"leader":-3,"leader_epoch":0,"isr":[1],"controller_epoch":1}`,
			`{"leader":1,"leader_epoch":0,"isr":{},"controller_epoch":1}`,
			`{"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1e3}`,
		},
		"controller":    {`{"version":1}`, `{"brokerid":"1"}`, `{"brokerid":1,"kraftControllerEpoch":"x"}`},
		"cluster id":    {`{"version":"1"}`, `{"version":"1","id":""}`, `{"id":1}`},
		"config change": {`{"version":2}`, `{"version":2,"entity_path":"topics"}`, `{"version":3,"entity_path":"topics/T"}`, `{"version":1,"entity_type":"topics"}`},
		"reassign":      {`{"version":1}`, `{"version":1,"partitions":[{"topic":"t","partition":0}]}`, `{"version":1,"partitions":[7]}`},
		"preferred":     {`{"version":1,"partitions":[{"topic":"t"}]}`, `{"version":1,"partitions":{}}`},
		"isr change":    {`{"version":1,"partitions":[{"partition":0}]}`},
		"log dir event": {`{"version":1,"event":1}`, `{"version":1,"broker":"3"}`},
		"feature": {
			`{"version":1,"features":{}}`, `{"version":1,"status":2,"features":{}}`, `{"version":1,"status":1}`,
			`{"version":0,"status":1,"features":{}}`, `{"version":1,"status":1,"features":{"f":{"min_version_level":1}}}`,
			`{"version":1,"status":1,"features":{"f":{"max_version_level":1}}}`,
		},
	}
	for _, d := range decs {
		inputs := append(append([]string(nil), common...), specific[d.name]...)
		for _, in := range inputs {
			if d.name == "topic" && in == "{}" {
				continue // an empty assignment, as Kafka reads it (Check refuses it)
			}
			err := d.fn([]byte(in))
			if !errors.Is(err, ErrBadZnode) {
				t.Errorf("%s %q: err %v, want ErrBadZnode", d.name, in, err)
				continue
			}
			if !strings.Contains(err.Error(), d.path) {
				t.Errorf("%s %q: error %q does not name %s", d.name, in, err, d.path)
			}
		}
	}
	// the decoders that accept empty data say so rather than fail
	if cfg, err := DecodeEntityConfig("/config/topics/T", nil); err != nil || len(cfg) != 0 {
		t.Errorf("empty config: %v %v", cfg, err)
	}
	if _, ok, err := DecodeProducerIDBlock(nil); ok || err != nil {
		t.Errorf("empty producer id block: ok %v err %v", ok, err)
	}
	for _, in := range []string{`{"version":1,"broker":2,"block_start":0,"block_end":"9"}`,
		`{"version":1,"broker":2,"block_start":"9","block_end":"0"}`, `{"version":1,"broker":2,"block_start":"-1","block_end":"0"}`,
		`{"version":1,"block_start":"0","block_end":"9"}`, `{`} {
		if _, _, err := DecodeProducerIDBlock([]byte(in)); !errors.Is(err, ErrBadZnode) {
			t.Errorf("producer id block %q: %v", in, err)
		}
	}
	for _, in := range []string{"", "-1", "x", "1.5", "99999999999", "0x10"} {
		if _, err := DecodeControllerEpoch([]byte(in)); !errors.Is(err, ErrBadZnode) {
			t.Errorf("controller epoch %q: %v", in, err)
		}
	}
	for _, in := range []string{`{"config":{"a":1}}`, `{"config":[]}`, `[`} {
		if _, err := DecodeEntityConfig("/config/topics/T", []byte(in)); !errors.Is(err, ErrBadZnode) {
			t.Errorf("config %q: %v", in, err)
		}
	}
}

func TestTopicAssignmentCheck(t *testing.T) {
	good := TopicAssignment{Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 3}}, Adding: map[int32][]int32{1: {3}}}
	if err := good.Check(); err != nil {
		t.Fatalf("good assignment: %v", err)
	}
	bad := []TopicAssignment{
		{},
		{Partitions: map[int32][]int32{1: {1}}},
		{Partitions: map[int32][]int32{0: {}}},
		{Partitions: map[int32][]int32{0: {1, 1}}},
		{Partitions: map[int32][]int32{0: {-1}}},
		{Partitions: map[int32][]int32{0: {1}}, Adding: map[int32][]int32{0: {2}}},
		{Partitions: map[int32][]int32{0: {1}}, Removing: map[int32][]int32{0: {2}}},
	}
	for i, a := range bad {
		if err := a.Check(); err == nil {
			t.Errorf("bad assignment %d %+v passed Check", i, a)
		}
	}
	a, err := DecodeTopicAssignment("T", []byte(`{}`))
	if err != nil || a.Check() == nil {
		t.Errorf("{}: %v, Check %v", err, a.Check())
	}
}

func TestZnodePaths(t *testing.T) {
	checks := map[string]string{
		BrokerPath(3):                            "/brokers/ids/3",
		TopicPath("t"):                           "/brokers/topics/t",
		PartitionStatePath("t", 12):              "/brokers/topics/t/partitions/12/state",
		TopicConfigPath("t"):                     "/config/topics/t",
		DeleteTopicPath("t"):                     "/admin/delete_topics/t",
		ConfigChangeCreatePath():                 "/config/changes/config_change_",
		IsrChangeCreatePath():                    "/isr_change_notification/isr_change_",
		LogDirEventCreatePath():                  "/log_dir_event_notification/log_dir_event_",
		ConfigEntityPath("brokers", "<default>"): "/config/brokers/<default>",
	}
	for got, want := range checks {
		if got != want {
			t.Errorf("path %q, want %q", got, want)
		}
	}
	if id, err := ParseBrokerID("1001"); err != nil || id != 1001 {
		t.Errorf("ParseBrokerID: %d %v", id, err)
	}
	for _, bad := range []string{"", "-1", "x", "+1", "99999999999"} {
		if _, err := ParseBrokerID(bad); !errors.Is(err, ErrBadZnode) {
			t.Errorf("ParseBrokerID(%q): %v", bad, err)
		}
	}
	if n, err := SequenceNumber("isr_change_0000000042", IsrChangePrefix); err != nil || n != 42 {
		t.Errorf("SequenceNumber: %d %v", n, err)
	}
	for _, bad := range []string{"isr_change_", "config_change_0000000001", "isr_change_x"} {
		if _, err := SequenceNumber(bad, IsrChangePrefix); !errors.Is(err, ErrBadZnode) {
			t.Errorf("SequenceNumber(%q): %v", bad, err)
		}
	}
	if GeneratedBrokerID(1, ReservedBrokerMaxID) != 1001 {
		t.Error("the first generated broker id is not 1001")
	}
	// every persistent path's parent comes before it
	seen := map[string]bool{"": true}
	for _, p := range PersistentPaths {
		parent := p[:strings.LastIndexByte(p, '/')]
		if !seen[parent] {
			t.Errorf("%s listed before its parent", p)
		}
		seen[p] = true
	}
}

func TestUUID(t *testing.T) {
	seq := bytes.NewReader(bytes.Repeat([]byte{0xfb}, 64)) // base64url of 0xfb.. starts with '-'
	if _, err := NewUUID(seq); err == nil {
		t.Fatal("NewUUID took an id whose string starts with '-'")
	}
	u, err := NewUUID(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := UUIDString(u)
	if len(s) != 22 || s[0] == '-' {
		t.Fatalf("uuid string %q", s)
	}
	back, err := ParseUUID(s)
	if err != nil || back != u {
		t.Fatalf("ParseUUID(%q) = %x, %v", s, back, err)
	}
	for _, bad := range []string{"", "ZOLr9CLNQjSW70hyIHx6B", "ZOLr9CLNQjSW70hyIHx6B=", "ZOLr9CLNQjSW70hyIHx6B+"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) accepted", bad)
		}
	}
}

// TestEncodeEscapes checks strings are escaped as JSON needs and nothing
// more (no HTML escaping), and decode back.
func TestEncodeEscapes(t *testing.T) {
	cfg := map[string]string{"k": "a\"b\\c\n<&>\x01é\xff"}
	b := EncodeEntityConfig(cfg)
	want := `{"version":1,"config":{"k":"a\"b\\c\n<&>\u0001é` + "\ufffd" + `"}}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	got, err := DecodeEntityConfig("/config/topics/T", b)
	if err != nil || got["k"] != "a\"b\\c\n<&>\x01é\ufffd" {
		t.Fatalf("decode: %q %v", got, err)
	}
}
