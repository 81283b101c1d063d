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
//   - Partition (partition.go, leader.go, follower.go, follower_ahead.go,
//     isr.go, produce.go) is
//     one partition's replication state over its *segment.Log and its
//     leader-epoch cache. Every method takes the time as an argument, waits
//     for nothing but its log's own I/O and starts no goroutine; all are safe
//     for concurrent use (leader appends and fetch serving share a lock, role
//     changes and follower writes hold it alone).
//   - Manager (manager.go, manager_ready.go, manager_ahead.go,
//     manager_serve.go) holds a
//     broker's partitions and applies the controller's LeaderAndIsr and
//     StopReplica to them (refusing, with STALE_BROKER_EPOCH, those carrying
//     the broker epoch of an earlier registration, or any broker epoch
//     before SetBrokerEpoch: KIP-380), serves follower fetches, and reports what must be
//     sent instead of sending it: Ready(now) returns the Fetch requests to
//     leaders (one in flight per source broker and fetcher; FetchAhead adds
//     a second one, see Protocol), the ListOffsets a
//     follower out of range needs, and the AlterPartition for the controller
//     (one in flight per broker); the caller hands every outcome back
//     (FetchResponse, ListOffsetsResponse, AlterPartitionResponse), with an
//     error when the request got no answer. Wake signals new work; Ready's
//     NextMs tells when time alone makes some due.
//   - Quota (quota.go) is a replication throttle, Kafka's
//     ReplicationQuotaManager: a bound in bytes/s, the bytes of throttled
//     partitions over replication.quota.window.num samples of
//     replication.quota.window.size.seconds (the time counted as at least
//     num-1 windows), and the throttled partitions. The Manager keeps two
//     (LeaderQuota, FollowerQuota; Config may give them): Ready leaves a
//     follower partition that is throttled and not caught up (the last
//     answer did not bring it to the leader's high watermark) out of its
//     Fetch while the follower quota is over its bound, NextMs being when
//     it no longer is (Quota.WaitMs; the Fetch the target's other
//     partitions make meanwhile long-polls no longer than that, so the
//     throttled one is not held back by an idle partition's poll), and
//     FetchResponse counts the whole
//     batches throttled partitions receive (WholeBatchBytes: a partial
//     last batch is fetched again, and counted then). The leader side is
//     the broker's: it leaves the data of a throttled partition out of a
//     response to a follower not in the ISR (Partition.InSync) while the
//     leader quota is over its bound, and otherwise sends it whole
//     batches only (as to every follower) and counts them.
//   - Runner (runner.go, runner_fetcher.go, runner_send.go) is the
//     production edge: it sends what Ready asks over the Kafka protocol
//     (internal/kwire) and hands every outcome back; see Runner below. The
//     simulation drives Manager directly instead.
//
// # Runner
//
// StartRunner(m, RunnerOptions) starts, over a Manager:
//
//   - The loop: Ready(now), each request handed to its sender, then sleep
//     until Wake fires or Ready's NextMs comes. Nothing runs on a timer of
//     its own: a long poll's answer, a control request or a state change
//     wakes it, time-driven work (backoffs, the ISR expiry check every
//     replica.lag.time.max.ms/2, AlterPartition retries) comes as NextMs.
//   - Replica fetchers (Kafka's ReplicaFetcherThread): one goroutine and
//     one connection per (source broker, fetcher id), num.replica.fetchers
//     per source broker, started on the first Fetch Ready gives for the
//     target and ended after replica.socket.timeout.ms without one (the
//     leader moved away). One Fetch in flight per connection, or two while
//     catching up (below): it long-polls on the leader
//     (replica.fetch.wait.max.ms, replica.fetch.min.bytes) and is bounded by
//     replica.socket.timeout.ms. The response's record batches alias a read
//     buffer (the connection's, kept at replica.fetch.response.max.bytes,
//     or one of the fetcher's two): FetchResponse appends them
//     (AppendAssigned) before that buffer is read into again, so the
//     follower copies a byte once from the socket and once into the page
//     cache. Fetching ahead: before handing back an answer the fetcher asks
//     Manager.FetchAhead for the fetch that will follow it; when the
//     Manager gives one (every partition's next offset is known from the
//     answer and lies below the leader's high watermark it carried: see
//     Protocol) the fetcher sends it on the same connection first
//     (kwire's Send) and reads its answer in a goroutine into the buffer
//     the first does not alias (Receive) while FetchResponse appends the
//     first, then hands back the second's outcome after the first's. The
//     leader serves a connection's requests one at a time, in order, so
//     the answers come in order. Sending early: while that second answer
//     arrives, its reader follows the frame (earlyView, fetch_early.go)
//     and, once the first is handed back and the headers read so far say
//     where the answer's whole batches end (all of them, or all but
//     64 KiB and a sixteenth of its records), asks FetchAhead with that
//     view and writes the fetch it gives at once (kwire's ReceiveEarly),
//     the answer then cut to the batches the view had: the leader
//     answers the third fetch while the second's bytes still cross, not
//     after the follower has read them all and asked again. After handing back an outcome the fetcher asks the Manager
//     for its target's next Fetch itself (ReadyFetch) and sends it at
//     once, so a follower keeping up with its leader does not wait for the
//     loop between two fetches; the loop's Ready serves the target
//     otherwise (after a backoff, a new leader). The leader's address is
//     resolved at every fetch (by default
//     Manager.Endpoint, from LeaderAndIsr's live_leaders); a new address
//     closes the connection and dials the new one. Any error closes the
//     connection and is handed back: the Manager backs the partitions off
//     for replica.fetch.backoff.ms, and the next fetch dials again. A new
//     leader is a new target: Ready says so. The fetchers' SO_RCVBUF is
//     replica.socket.receive.buffer.bytes (default -1, the OS's autotuning,
//     where Kafka's is 65536: DefaultReplicaSocketReceiveBufferBytes).
//   - ListOffsets (a follower out of range, rare): each on a connection of
//     its own, closed after.
//   - The AlterPartition sender: one request at a time to the controller
//     RunnerOptions.Controller names, over one connection. With no
//     controller known the request waits for ControllerChanged. After a
//     failure (no answer, a top-level error such as NOT_CONTROLLER or
//     STALE_BROKER_EPOCH, or NOT_CONTROLLER for a partition) the outcome
//     goes back to the Manager (which retries after AlterPartitionRetryMs)
//     and the next request to the same controller waits for the
//     controller to change or for a backoff doubling from
//     AlterPartitionRetryMs to 1 s.
//   - The high-watermark checkpoint: replication-offset-checkpoint every
//     replica.high.watermark.checkpoint.interval.ms.
//
// Requests go at the versions the Manager builds (Fetch 12, ListOffsets
// 4, AlterPartition 1) without an ApiVersions exchange: the brokers of one
// cluster run one inter-broker protocol, as Kafka's
// inter.broker.protocol.version pins it.
//
// Close cancels the requests in flight (their outcomes go back to the
// Manager as errors, so it can be driven again), waits for every goroutine
// and writes the checkpoint a last time.
//
// What the broker calls, in cluster mode: NewManager (Config from the
// replica.* properties, OpenLog over its log dirs, OnTruncate writing the
// recovery point); SetBrokerEpoch once registered; StartRunner with the
// controller's id and address from /controller and UpdateMetadata
// (Runner.ControllerChanged whenever they change), client id,
// replica.socket.timeout.ms, replica.socket.receive.buffer.bytes and
// replica.high.watermark.checkpoint.interval.ms; LeaderAndIsr and
// StopReplica from the controller (the Manager wakes the Runner itself);
// for Fetch with a replica id, Partition.FetchFromFollower, parked until
// min bytes arrive (Log.Changed) or max wait passes and sent with sendfile
// (HandleFetch is the copying equivalent; answering a parked fetch also
// when the partition's high watermark moved since the request came, as the
// Runner's tests do, lets followers learn it without waiting for data or
// max wait, where Kafka 2.8 waits), ListOffsets and
// OffsetForLeaderEpoch from replicas through HandleListOffsets and
// HandleOffsetForLeaderEpoch; produce through AppendAsLeader and, for
// acks=-1, Await; Partition.SwapLog for AlterReplicaLogDirs (the broker
// copies the log into another log dir and swaps the copy in under the role
// lock; the leader-epoch checkpoint is written into the copy's directory
// first); at shutdown Runner.Close, then Manager.Close.
//
// # Protocol (reference: kafka-replication.md)
//
// Leader. Each follower's log end offset (its last fetch offset) and last
// caught-up time are kept: a fetch at or past the leader's log end offset
// makes the follower caught up now; a fetch that reaches the log end offset
// the leader had at the follower's previous fetch makes it caught up as of
// that fetch. A follower not caught up for replica.lag.time.max.ms leaves
// the ISR; an out-of-ISR follower whose log end offset reaches the high
// watermark (and the start of the current leader epoch, KAFKA-7128) rejoins,
// if the broker counts it eligible (Config.IsrEligible: alive in its
// metadata cache, KIP-841), so a follower the controller would refuse is not
// proposed at every fetch.
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
// diverge. A fetch may go ahead of an answer not yet appended
// (Manager.FetchAhead), claiming as fetch offset the end X of the answer's
// whole batches, only when X is strictly below the high watermark the
// answer carried, the answer has no error or diverging epoch, its records
// continue the log, and the partition is not throttled (every partition of
// the target's next fetch must be known so: the fetch ahead is the fetch
// Ready would give once the answer is appended, so no partition waits
// behind a chain of them); near the high watermark the fetch is serial,
// so ISR joins and high-watermark moves happen as without it. The leader
// takes X as the follower's log end before the follower has written it:
// X is below a high watermark the leader of that epoch never lowers (a
// fetch naming another epoch is fenced, KIP-320), so X moves neither the
// high watermark (the smallest log end counted) nor the ISR (joined at a
// log end at or past it); the ISR shrink check and the lag metric
// (MaxFollowerLag) see the follower one answer earlier, as the serial
// fetch would once it appended. The follower applies an answer only
// while its log ends exactly at the offset fetched under the same leader
// and epoch (fetchMatches, as Kafka's fetcher drops data for a changed
// fetch state): after a failed or refused append, a truncation, a role
// change or a failed partition the answer fetched ahead is dropped and
// the data fetched again from the log end.
// Batches are appended as they are (offsets and leader epochs kept,
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
