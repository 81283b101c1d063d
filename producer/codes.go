package producer

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrorCode maps this package's refusals to Kafka's error codes; 0 when
// err is none of them.
func ErrorCode(err error) int16 {
	switch {
	case errors.Is(err, ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, ErrDuplicate):
		return kerr.DuplicateSequenceNumber.Code
	case errors.Is(err, ErrInvalidEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, ErrUnknownProducer):
		return kerr.UnknownProducerID.Code
	case errors.Is(err, ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	}
	return 0
}
