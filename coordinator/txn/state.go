package txn

import "strconv"

// State is a transaction's state, with Kafka's ids as stored in the
// TransactionStatus field of a __transaction_state value.
type State int8

// Kafka's TransactionState values.
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state (DescribeTransactions and
// ListTransactions use these names).
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown(" + strconv.Itoa(int(s)) + ")"
}

// ParseState returns the state named name (Kafka's names).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// valid reports whether s is a known state.
func (s State) valid() bool { return s >= Empty && s <= PrepareEpochFence }

// validPrevious lists, for each state, the states a transaction may move to
// it from (Kafka's TransactionState.validPreviousStates).
var validPrevious = [...][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// canMove reports whether a transaction in from may move to to.
func canMove(from, to State) bool {
	if !to.valid() {
		return false
	}
	for _, p := range validPrevious[to] {
		if p == from {
			return true
		}
	}
	return false
}

// complete reports whether s ends a transaction (nothing in flight).
func (s State) complete() bool { return s == Empty || s == CompleteCommit || s == CompleteAbort }
