// Package txn is Kafka's transaction coordinator as a state machine, with
// its I/O at the edges: a Store that appends to the compacted internal
// topic __transaction_state, a MarkerWriter that sends WriteTxnMarkers to
// partition leaders, and an IDAllocator of producer ids.
//
// # States
//
// Each transactional id has a state (Kafka's TransactionState ids):
// Empty(0), Ongoing(1), PrepareCommit(2), PrepareAbort(3),
// CompleteCommit(4), CompleteAbort(5), Dead(6), PrepareEpochFence(7).
//
//	InitProducerId     Empty|Complete* -> Empty, epoch+1 (a new producer id
//	                   once the epoch is exhausted); Ongoing -> PrepareAbort
//	                   with epoch+1 (the old producer fenced), answered
//	                   CONCURRENT_TRANSACTIONS so the client retries
//	AddPartitionsToTxn Empty|Complete*|Ongoing -> Ongoing (+partitions)
//	AddOffsetsToTxn    the same, with the group's __consumer_offsets partition
//	EndTxn             Ongoing -> PrepareCommit|PrepareAbort, answered once
//	                   written; then markers to every partition, then
//	                   CompleteCommit|CompleteAbort (in the background;
//	                   before the answer when the MarkerWriter is a
//	                   LocalMarkerWriter whose partitions are all local, a
//	                   single node, so the producer's next transaction does
//	                   not meet CONCURRENT_TRANSACTIONS; what fails then is
//	                   left to the background, from the step that failed)
//	timeout            Ongoing older than transaction.timeout.ms ->
//	                   PrepareAbort with epoch+1 (AbortTimedOut)
//	expiry             Empty|Complete* idle for transactional.id.expiration.ms
//	                   -> Dead: a tombstone (ExpireIDs)
//
// A request naming another producer id is INVALID_PRODUCER_ID_MAPPING,
// another epoch PRODUCER_FENCED; one arriving while a change of the id is
// being written or completed is CONCURRENT_TRANSACTIONS; EndTxn that does
// not match the state (no transaction begun, commit after abort) is
// INVALID_TXN_STATE. Every change is written to __transaction_state before
// it takes effect; a failed write leaves the state as it was
// (COORDINATOR_NOT_AVAILABLE).
//
// # Ownership
//
// The coordinator owns the __transaction_state partitions this broker
// leads; the partition of an id is Kafka's abs(hashCode(id)) %
// transaction.state.log.num.partitions. Load replays a partition (last
// record of an id wins, tombstones remove it) and completes the
// transactions found prepared but not complete (the previous coordinator
// died between PrepareCommit and CompleteCommit); the partition's leader
// epoch is the coordinator epoch written in the markers. Resign drops it.
//
// # Records
//
// The key and value formats are Kafka's TransactionLogKey v0 and
// TransactionLogValue v0 (v1 read too); see logformat.go.
package txn
