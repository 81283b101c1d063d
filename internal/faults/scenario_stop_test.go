package faults

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/zktest"
)

// scenarioStopFollower: SIGSTOP a follower of partition 0 (not the
// controller, whose pause would hold every ISR change) past
// replica.lag.time.max.ms: the leaders drop it from their ISRs and writes
// go on in every partition it does not lead; SIGCONT: it catches up and
// rejoins every ISR.
func scenarioStopFollower(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the fault", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		st := c.waitFullISR("every ISR full before the stop")
		ctrl := c.controller()
		f := int32(-1)
		for _, id := range st[0].replicas {
			if id != st[0].leader && id != ctrl {
				f = id
				break
			}
		}
		if f < 0 {
			t.Fatalf("no follower of partition 0 outside the controller (%d): %v", ctrl, st)
		}
		victim := c.broker(f)
		var followed []int32 // partitions it follows
		for _, p := range keys(st) {
			if st[p].leader != f {
				followed = append(followed, p)
			}
		}
		t0 := time.Now()
		victim.pause()
		c.waitState(faultTimeout, fmt.Sprintf("broker %d out of the ISRs of partitions %v", f, followed), func(st map[int32]partView) bool {
			for _, p := range followed {
				if slices.Contains(st[p].isr, f) {
					return false
				}
			}
			return true
		})
		shrunk := time.Since(t0)
		l.waitAcks("writes go on without the stopped follower", l.ackCounts(), ackWindow, followed...)
		stopped := time.Since(t0)
		victim.cont()
		c.waitFullISR("the continued follower back in every ISR")
		t.Logf("round %d: broker %d stopped %v; out of the ISRs of %v after %v (replica.lag.time.max.ms=%d); back in every ISR %v after SIGCONT",
			r, f, stopped.Round(time.Millisecond), followed, shrunk.Round(time.Millisecond), lagTimeMaxMs, (time.Since(t0) - stopped).Round(time.Millisecond))
		l.waitAcks("writes after the follower's return", l.ackCounts(), ackWindow)
	}
	c.finish(l)
}
