package txn

import "errors"

// Sentinel errors of the package. Protocol outcomes (PRODUCER_FENCED,
// CONCURRENT_TRANSACTIONS, ...) are returned as franz-go kerr errors, which
// carry Kafka's error codes; these are the package's own failures.
var (
	// ErrBadRecord marks a __transaction_state record that does not decode.
	ErrBadRecord = errors.New("txn: bad transaction log record")
	// ErrNotOwned is returned by Load/Resign for a partition the coordinator
	// does not hold, and by operations whose partition moved meanwhile.
	ErrNotOwned = errors.New("txn: transaction log partition not owned")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("txn: coordinator closed")
)
