package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// showConfig is a described config as "value SOURCE [synonyms]" (read-only
// configs marked ro).
func showConfig(c kadm.Config) string {
	val := func(v *string) string {
		if v == nil {
			return "<nil>"
		}
		return *v
	}
	var syns []string
	for _, s := range c.Synonyms {
		syns = append(syns, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, val(s.Value)))
	}
	return fmt.Sprintf("%s %s [%s]", val(c.Value), c.Source, strings.Join(syns, " "))
}

// describedBroker describes the broker resource (no id: the cluster
// default) with kadm and returns its configs by name.
func describedBroker(t *testing.T, adm *kadm.Client, ids ...int32) map[string]kadm.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker %v: %+v", ids, rcs)
	}
	out := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		out[c.Key] = c
	}
	return out
}

// TestDescribeDynamicBrokerConfigs: with a real ZooKeeper, the replication
// throttles set per broker and for the cluster default (AlterConfigs on the
// broker resource) are reported by DescribeConfigs as Kafka reports them:
// the per-broker value with DYNAMIC_BROKER_CONFIG over the default's
// DYNAMIC_DEFAULT_BROKER_CONFIG (synonyms in that order, then static, then
// default), the cluster default resource (name "") listing only what
// <default> sets; static configs keep their sources and stay read-only.
// Before, the broker resource listed only static configs and "" described
// the broker itself.
func TestDescribeDynamicBrokerConfigs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	_, connect := testZK(t)
	b := startClusterBroker(t, connect, 1, t.TempDir())
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, 30*time.Second, "broker 1 in the metadata", func() bool {
		m, err := adm.BrokerMetadata(ctx)
		return err == nil && len(m.Brokers) == 1 && m.Brokers[0].NodeID == 1
	})
	alter := func(configs []kadm.AlterConfig, ids ...int32) {
		t.Helper()
		rs, err := adm.AlterBrokerConfigs(ctx, configs, ids...)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = fmt.Errorf("%s: %w (%s)", r.Name, r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			t.Fatalf("alter broker configs %v: %v", ids, err)
		}
	}
	// Nothing dynamic yet: the throttles are not listed, the default
	// resource is empty.
	if c, ok := describedBroker(t, adm, 1)[leaderThrottledRate]; ok {
		t.Errorf("unset throttle described: %s", showConfig(c))
	}
	if d := describedBroker(t, adm); len(d) != 0 {
		t.Errorf("cluster default with nothing set lists %d configs, want none", len(d))
	}

	alter([]kadm.AlterConfig{{Name: leaderThrottledRate, Value: kmsg.StringPtr("1000")}}, 1)
	alter([]kadm.AlterConfig{{Name: leaderThrottledRate, Value: kmsg.StringPtr("500")}, {Name: followerThrottledRate, Value: kmsg.StringPtr("700")}})

	got := describedBroker(t, adm, 1)
	for name, want := range map[string]string{
		leaderThrottledRate: "1000 DYNAMIC_BROKER_CONFIG [DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000 " +
			"DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=500]",
		followerThrottledRate: "700 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:follower.replication.throttled.rate=700]",
		// The harness's override: static, then the built-in default.
		"group.initial.rebalance.delay.ms": "0 STATIC_BROKER_CONFIG [STATIC_BROKER_CONFIG:group.initial.rebalance.delay.ms=0 " +
			"DEFAULT_CONFIG:group.initial.rebalance.delay.ms=3000]",
	} {
		if c, ok := got[name]; !ok || showConfig(c) != want {
			t.Errorf("broker 1 %s:\n got  %s\n want %s", name, showConfig(c), want)
		}
	}
	def := describedBroker(t, adm)
	if len(def) != 2 {
		t.Errorf("cluster default lists %d configs, want the 2 set", len(def))
	}
	for name, want := range map[string]string{
		leaderThrottledRate:   "500 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=500]",
		followerThrottledRate: "700 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:follower.replication.throttled.rate=700]",
	} {
		if c, ok := def[name]; !ok || showConfig(c) != want {
			t.Errorf("cluster default %s:\n got  %s\n want %s", name, showConfig(c), want)
		}
	}

	// Read-only flags and the v0 default flag, over the raw protocol.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	rr.ConfigNames = []string{leaderThrottledRate, "group.initial.rebalance.delay.ms"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if rs := resp.Resources; len(rs) != 1 || len(rs[0].Configs) != 2 {
		t.Fatalf("ConfigNames filter: %+v", resp.Resources)
	}
	for _, c := range resp.Resources[0].Configs {
		if ro := c.Name != leaderThrottledRate; c.ReadOnly != ro || c.IsDefault || len(c.ConfigSynonyms) != 0 {
			t.Errorf("%s: read-only %v is-default %v synonyms %v (not asked for)", c.Name, c.ReadOnly, c.IsDefault, c.ConfigSynonyms)
		}
	}

	// The per-broker value deleted: the default's shows through.
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: leaderThrottledRate}}, 1)
	if err != nil || rs[0].Err != nil {
		t.Fatalf("delete: %v %+v", err, rs)
	}
	want := "500 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=500]"
	if c := describedBroker(t, adm, 1)[leaderThrottledRate]; showConfig(c) != want {
		t.Errorf("after the per-broker delete:\n got  %s\n want %s", showConfig(c), want)
	}
	// Another broker's resource is refused by this one, as Kafka does.
	if rcs, err := adm.DescribeBrokerConfigs(ctx, 2); err == nil && len(rcs) == 1 && rcs[0].Err == nil {
		t.Errorf("broker 1 described broker 2: %+v", rcs)
	}
}
