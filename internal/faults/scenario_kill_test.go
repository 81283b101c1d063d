package faults

import (
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/zktest"
)

// scenarioKillLeader: SIGKILL the leader of partition 0 under load; a new
// leader from the ISR takes over once the killed broker's session
// expires, and writes go on; the killed broker restarts, truncates by
// leader epoch where its log diverged, and rejoins every ISR.
func scenarioKillLeader(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the fault", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		st := c.waitFullISR("every ISR full before the kill")
		old := st[0]
		victim := c.broker(old.leader)
		mark := l.ackCounts()
		t0 := time.Now()
		victim.kill()
		c.waitState(faultTimeout, "partition 0 led again without the killed broker", func(st map[int32]partView) bool {
			pv := st[0]
			return pv.leader != old.leader && pv.epoch > old.epoch && !slices.Contains(pv.isr, old.leader)
		})
		l.waitAcks("writes go on after the kill", mark, ackWindow)
		if d, ok := l.firstAckAfter(0, t0); ok {
			measure(t, "failover after SIGKILL of the leader (broker %d): partition 0 acknowledged again %v after the kill (floor: session timeout + 1 s = %v)",
				old.leader, d.Round(time.Millisecond), time.Duration(sessionTimeoutMs)*time.Millisecond+time.Second)
		}
		truncs := victim.truncations()
		victim.start()
		c.waitFullISR("the restarted broker back in every ISR")
		t.Logf("round %d: broker %d killed and restarted; it truncated %d times", r, old.leader, victim.truncations()-truncs)
		l.waitAcks("writes after the restart", l.ackCounts(), ackWindow)
	}
	c.finish(l)
}

// scenarioKillTwo: SIGKILL the leader of partition 0, then (once writes
// go on) its new leader: the last broker leads every partition alone and
// acknowledges no acks=all write (min.insync.replicas=2); the brokers
// restart in the other order: with the second one back writes go on, then
// the first rejoins every ISR.
func scenarioKillTwo(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the faults", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		st := c.waitFullISR("every ISR full before the kills")
		first := st[0].leader
		mark := l.ackCounts()
		c.broker(first).kill()
		st = c.waitState(faultTimeout, "partition 0 led again without the first killed broker", func(st map[int32]partView) bool {
			return st[0].leader != first && !slices.Contains(st[0].isr, first)
		})
		l.waitAcks("writes go on with two brokers", mark, ackWindow)
		second := st[0].leader
		c.broker(second).kill()
		last := c.others(first, second)[0].id
		c.waitState(faultTimeout, "every partition led by the last broker alone", func(st map[int32]partView) bool {
			for _, pv := range st {
				if pv.leader != last || !slices.Equal(pv.isr, []int32{last}) {
					return false
				}
			}
			return true
		})
		alone := time.Now()
		mark = l.ackCounts()
		back := time.Now()
		c.broker(second).start()
		if n := l.ackedWithin(alone, back); n != 0 {
			t.Errorf("%d acks=all writes sent and acknowledged while broker %d was the only replica in sync (min.insync.replicas=2)", n, last)
		}
		c.waitState(faultTimeout, "the second killed broker back in every ISR", func(st map[int32]partView) bool {
			for _, pv := range st {
				if len(pv.isr) != 2 {
					return false
				}
			}
			return true
		})
		l.waitAcks("writes go on with the second killed broker back", mark, ackWindow)
		c.broker(first).start()
		c.waitFullISR("the first killed broker back in every ISR")
		t.Logf("round %d: killed broker %d then %d, restarted %d then %d", r, first, second, second, first)
	}
	c.finish(l)
}
