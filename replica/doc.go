// Package replica is a broker's side of Kafka's ISR replication, per partition:
// leader or follower, the in-sync replica set, the high watermark, leader
// epochs and truncation, follower fetching, and the acks=all wait.
//
// # Shape
//
// Like package cluster's controller, the replication logic is synchronous
// state with I/O at the edges, so the same code runs in the broker and in the
// deterministic simulation of a whole cluster (internal/sim):
//
//   - EpochCache (epochs.go) is a partition's leader-epoch cache, Kafka's
//     LeaderEpochFileCache, written to leader-epoch-checkpoint on every change.
//   - Partition (partition.go, leader.go, follower.go, isr.go, produce.go) is
//     one partition's replication state over its *segment.Log and its
//     leader-epoch cache. Every method takes the time as an argument, waits
//     for nothing but its log's own I/O and starts no goroutine; all are safe
//     for concurrent use (leader appends and fetch serving share a lock, role
//     changes and follower writes hold it alone).
//   - Manager (manager.go, manager_ready.go, manager_serve.go) holds a
//     broker's partitions and applies the controller's LeaderAndIsr and
//     StopReplica to them (refusing, with STALE_BROKER_EPOCH, those carrying
//     the broker epoch of an earlier registration, or any broker epoch
//     before SetBrokerEpoch: KIP-380), serves follower fetches, and reports what must be
//     sent instead of sending it: Ready(now) returns the Fetch requests to
//     leaders (one in flight per source broker and fetcher), the ListOffsets a
//     follower out of range needs, and the AlterPartition for the controller
//     (one in flight per broker); the caller hands every outcome back
//     (FetchResponse, ListOffsetsResponse, AlterPartitionResponse), with an
//     error when the request got no answer. Wake signals new work; Ready's
//     NextMs tells when time alone makes some due.
//   - Runner (to come) is the production edge: replica fetcher goroutines
//     (num.replica.fetchers per source broker, long-polling Fetch requests
//     with this broker's replica id), the ISR-expiry tick (Ready does the
//     check), the replication-offset-checkpoint writer and the AlterPartition
//     sender, over the Kafka protocol. The simulation drives Manager directly
//     instead.
//
// # Protocol (reference: kafka-replication.md)
//
// Leader. Each follower's log end offset (its last fetch offset) and last
// caught-up time are kept: a fetch at or past the leader's log end offset
// makes the follower caught up now; a fetch that reaches the log end offset
// the leader had at the follower's previous fetch makes it caught up as of
// that fetch. A follower not caught up for replica.lag.time.max.ms leaves
// the ISR; an out-of-ISR follower whose log end offset reaches the high
// watermark (and the start of the current leader epoch, KAFKA-7128) rejoins.
// ISR changes are proposed to the controller with AlterPartition, one in
// flight per partition; while one is pending the leader counts the larger of
// the two sets (Kafka's maximal ISR). The controller's answer is applied as
// Kafka 2.8's Partition does: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH
// and INVALID_UPDATE_VERSION give up until the next LeaderAndIsr, other
// errors and lost answers retry, success for another leader epoch or an
// older partition epoch is ignored. (The controller must answer a retry of a
// change it already made with success, as Kafka's equalsIgnoreZk does, or a
// lost answer leaves the leader waiting for a LeaderAndIsr that never comes.)
//
// The high watermark is the smallest log end offset over the leader, the
// maximal ISR, and the followers outside it that caught up within the lag
// time (so a rejoining follower is not outrun: Kafka's
// maybeIncrementLeaderHW); it never goes back on a leader. The leader's own
// log end offset for this purpose is its log's local high watermark (the end
// of the appends that returned, after their fsync under flush.messages), so
// acks=all never counts a record the leader could lose to its own flush
// policy. Consumers read below the high watermark (HighWatermark,
// ReadCommitted); followers up to the log end.
//
// Followers fetch from their log end offset with the current leader epoch
// and the epoch of their last batch (Fetch v12); the leader answers
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH to a stale or future epoch
// (KIP-320) and a diverging epoch when the follower's last epoch ends earlier
// on the leader (KIP-101, KIP-279 via Fetch's diverging_epoch): the follower
// truncates where Kafka's getOffsetTruncationState says and fetches again;
// cutting at or past its log end still drops epoch entries there (a leader
// that appended nothing in its epoch would diverge forever otherwise, as
// Kafka 3 found). A follower's progress counts only for fetches that do not
// diverge. Batches are appended as they are (offsets and leader epochs kept,
// CRC checked, a partial last batch left for the next fetch); the follower's
// high watermark is min(leader's, own log end offset), its log start the
// leader's. OFFSET_OUT_OF_RANGE asks the leader's log end (ListOffsets -1):
// below ours, we cut there; else its log start (-2): above our end, the log
// starts over there (through the LogOpener). Becoming a follower cuts
// nothing when the log has leader epochs; a log without any (written before
// them) is cut to the high watermark.
//
// acks=-1: below min.insync.replicas in the ISR the produce is refused before
// the append (NOT_ENOUGH_REPLICAS); otherwise it waits until the high
// watermark passes the batch (then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
// maximal ISR shrank below the minimum meanwhile), the request's timeout
// passes (REQUEST_TIMED_OUT) or leadership is lost (NOT_LEADER_OR_FOLLOWER),
// even if regained before the waiter looks: the batch may have been
// truncated and its offsets reused. Waiters sleep on the partition's
// high-watermark notification (HWChanged; Await); nothing spins.
//
// Leader epochs: leader-epoch-checkpoint in the partition directory (Kafka's
// format), an entry (epoch, start offset) added when a leader starts an
// epoch (KAFKA-7415) and when a follower appends the first batch of a new
// epoch, cut on truncation and at the log start. The leader stamps its epoch
// into every batch it appends. Loading clamps the cache to the log, checks
// each entry against the batch at its start offset and rebuilds it from the
// batches after the first that disagrees (a power loss can bring a
// truncated tail back under a synced checkpoint), and adds the epochs of the
// batches above the recovery point (or of all batches, when the checkpoint
// is missing or malformed). The broker must therefore write the lowered
// recovery point when a follower truncates (Config.OnTruncate), as Kafka's
// LogManager.truncateTo does, so those batches are scanned after a crash.
// replication-offset-checkpoint in each log dir keeps the high watermarks
// (Manager.CheckpointHighWatermarks; tmp, fsync, rename); at load a
// partition's high watermark is the file's value clamped to [log start, log
// end], 0 when absent or unreadable.
package replica
