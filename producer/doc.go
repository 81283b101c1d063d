// Package producer keeps what Kafka's idempotent and transactional producers
// need from the broker: producer ids and, per partition, each producer's
// state.
//
// # Producer ids
//
// IDAllocator hands out producer ids (InitProducerId, the transaction
// coordinator). Blocks takes them from blocks of BlockSize ids reserved by
// a BlockSource before any id of the block is used: FileBlocks records the
// newest block in the data directory's producer_id_block file, in the JSON
// Kafka keeps in ZooKeeper's /latest_producer_id_block
// ({"version":1,"broker":2,"block_start":"0","block_end":"999"}, bounds
// inclusive); in a cluster, cluster.ProducerIDBlocks reserves them in that
// znode with a conditional write. A restart skips the rest of its block.
// MayBeIssued tells a producer id no broker handed out (above the newest
// block).
//
// # Partition state
//
// State is one partition's producer state, Kafka's ProducerStateManager: per
// producer id its epoch, its last BatchesKept (5) batches' sequence ranges
// and offsets, the coordinator epoch of its last marker, its open
// transaction's first offset and its last timestamp. Check validates a
// leader's batches (Kafka's ProducerAppendInfo for a client: duplicates,
// sequence order with wrap-around at MaxInt32, epochs, unknown producers);
// Apply records a stored batch from any origin, and reports the transaction
// a COMMIT or ABORT marker ended. Producers without an open transaction are
// forgotten producer.id.expiration.ms after their last batch's timestamp.
//
// Snapshots are Kafka's %020d.snapshot files: int16 version (1), uint32
// CRC-32C of the rest, int32 count, then per producer 46 bytes: producer id,
// epoch, last sequence, last offset, offset delta, timestamp, coordinator
// epoch, current transaction's first offset (-1: none); a producer is
// restored with its last batch only. The aborted transaction index
// (.txnindex) holds 34-byte entries: int16 version (0), producer id, first
// offset, last offset (the abort marker's), last stable offset at the abort.
// ErrorCode maps the refusals to Kafka's error codes.
package producer
