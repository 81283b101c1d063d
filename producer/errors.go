package producer

import "errors"

var (
	// ErrBadBlock: a recorded producer id block does not parse.
	ErrBadBlock = errors.New("producer: bad producer id block")
	// ErrBlockIO: reading or writing the producer id block failed.
	ErrBlockIO = errors.New("producer: producer id block I/O")
	// ErrBadSnapshot: a producer snapshot file is damaged.
	ErrBadSnapshot = errors.New("producer: bad snapshot")
	// ErrOutOfOrderSequence: a batch's first sequence does not follow the
	// producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("producer: out of order sequence number")
	// ErrInvalidEpoch: a batch's producer epoch is older than the
	// producer's current one (INVALID_PRODUCER_EPOCH).
	ErrInvalidEpoch = errors.New("producer: invalid producer epoch")
	// ErrUnknownProducer: a batch continues a sequence of a producer the
	// partition has no state for (expired, or never issued):
	// UNKNOWN_PRODUCER_ID.
	ErrUnknownProducer = errors.New("producer: unknown producer id")
	// ErrDuplicate: the batch was appended before (a retry); the caller
	// answers with the original offsets.
	ErrDuplicate = errors.New("producer: duplicate batch")
	// ErrInvalidTxnState: a transactional batch or marker that the
	// producer's transaction state forbids (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("producer: invalid transaction state")
)

// ErrCoordinatorFenced: a marker from a transaction coordinator older than
// the one that wrote the producer's last marker
// (TRANSACTION_COORDINATOR_FENCED).
var ErrCoordinatorFenced = errors.New("producer: transaction coordinator fenced")

// ErrBadTxnIndex: a .txnindex file is damaged or disagrees with its segment.
var ErrBadTxnIndex = errors.New("producer: bad transaction index")
