package faults

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/internal/zktest"
)

// probes is what a probeLoop saw.
type probes struct {
	codes    map[string]int // outcome -> count
	acked    []string       // probe values acknowledged
	timedOut int            // REQUEST_TIMED_OUT: appended, not acknowledged
}

// probeLoop sends acks=all probes (one attempt each, 2 s timeout) to
// partition p at broker b, one after the other, until stop closes, and
// then hands back what they got.
func (l *load) probeLoop(b *broker, p int32, kind string, stop <-chan struct{}) <-chan probes {
	out := make(chan probes, 1)
	go func() {
		pr := probes{codes: map[string]int{}}
		for {
			select {
			case <-stop:
				out <- pr
				return
			default:
			}
			v := l.probeValue(kind)
			code, err := l.probe(b, p, -1, v, 2*time.Second)
			switch {
			case err != nil:
				pr.codes["transport: "+errKind(err)]++
			case code == 0:
				pr.acked = append(pr.acked, v)
				pr.codes["acknowledged"]++
			default:
				if code == kerr.RequestTimedOut.Code {
					pr.timedOut++
				}
				pr.codes[kerr.ErrorForCode(code).Error()]++
			}
		}
	}()
	return out
}

// leaderNotController picks a partition whose leader is not the
// controller.
func (c *cluster) leaderNotController(st map[int32]partView) (int32, partView) {
	c.t.Helper()
	ctrl := c.controller()
	for _, p := range keys(st) {
		if st[p].leader != ctrl {
			return p, st[p]
		}
	}
	c.t.Fatalf("the controller (%d) leads every partition: %v", ctrl, st)
	return 0, partView{}
}

// scenarioIsolateLeader: the leader of a partition (not the controller)
// is cut from the other brokers (both ways) and from ZooKeeper; clients
// still reach it. Jepsen's 2013 case: it must not acknowledge acks=all
// writes (it cannot reach its followers, and cannot shrink its ISR
// without the controller), so probes sent to it time out; once its
// session expires the controller elects a new leader from the ISR and
// writes go on there. After healing, the old leader registers again,
// follows the new leader and truncates what it appended alone (the
// probes): no replica holds a probe value at the end.
func scenarioIsolateLeader(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the fault", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		st := c.waitFullISR("every ISR full before the isolation")
		p, old := c.leaderNotController(st)
		victim := c.broker(old.leader)
		kind := fmt.Sprintf("iso%d", r)
		mark := l.ackCounts()
		t0 := time.Now()
		c.cut(victim)
		stop := make(chan struct{})
		res := l.probeLoop(victim, p, kind, stop)
		c.waitState(faultTimeout, fmt.Sprintf("partition %d led by another broker of its ISR", p), func(st map[int32]partView) bool {
			pv := st[p]
			return pv.leader != old.leader && pv.epoch > old.epoch && !slices.Contains(pv.isr, old.leader)
		}, victim.id)
		elected := time.Since(t0)
		l.waitAcks("writes go on under the new leader", mark, ackWindow, p)
		// Probe the old leader a while longer: it still believes it leads.
		more := l.probeSeq.Load() + 2
		c.waitFor(faultTimeout, "two more probes of the isolated leader", func() (bool, string) { return l.probeSeq.Load() > more, "" })
		close(stop)
		pr := <-res
		truncs := victim.truncations()
		c.heal(victim)
		c.waitFullISR("the healed broker back in every ISR")
		truncated := victim.truncations() - truncs
		t.Logf("round %d: broker %d (leader of partition %d) isolated; new leader after %v; probes to it: %v; it truncated %d times after healing",
			r, old.leader, p, elected.Round(time.Millisecond), pr.codes, truncated)
		if len(pr.acked) > 0 {
			t.Errorf("the isolated leader acknowledged acks=all writes: %v", pr.acked)
		}
		if pr.timedOut > 0 && truncated == 0 {
			t.Errorf("the isolated leader appended %d probes (REQUEST_TIMED_OUT) but did not truncate after healing", pr.timedOut)
		}
		l.waitAcks("writes after healing", l.ackCounts(), ackWindow)
	}
	_, reps := c.finish(l)
	if left := valuesWithPrefix(reps, "probe-iso"); len(left) > 0 {
		t.Errorf("values the isolated leader appended alone are still in the log: %v", left)
	}
}

