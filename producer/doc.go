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
package producer
