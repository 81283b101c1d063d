package fuzz

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stratalog/strata/cluster"
)

// FuzzZnodeDecode feeds arbitrary bytes to every znode decoder of package
// cluster: none panics, every error wraps cluster.ErrBadZnode, and whatever
// decodes encodes to valid JSON that decodes back to the same value (the
// fields the encoder writes).
func FuzzZnodeDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "cluster", "testdata", "znodes", "*"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{"", "null", "{}", "7", `{"version":5,"jmx_port":-1,"endpoints":["A://B://[::1]:1"],"listener_security_protocol_map":{"A://B":"SSL"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what string, err error) bool {
			if err != nil && !errors.Is(err, cluster.ErrBadZnode) {
				t.Fatalf("%s: error %v does not wrap ErrBadZnode", what, err)
			}
			return err == nil
		}
		valid := func(what string, b []byte) {
			if !json.Valid(b) {
				t.Fatalf("%s: encoded invalid JSON %q", what, b)
			}
		}
		same := func(what string, a, b any) {
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: round trip\n got %#v\nwant %#v", what, b, a)
			}
		}

		if r, err := cluster.DecodeBrokerRegistration(1, data); check("broker", err) {
			out := r.Encode()
			valid("broker", out)
			back, err := cluster.DecodeBrokerRegistration(1, out)
			if err != nil {
				t.Fatalf("broker: re-decode %q: %v", out, err)
			}
			r.Version, back.Version = 0, 0
			if r.Features == nil {
				r.Features = map[string]cluster.VersionRange{}
			}
			same("broker", r, back)
		}
		if a, err := cluster.DecodeTopicAssignment("t", data); check("topic", err) {
			out := a.Encode()
			valid("topic", out)
			back, err := cluster.DecodeTopicAssignment("t", out)
			if err != nil {
				t.Fatalf("topic: re-decode %q: %v", out, err)
			}
			a.Version, back.Version = 0, 0
			same("topic", a, back)
			_ = a.Check() // must not panic
		}
		if s, err := cluster.DecodePartitionState("t", 0, data); check("state", err) {
			out := s.Encode()
			valid("state", out)
			back, err := cluster.DecodePartitionState("t", 0, out)
			if err != nil {
				t.Fatalf("state: re-decode %q: %v", out, err)
			}
			same("state", s, back)
		}
		if c, err := cluster.DecodeController(data); check("controller", err) {
			out := cluster.EncodeController(c.BrokerID, c.Timestamp)
			valid("controller", out)
			back, err := cluster.DecodeController(out)
			if err != nil || back.BrokerID != c.BrokerID || back.Timestamp != c.Timestamp {
				t.Fatalf("controller: re-decode %q: %+v %v", out, back, err)
			}
		}
		if e, err := cluster.DecodeControllerEpoch(data); check("controller epoch", err) {
			back, err := cluster.DecodeControllerEpoch(cluster.EncodeControllerEpoch(e))
			if err != nil || back != e {
				t.Fatalf("controller epoch %d: %d %v", e, back, err)
			}
		}
		if id, err := cluster.DecodeClusterID(data); check("cluster id", err) {
			back, err := cluster.DecodeClusterID(cluster.EncodeClusterID(id))
			if err != nil || back != id {
				t.Fatalf("cluster id %q: %q %v", id, back, err)
			}
		}
		if cfg, err := cluster.DecodeEntityConfig("/config/topics/t", data); check("config", err) {
			out := cluster.EncodeEntityConfig(cfg)
			valid("config", out)
			back, err := cluster.DecodeEntityConfig("/config/topics/t", out)
			if err != nil {
				t.Fatalf("config: re-decode %q: %v", out, err)
			}
			same("config", cfg, back)
		}
		if c, err := cluster.DecodeConfigChange("/config/changes/c", data); check("config change", err) {
			back, err := cluster.DecodeConfigChange("/config/changes/c", cluster.EncodeConfigChange(c.EntityPath()))
			if err != nil || back.EntityPath() != c.EntityPath() {
				t.Fatalf("config change %q: %q %v", c.EntityPath(), back.EntityPath(), err)
			}
		}
		if ps, err := cluster.DecodeReassignPartitions(data); check("reassign", err) {
			back, err := cluster.DecodeReassignPartitions(cluster.EncodeReassignPartitions(ps))
			if err != nil {
				t.Fatal(err)
			}
			same("reassign", ps, back)
		}
		if ps, err := cluster.DecodePreferredReplicaElection(data); check("preferred", err) {
			back, err := cluster.DecodePreferredReplicaElection(cluster.EncodePreferredReplicaElection(ps))
			if err != nil {
				t.Fatal(err)
			}
			same("preferred", ps, back)
		}
		if ps, err := cluster.DecodeIsrChange("/isr_change_notification/i", data); check("isr change", err) {
			back, err := cluster.DecodeIsrChange("/isr_change_notification/i", cluster.EncodeIsrChange(ps))
			if err != nil {
				t.Fatal(err)
			}
			same("isr change", ps, back)
		}
		if b, err := cluster.DecodeLogDirEvent("/log_dir_event_notification/l", data); check("log dir event", err) {
			back, err := cluster.DecodeLogDirEvent("/log_dir_event_notification/l", cluster.EncodeLogDirEvent(b))
			if err != nil || back != b {
				t.Fatalf("log dir event: %d %v", back, err)
			}
		}
		if b, ok, err := cluster.DecodeProducerIDBlock(data); check("producer id block", err) && ok {
			back, ok, err := cluster.DecodeProducerIDBlock(b.Encode())
			if err != nil || !ok || back != b {
				t.Fatalf("producer id block: %+v %v", back, err)
			}
		}
		if fz, err := cluster.DecodeFeatureZNode(data); check("feature", err) {
			back, err := cluster.DecodeFeatureZNode(fz.Encode())
			if err != nil {
				t.Fatal(err)
			}
			if back.Status != fz.Status || !reflect.DeepEqual(back.Features, fz.Features) {
				t.Fatalf("feature: %+v vs %+v", back, fz)
			}
		}
	})
}