// expireSession black-holes broker b's ZooKeeper proxy until ZooKeeper
// has expired its session (its /brokers/ids znode is gone), returning how
// long that took.
func (c *cluster) expireSession(b *broker) time.Duration {
	c.t.Helper()
	t0 := time.Now()
	b.zk.Block()
	c.waitFor(faultTimeout, fmt.Sprintf("broker %d's session expired", b.id), func() (bool, string) {
		ids, err := c.registered()
		return err == nil && !slices.Contains(ids, b.id), fmt.Sprintf("registered %v %v", ids, err)
	})
	return time.Since(t0)
}

// restoreSession heals broker b's ZooKeeper proxy and waits until it has
// registered again.
func (c *cluster) restoreSession(b *broker) {
	c.t.Helper()
	b.zk.Unblock()
	c.waitFor(faultTimeout, fmt.Sprintf("broker %d registered again", b.id), func() (bool, string) {
		ids, err := c.registered()
		return err == nil && slices.Contains(ids, b.id), fmt.Sprintf("registered %v %v", ids, err)
	})
}

// scenarioExpireSessions: the ZooKeeper session of the controller
// expires (its ZooKeeper proxy black-holed past the session timeout):
// another broker is elected controller, the expired one's partitions get
// new leaders and writes go on; healed, it registers again and rejoins
// every ISR. Then the same for a leader that is not the controller, whose
// acks=all probes must not be acknowledged while it is expired (its
// followers follow the new leader; the controller refuses its ISR
// changes), and which truncates what it appended meanwhile.
func scenarioExpireSessions(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the faults", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		// The controller.
		c.waitFullISR("every ISR full before the controller's expiry")
		ctrl := c.controller()
		victim := c.broker(ctrl)
		mark := l.ackCounts()
		took := c.expireSession(victim)
		c.waitFor(faultTimeout, "another controller", func() (bool, string) {
			now := c.controller()
			return now >= 1 && now != ctrl, fmt.Sprintf("controller %d", now)
		})
		c.waitState(faultTimeout, "no partition led by the expired controller", func(st map[int32]partView) bool {
			for _, pv := range st {
				if pv.leader == ctrl || slices.Contains(pv.isr, ctrl) {
					return false
				}
			}
			return true
		}, ctrl)
		l.waitAcks("writes go on after the controller's expiry", mark, ackWindow)
		t.Logf("round %d: controller %d's session expired %v after its ZooKeeper link was cut; new controller %d",
			r, ctrl, took.Round(time.Millisecond), c.controller())
		c.restoreSession(victim)
		c.waitFullISR("the expired controller back in every ISR")

		// A leader.
		st := c.waitFullISR("every ISR full before the leader's expiry")
		p, old := c.leaderNotController(st)
		victim = c.broker(old.leader)
		kind := fmt.Sprintf("exp%d", r)
		mark = l.ackCounts()
		took = c.expireSession(victim)
		c.waitState(faultTimeout, fmt.Sprintf("partition %d led by another broker", p), func(st map[int32]partView) bool {
			pv := st[p]
			return pv.leader != old.leader && pv.epoch > old.epoch && !slices.Contains(pv.isr, old.leader)
		}, victim.id)
		// Until its followers follow the new leader the expired one may
		// still acknowledge (what it acknowledges is on the ISR the new
		// leader came from: the history checks it stays); from now on it
		// must not.
		stop := make(chan struct{})
		res := l.probeLoop(victim, p, kind, stop)
		l.waitAcks("writes go on after the leader's expiry", mark, ackWindow, p)
		more := l.probeSeq.Load() + 3
		c.waitFor(faultTimeout, "three probes of the expired leader", func() (bool, string) { return l.probeSeq.Load() > more, "" })
		close(stop)
		pr := <-res
		truncs := victim.truncations()
		c.restoreSession(victim)
		c.waitFullISR("the expired leader back in every ISR")
		truncated := victim.truncations() - truncs
		t.Logf("round %d: leader %d of partition %d: session expired %v after its ZooKeeper link was cut; probes to it: %v; it truncated %d times after",
			r, old.leader, p, took.Round(time.Millisecond), pr.codes, truncated)
		if len(pr.acked) > 0 {
			t.Errorf("the expired leader acknowledged acks=all writes: %v", pr.acked)
		}
		if pr.timedOut > 0 && truncated == 0 {
			t.Errorf("the expired leader appended %d probes (REQUEST_TIMED_OUT) but did not truncate after", pr.timedOut)
		}
		l.waitAcks("writes after healing", l.ackCounts(), ackWindow)
	}
	_, reps := c.finish(l)
	if left := valuesWithPrefix(reps, "probe-exp"); len(left) > 0 {
		t.Errorf("values the expired leader appended alone are still in the log: %v", left)
	}
}
