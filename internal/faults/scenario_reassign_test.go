package faults

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/zktest"
	"github.com/stratalog/strata/tools"
)

// reassign runs `strata reassign --bootstrap-server ... args` (the
// running brokers: a stopped one would take the tool's requests and
// never answer) and returns its exit status and output.
func (c *cluster) reassign(args ...string) (int, string) {
	var out bytes.Buffer
	var addrs []string
	for _, b := range c.b {
		if b.is(running) {
			addrs = append(addrs, b.clientAddr())
		}
	}
	full := append([]string{"strata", "reassign", "--timeout", "120s", "--bootstrap-server", strings.Join(addrs, ",")}, args...)
	code := tools.Main(full, &out, &out)
	return code, out.String()
}

func (c *cluster) planFile(name string, p int32, replicas string) string {
	path := filepath.Join(c.base, name)
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%d,"replicas":[%s]}]}`, topic, p, replicas)
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// waitRegistered waits until broker id's registration is there (want) or
// gone.
func (c *cluster) waitRegistered(id int32, want bool) {
	c.t.Helper()
	c.waitFor(faultTimeout, fmt.Sprintf("broker %d registered: %v", id, want), func() (bool, string) {
		ids, err := c.registered()
		return err == nil && slices.Contains(ids, id) == want, fmt.Sprintf("registered %v %v", ids, err)
	})
}

// waitVerify polls `strata reassign --verify` until its output contains
// want.
func (c *cluster) waitVerify(plan, want string) {
	c.t.Helper()
	c.waitFor(settleTimeout, "reassign --verify: "+want, func() (bool, string) {
		_, out := c.reassign("--verify", "--reassignment-json-file", plan)
		return strings.Contains(out, want), out
	})
}

// scenarioReassign: four brokers, the topic on brokers 1-3, the steady
// acks=all producer running throughout.
//
//  1. Broker 4's connections to the others are cut (it stays registered
//     but cannot fetch) and partition 0 is reassigned from {1,2,3} to
//     {2,3,4}: the rollback JSON is printed, a second --execute is refused
//     while it runs. The controller is stopped (SIGTERM) and restarted:
//     another takes over half-way. Broker 4 dies (SIGKILL): still in
//     progress. It restarts with its connections back, catches up, and the
//     reassignment completes (leadership leaves 1, 1's replica is
//     deleted).
//  2. Broker 4 is cut again, partition 1 reassigned from {2,3,1} to
//     {2,3,4}; 4 dies; --cancel restores {2,3,1}; 4 restarts.
//
// finish then checks that no acknowledged record was lost and every
// replica of the final assignment holds the same batches.
func scenarioReassign(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{brokers: 4})
	b4 := c.broker(4)
	if c.controller() == 4 {
		// Broker 4's cut connections must not be the controller's.
		b4.term()
		c.waitFor(faultTimeout, "another controller", func() (bool, string) {
			id := c.controller()
			return id > 0 && id != 4, fmt.Sprintf("controller %d", id)
		})
		b4.start()
		c.waitLive("broker 4 back")
	}
	cut4 := func(cut bool) {
		for _, o := range c.others(4) {
			if cut {
				o.ib.BlockSource(b4.label())
			} else {
				o.ib.UnblockSource(b4.label())
			}
		}
	}
	c.createTopic([][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the reassignment", [numParts]int{}, ackWindow)

	cut4(true)
	move := c.planFile("move.json", 0, "2,3,4")
	code, out := c.reassign("--execute", "--reassignment-json-file", move)
	rollback := `{"version":1,"partitions":[{"topic":"faults","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}`
	if code != 0 || !strings.Contains(out, rollback) || !strings.Contains(out, "Successfully started partition reassignments for faults-0") {
		t.Fatalf("execute: exit %d\n%s", code, out)
	}
	other := c.planFile("other.json", 2, "3,4,1")
	if code, out := c.reassign("--execute", "--reassignment-json-file", other); code != tools.ExitProblems || !strings.Contains(out, "a reassignment is in progress (faults-0)") {
		t.Fatalf("second execute while one runs: exit %d\n%s", code, out)
	}
	ctl := c.broker(c.controller())
	ctl.term()
	c.waitFor(faultTimeout, "a new controller", func() (bool, string) {
		id := c.controller()
		return id > 0 && id != ctl.id, fmt.Sprintf("controller %d", id)
	})
	ctl.start()
	b4.kill()
	c.waitRegistered(4, false)
	if _, out := c.reassign("--verify", "--reassignment-json-file", move); !strings.Contains(out, "Reassignment of partition faults-0 is still in progress.") {
		t.Fatalf("verify with broker 4 gone:\n%s", out)
	}
	cut4(false)
	b4.start()
	c.waitVerify(move, "Reassignment of partition faults-0 is complete.")
	c.waitState(settleTimeout, "partition 0 on {2,3,4}, led by 2", func(st map[int32]partView) bool {
		return slices.Equal(st[0].replicas, []int32{2, 3, 4}) && st[0].leader == 2
	})
	mark := l.ackCounts()
	l.waitAcks("writes go on after the move", mark, ackWindow)

	cut4(true)
	grow := c.planFile("grow.json", 1, "2,3,4")
	if code, out := c.reassign("--execute", "--reassignment-json-file", grow); code != 0 {
		t.Fatalf("execute p1: exit %d\n%s", code, out)
	}
	b4.kill()
	c.waitRegistered(4, false)
	if code, out := c.reassign("--cancel", "--reassignment-json-file", grow); code != 0 || !strings.Contains(out, "Successfully cancelled partition reassignments for: faults-1") {
		t.Fatalf("cancel: exit %d\n%s", code, out)
	}
	c.waitVerify(grow, "There is no active reassignment of partition faults-1, but replica set is [2,3,1] rather than [2,3,4].")
	cut4(false)
	b4.start()
	mark = l.ackCounts()
	l.waitAcks("writes go on after the cancel", mark, ackWindow)

	c.finish(l)
	if !slices.Equal(c.final[0], []int32{2, 3, 4}) || !slices.Equal(c.final[1], []int32{2, 3, 1}) {
		t.Errorf("final replicas %v", c.final)
	}
	for _, d := range c.broker(1).dirs() {
		if _, err := os.Stat(filepath.Join(d, topic+"-0")); err == nil {
			t.Errorf("broker 1 still holds %s-0 in %s after the move", topic, d)
		}
	}
}
