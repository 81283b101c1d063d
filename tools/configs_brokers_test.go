package tools

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// TestConfigsBrokers: strata configs --entity-type brokers against two
// brokers and a real ZooKeeper: --alter sets a throttle on broker 1 and on
// the cluster default, --describe shows each with its source and synonyms
// as kafka-configs.sh does (broker 1's own value over the default; broker 2
// inherits the default, so it has no dynamic config of its own), --all adds
// the static ones, and bad input is refused with a usage error.
func TestConfigsBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and two brokers")
	}
	bs, _ := startClusterBrokersWith(t, 2)
	addr := bs[0].Addr().String()
	cfgs := func(args ...string) (string, string, int) {
		return run(t, append([]string{"configs", "--bootstrap-server", addr}, args...)...)
	}
	// Both brokers in the metadata before one is named.
	waitFor(t, 60*time.Second, "both brokers registered", func() bool {
		out, _, code := cfgs("--describe", "--entity-type", "brokers")
		return code == ExitOK && strings.Contains(out, "broker 1 are:") && strings.Contains(out, "broker 2 are:")
	}, func() string { return "" })
	for _, args := range [][]string{
		{"--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "leader.replication.throttled.rate=1000"},
		{"--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "leader.replication.throttled.rate=500,follower.replication.throttled.rate=700"},
	} {
		if out, errOut, code := cfgs(args...); code != ExitOK || !strings.Contains(out, "Completed updating") {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errOut)
		}
	}
	out, errOut, code := cfgs("--describe", "--entity-type", "brokers", "--entity-name", "1")
	want := "Dynamic configs for broker 1 are:\n" +
		"  leader.replication.throttled.rate=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000, DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=500}\n"
	if code != ExitOK || out != want {
		t.Errorf("describe broker 1: exit %d %s\n got:\n%s want:\n%s", code, errOut, out, want)
	}
	out, _, _ = cfgs("--describe", "--entity-type", "brokers", "--entity-default")
	want = "Default configs for brokers in the cluster are:\n" +
		"  follower.replication.throttled.rate=700 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:follower.replication.throttled.rate=700}\n" +
		"  leader.replication.throttled.rate=500 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=500}\n"
	if sortedLines(out) != sortedLines(want) {
		t.Errorf("describe the default:\n got:\n%s want:\n%s", out, want)
	}
	// Through broker 2's own listener: the default shows through.
	out, _, _ = run(t, "configs", "--bootstrap-server", bs[1].Addr().String(), "--describe", "--entity-type", "brokers", "--entity-name", "2", "--all")
	for _, w := range []string{"All configs for broker 2 are:\n",
		"  leader.replication.throttled.rate=500 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=500}\n",
		"  node.id=2 sensitive=false synonyms={STATIC_BROKER_CONFIG:node.id=2, DEFAULT_CONFIG:node.id=0}\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("describe --all broker 2 lacks %q:\n%s", w, out)
		}
	}
	// Deleted on broker 1: nothing dynamic of its own is left.
	if _, errOut, code := cfgs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--delete-config", "leader.replication.throttled.rate"); code != ExitOK {
		t.Fatalf("delete: exit %d %s", code, errOut)
	}
	if out, _, _ := cfgs("--describe", "--entity-type", "brokers", "--entity-name", "1"); out != "Dynamic configs for broker 1 are:\n" {
		t.Errorf("after the delete: %q", out)
	}
	for _, args := range [][]string{
		{"--alter", "--entity-type", "brokers", "--add-config", "leader.replication.throttled.rate=1"},
		{"--alter", "--entity-type", "brokers", "--entity-name", "x", "--add-config", "leader.replication.throttled.rate=1"},
		{"--alter", "--entity-type", "brokers", "--entity-name", "1"},
		{"--describe", "--entity-type", "brokers", "--entity-name", "1", "--entity-default"},
	} {
		if _, errOut, code := cfgs(args...); code != ExitUsage {
			t.Errorf("%v: exit %d (%s)", args, code, errOut)
		}
	}
	// A config the broker does not apply dynamically: refused by the broker.
	if _, errOut, code := cfgs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "num.io.threads=8"); code == ExitOK || !strings.Contains(errOut, "num.io.threads") {
		t.Errorf("num.io.threads: exit %d (%s)", code, errOut)
	}
}

func sortedLines(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(ls)
	return strings.Join(ls, "\n")
}
