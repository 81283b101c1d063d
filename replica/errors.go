package replica

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/segment"
)

// Sentinel errors. Each maps to the Kafka error code Kafka answers in the same
// situation (ErrorCode).
var (
	// ErrNotLeader: the partition is not led here (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("replica: not the leader or follower of the partition")
	// ErrUnknownPartition: the partition is not hosted here
	// (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownPartition = errors.New("replica: unknown topic or partition")
	// ErrFencedLeaderEpoch: the request's current leader epoch is older than
	// this replica's (FENCED_LEADER_EPOCH, KIP-320).
	ErrFencedLeaderEpoch = errors.New("replica: fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request's current leader epoch is newer than
	// this replica's (UNKNOWN_LEADER_EPOCH, KIP-320).
	ErrUnknownLeaderEpoch = errors.New("replica: unknown leader epoch")
	// ErrNotEnoughReplicas: acks=-1 with an ISR smaller than
	// min.insync.replicas, refused before the append (NOT_ENOUGH_REPLICAS).
	ErrNotEnoughReplicas = errors.New("replica: not enough in-sync replicas")
	// ErrOffsetOutOfRange: a fetch outside the leader's log, or whose last
	// fetched epoch the leader cannot place (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("replica: offset out of range")
	// ErrStaleControllerEpoch: a control request from an older controller, or
	// a LeaderAndIsr whose leader epoch is not newer (STALE_CONTROLLER_EPOCH).
	ErrStaleControllerEpoch = errors.New("replica: stale controller epoch")
	// ErrInvalidRecords: a follower fetch carried batches that are not
	// well-formed v2 batches with good CRCs continuing the log
	// (CORRUPT_MESSAGE); the fetch is retried after replica.fetch.backoff.ms.
	ErrInvalidRecords = errors.New("replica: invalid records from the leader")
	// ErrStorage: the partition's log or checkpoint could not be read or
	// written (KAFKA_STORAGE_ERROR); the partition stops replicating until
	// the next LeaderAndIsr.
	ErrStorage = errors.New("replica: storage error")
	// ErrInvalidRequest: a control request that makes no sense (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("replica: invalid request")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("replica: closed")
	// ErrNoController: the Runner knows no controller to send
	// AlterPartition to.
	ErrNoController = errors.New("replica: no controller known")
	// ErrNoEndpoint: the Runner knows no address for a leader (no
	// LeaderAndIsr live_leaders entry names it).
	ErrNoEndpoint = errors.New("replica: no address for broker")
	// ErrRunnerStopped: a request was abandoned because the Runner stopped.
	ErrRunnerStopped = errors.New("replica: runner stopped")
)

// ErrorCode is the Kafka error code for err (0 for nil).
func ErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, ErrOffsetOutOfRange), errors.Is(err, segment.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, ErrStaleControllerEpoch):
		return kerr.StaleControllerEpoch.Code
	case producer.ErrorCode(err) != 0:
		return producer.ErrorCode(err)
	case errors.Is(err, ErrInvalidRecords):
		return kerr.CorruptMessage.Code
	case errors.Is(err, ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	}
	return kerr.KafkaStorageError.Code
}
