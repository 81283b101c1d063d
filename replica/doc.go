// Package replica is a broker's side of Kafka's ISR replication, per partition:
// leader or follower, the in-sync replica set, the high watermark, leader
// epochs and truncation, follower fetching, and the acks=all wait.
//
// # Shape
//
// Like package cluster's controller, the replication logic is synchronous
// state with I/O at the edges, so the same code runs in the broker and in the
// deterministic simulation of a whole cluster:
//
//   - Partition (partition.go) is one partition's replication state over its
//     *segment.Log and its leader-epoch cache. Every method takes the time
//     as an argument, never blocks and starts no goroutine.
//   - Manager (manager.go) holds a broker's partitions and applies the
//     controller's LeaderAndIsr and StopReplica to them, serves follower
//     fetches, appends as leader or follower, and reports what must be sent
//     (AlterPartition to the controller, fetches to leaders) instead of
//     sending it.
//   - Runner (runner.go) is the production edge: replica fetcher goroutines
//     (num.replica.fetchers per source broker, long-polling Fetch requests
//     with this broker's replica id), the ISR-expiry ticker, the
//     replication-offset-checkpoint writer and the AlterPartition sender,
//     over the Kafka protocol. The simulation drives Manager directly instead.
//
// # Protocol (reference: kafka-replication.md)
//
// Leader. Each follower's log end offset (its last fetch offset) and last
// caught-up time are kept: a fetch at or past the leader's log end offset
// makes the follower caught up now; a fetch that reaches the log end offset
// the leader had at the follower's previous fetch makes it caught up as of
// that fetch. A follower not caught up for replica.lag.time.max.ms leaves
// the ISR; an out-of-ISR follower whose log end offset reaches the high
// watermark (and the start of the current leader epoch) rejoins. ISR changes
// are proposed to the controller with AlterPartition, one in flight per
// partition; while one is pending the leader counts the larger of the two
// sets (Kafka's maximal ISR). The high watermark is the smallest log end
// offset over the leader and the maximal ISR; it never goes back on a leader.
// The leader's own log end offset for this purpose is its log's local high
// watermark (the end of the appends that returned, after their fsync under
// flush.messages), so acks=all never counts a record the leader could lose
// to its own flush policy.
//
// Followers fetch from their log end offset with the current leader epoch
// and the epoch of their last batch (Fetch v12); the leader answers
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH to a stale or future epoch
// (KIP-320) and a diverging epoch when the follower's last epoch ends earlier
// on the leader (KIP-101, KIP-279 via Fetch's diverging_epoch): the follower
// truncates there and fetches again. Batches are appended as they are
// (offsets and leader epochs kept, CRC checked); the follower's high
// watermark is min(leader's, own log end offset).
//
// acks=-1: below min.insync.replicas in the ISR the produce is refused before
// the append (NOT_ENOUGH_REPLICAS); otherwise it waits until the high
// watermark passes the batch (then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
// ISR shrank below the minimum meanwhile), the request's timeout passes
// (REQUEST_TIMED_OUT) or leadership is lost (NOT_LEADER_OR_FOLLOWER). Waiters
// sleep on the partition's high-watermark notification; nothing spins.
//
// Leader epochs: leader-epoch-checkpoint in the partition directory (Kafka's
// format), an entry (epoch, start offset) added when a leader starts an
// epoch and when a follower appends the first batch of a new epoch, cut on
// truncation and at the log start. The leader stamps its epoch into every
// batch it appends. replication-offset-checkpoint in each log dir keeps the
// high watermarks (tmp, fsync, rename).
package replica
