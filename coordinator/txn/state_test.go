package txn

import "testing"

// TestTransitions: Kafka's valid previous states, and nothing else.
func TestTransitions(t *testing.T) {
	ok := map[[2]State]bool{}
	for to, froms := range validPrevious {
		for _, from := range froms {
			ok[[2]State{from, State(to)}] = true
		}
	}
	for from := Empty; from <= PrepareEpochFence; from++ {
		for to := Empty; to <= PrepareEpochFence+1; to++ {
			if got := canMove(from, to); got != ok[[2]State{from, to}] {
				t.Errorf("canMove(%s, %s) = %v", from, to, got)
			}
		}
	}
	for _, bad := range [][2]State{{Empty, CompleteCommit}, {Ongoing, CompleteAbort}, {PrepareCommit, PrepareAbort}, {CompleteAbort, PrepareCommit}} {
		if canMove(bad[0], bad[1]) {
			t.Errorf("%s -> %s allowed", bad[0], bad[1])
		}
	}
}
