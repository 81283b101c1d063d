package faults

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/internal/zktest"
)

// scenarioRollingRestart: each broker in turn is stopped with SIGTERM
// (controlled shutdown: the controller moves its leaderships away before
// it stops) and restarted, and the next waits until it is back in every
// ISR. No record is lost; the longest time a partition went without an
// acknowledgement while a broker shut down is measured (floor in issue
// 18: SIGTERM of a leader, longest stall <= 1 s).
func scenarioRollingRestart(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{extra: []string{"controlled.shutdown.enable=true"}})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the restarts", [numParts]int{}, ackWindow)
	var longest time.Duration
	for r := 0; r < rounds(t); r++ {
		for _, b := range c.b {
			st := c.waitFullISR("every ISR full before the SIGTERM")
			var led []int32
			for _, p := range keys(st) {
				if st[p].leader == b.id {
					led = append(led, p)
				}
			}
			mark := l.ackCounts()
			t0 := time.Now()
			took := b.term()
			// Moved before it exited: the others already show new leaders.
			c.waitState(faultTimeout, "the stopped broker's partitions led by others", func(st map[int32]partView) bool {
				for _, pv := range st {
					if pv.leader == b.id {
						return false
					}
				}
				return true
			})
			l.waitAcks("writes go on while the broker is down", mark, ackWindow)
			// From the signal until every partition took ackWindow writes
			// after it: a stall that outlasts the exit counts whole.
			t1 := time.Now()
			var stall time.Duration
			var where string
			for p := int32(0); p < numParts; p++ {
				if d, began := l.longestGap(p, t0, t1); d > stall {
					stall, where = d, fmt.Sprintf("partition %d, from %v after the signal", p, began.Sub(t0).Round(time.Millisecond))
				}
			}
			longest = max(longest, stall)
			measure(t, "round %d: SIGTERM of broker %d (leader of %v): controlled shutdown and exit took %v; longest acks=all stall %v (%s; floor: 1s)",
				r, b.id, led, took.Round(time.Millisecond), stall.Round(time.Millisecond), where)
			b.start()
			c.waitFullISR("the restarted broker back in every ISR")
		}
	}
	measure(t, "rolling restart with SIGTERM: longest acks=all stall %v (floor: 1s)", longest.Round(time.Millisecond))
	c.finish(l)
}

// scenarioTwoDown: two of three brokers killed: the last one leads every
// partition with itself alone in the ISR; acks=all is refused with
// NOT_ENOUGH_REPLICAS before the append (a probe without retries: a
// definite failure, which must never show up in a log), acks=1 works (a
// weak acknowledgement); the steady producer gets nothing acknowledged
// meanwhile. The two restart and rejoin every ISR.
func scenarioTwoDown(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the faults", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		st := c.waitFullISR("every ISR full before the kills")
		survivor := c.broker(st[0].leader)
		down := c.others(survivor.id)
		for _, b := range down {
			b.kill()
		}
		c.waitState(faultTimeout, "every partition led by the last broker alone", func(st map[int32]partView) bool {
			for _, pv := range st {
				if pv.leader != survivor.id || !slices.Equal(pv.isr, []int32{survivor.id}) {
					return false
				}
			}
			return true
		})
		alone := time.Now()
		for p := int32(0); p < numParts; p++ {
			code, err := l.probe(survivor, p, -1, l.probeValue("all"), 5*time.Second)
			if err != nil || code != kerr.NotEnoughReplicas.Code {
				t.Errorf("acks=all to partition %d with one replica in sync: %v %v, want NOT_ENOUGH_REPLICAS", p, kerr.ErrorForCode(code), err)
			}
			code, err = l.probe(survivor, p, 1, l.probeValue("one"), 5*time.Second)
			if err != nil || code != 0 {
				t.Errorf("acks=1 to partition %d with one replica in sync: %v %v, want it acknowledged", p, kerr.ErrorForCode(code), err)
			}
		}
		mark := l.ackCounts()
		back := time.Now()
		for _, b := range down {
			b.start()
		}
		if n := l.ackedWithin(alone, back); n != 0 {
			t.Errorf("%d acks=all writes sent and acknowledged while broker %d was the only replica in sync", n, survivor.id)
		}
		c.waitFullISR("both restarted brokers back in every ISR")
		l.waitAcks("writes after the restarts", mark, ackWindow)
	}
	rep, _ := c.finish(l)
	if rep.WeakLost > 0 {
		t.Logf("%d of %d acks=1 writes lost (allowed: no durability promise)", rep.WeakLost, rep.WeakAcked)
	}
}
