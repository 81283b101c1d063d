// Package server is strata's broker: a Kafka node that speaks the Kafka
// wire protocol over the partition logs of package segment, on its own
// (the default) or, given zookeeper.connect, as a member of a cluster
// coordinated through ZooKeeper (see Cluster mode below).
//
// # Protocol layer
//
// Every connection carries size-prefixed frames: a big-endian int32 size,
// then the request header and body. A size that is negative or above
// socket.request.max.bytes closes the connection before anything is
// allocated; a large frame's buffer grows only as its bytes arrive. The
// request header is v0-v2: api_key int16, api_version int16,
// correlation_id int32, client_id as an int16-length nullable string, and a
// tag buffer when the request version is flexible. Bodies are decoded and
// responses encoded with franz-go's kmsg; the response header is the
// correlation id plus, for flexible versions, one tag byte, except for
// ApiVersions, whose response header is always v0.
//
// A connection handles one request at a time: it reads a request, serves it
// and writes the response before reading the next, so responses leave in
// request order (Kafka mutes the channel the same way). An unknown API key,
// a version outside the advertised range or a body that does not parse
// closes the connection, as Kafka does; ApiVersions at a version above the
// range is answered with a v0 body carrying UNSUPPORTED_VERSION and the
// ApiVersions range (KIP-511), so clients retry lower. Produce with acks=0
// gets no response.
//
// Resource bounds are Kafka's (conn_limits.go): at max.connections the
// acceptor waits for a connection to close before it accepts the next (new
// clients wait in the kernel's backlog); a connection over its address's
// max.connections.per.ip (or its max.connections.per.ip.overrides entry) is
// closed at once; queued.max.request.bytes bounds the memory of requests
// read but not yet served: a connection reserves a request's size after
// its size prefix and before its body, and waits while the pool is used up
// (granted whenever anything is left, as Kafka's non-strict pool). A
// connection idle for connections.max.idle.ms is closed (negative: never),
// and so is one whose client stops reading a response: the write deadline
// is connections.max.idle.ms renewed while bytes go out, so a stalled
// consumer costs its own connection only, and one that resets its
// connection mid-response ends it at once.
//
// Advertised APIs (versions.go), all fully implemented: ApiVersions 0-3,
// Metadata 0-11, Produce 3-9, Fetch 4-12, ListOffsets 0-7, CreateTopics 0-7,
// DeleteTopics 0-6, CreatePartitions 0-3, DeleteRecords 0-2,
// DescribeConfigs 0-4, AlterConfigs 0-2, IncrementalAlterConfigs 0-1, and the
// group coordinator's FindCoordinator 0-4, JoinGroup 0-7, SyncGroup 0-5,
// Heartbeat 0-4, LeaveGroup 0-4, OffsetCommit 0-8, OffsetFetch 1-8,
// ListGroups 0-4, DescribeGroups 0-5, DeleteGroups 0-2, OffsetDelete 0;
// DescribeLogDirs 0-4 (api_describe_log_dirs.go: per log dir its replicas'
// sizes and offset lag, the future replicas of moves with is_future,
// KAFKA_STORAGE_ERROR for an offline dir); AlterReplicaLogDirs 0-2
// (api_alter_replica_log_dirs.go, see Moving replicas between log dirs); and
// the transaction coordinator's (txn_coord.go, api_txn.go) InitProducerId
// 0-4, AddPartitionsToTxn 0-3, AddOffsetsToTxn 0-3, EndTxn 0-3,
// WriteTxnMarkers 0-1, TxnOffsetCommit 0-3, DescribeTransactions 0,
// ListTransactions 0, and DescribeProducers 0.
//
// Configuration (configdefs.go) is one table per scope, brokerConfigDefs
// and topicConfigDefs: each property's name, Kafka type, how its text is
// parsed and checked (Kafka's validator) and the Config field it sets. A
// topic config sets the same field as its broker synonym, in a copy of the
// broker's Config (the topic's effective config, topics_configs.go), from
// which the log's segment options, the cleaner's config and the produce
// settings are built; server.properties, --override, CreateTopics, both
// alter APIs, DescribeConfigs and the topic table all go through it, so a
// value means one thing everywhere. Zeros and negatives mean what Kafka
// says: retention.ms=0 and retention.bytes=0 delete every segment at the
// next retention check (the broker's log.retention.ms may not be 0, as in
// Kafka; any negative is -1, forever), any negative retention.bytes is no
// limit, flush.ms=0 fsyncs at the flusher's next check,
// delete.retention.ms=0 and min.cleanable.dirty.ratio=0 are the cleaner's
// zeros (segment.Options and cleaner.LogConfig take them with
// ExplicitZeros). Applied topic configs (cleanup.policy, compression.type
// and compression.*.level, delete.retention.ms, flush.*, max.message.bytes,
// min/max.compaction.lag.ms, message.timestamp.type,
// min.cleanable.dirty.ratio, preallocate, retention.*, segment.bytes,
// segment.ms, and in cluster mode min.insync.replicas and
// unclean.leader.election.enable) are described with their broker synonym
// as default; other Kafka topic configs (index.interval.bytes, ...) are
// checked with Kafka's validators and stored but not applied; any other
// name is INVALID_CONFIG. A stored override that fails its check (kept by
// an older strata, which checked less) is logged at start and the broker's
// value used. Altered overrides are written to the topic table and applied
// to the live logs (segment.Log.Reconfigure, the cleaner registration, the
// produce flags), flush.ms included.
// Broker configs are static: describable, not alterable (INVALID_REQUEST),
// but for cluster mode's dynamic ones (below).
// CreateTopics and CreatePartitions asking for more partitions than
// strata.max.partitions.per.topic (default 10000) fail with
// INVALID_PARTITIONS before anything is allocated (partition_cap.go).
// One file per API: api_<name>.go.
//
// # Produce and Fetch
//
// Produce takes exactly one magic-2 batch per partition, checks its size
// against the topic's max.message.bytes (else the broker's
// message.max.bytes), its framing and CRC, and checks its records as
// Kafka's LogValidator does, a compressed batch as a stream (record by
// record through a 32 KiB window, record.StreamValidator: a decompression
// bomb costs time, bounded by record.MaxDecompressedSize of output, not
// memory), then appends it unchanged but
// for the base offset (patched by the log) and the partition leader epoch,
// neither covered by the CRC. On topics with
// message.timestamp.type=LogAppendTime the batch is stamped with the append
// time (CRC recomputed); on compacted topics (cleanup.policy=compact) every
// record must have a key. strata.produce.validation=header trusts the
// records of compressed batches (except on compacted topics) but not their
// header: the CRC and the header-only produce checks (at least one record,
// lastOffsetDelta+1 == count, no control batch, a base sequence with a
// producer id) apply in both modes.
// When the topic's compression.type (default: the broker's, "producer") is
// a codec other than the batch's, the batch is recompressed to it before the
// append, at the topic's compression.gzip.level, compression.lz4.level or
// compression.zstd.level (KIP-390; broker defaults -1, 9 and 3, lz4's 9
// being its fast compressor), as Kafka's
// LogValidator does: same header fields and record bytes,
// new codec bits, length and CRC, and MESSAGE_TOO_LARGE if the result
// exceeds max.message.bytes (produce_topic.go, record.AppendRecompressedLimit:
// a batch that decompresses to more than 1 MiB is streamed from one codec
// to the other, and given up once the output passes max.message.bytes).
// Stream validation and recompression reserve what their decoders and
// encoders need from one broker-wide decompression budget of 64 MiB
// (DecompressionBudget, produce_memory.go) before they start, first come
// first served, so the memory they hold across all connections is bounded.
// As in Kafka (KIP-110), a Fetch below v10 of a topic whose compression.type
// is zstd gets UNSUPPORTED_COMPRESSION_TYPE. A batch larger than the topic's
// segment.bytes is RECORD_LIST_TOO_LARGE.
//
// Idempotent producers (franz-go's and the Java client's default):
// InitProducerId without a transactional id hands out a new producer id
// at epoch 0 from ProducerIDs (blocks of 1000 reserved in the first log
// dir's producer_id_block file, or in ZooKeeper's
// /latest_producer_id_block in cluster mode). The log checks each
// producer's sequence (segment: producer state): a retry of one of the
// producer's last five batches is answered with its original offsets, a gap
// is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH, a
// sequence from a producer the partition does not know (expired, or an id
// above every reserved block: checked here for a batch at sequence 0)
// UNKNOWN_PRODUCER_ID. A control batch from a client is INVALID_RECORD:
// markers come from the transaction coordinator, which appends them to the
// partition log directly.
//
// Fetch at isolation level read_committed (and ListOffsets latest at
// read_committed) stops at the last stable offset, the first offset of the
// oldest open transaction (or the high watermark), and lists the aborted
// transactions of the range read (from the segments' .txnindex) so the
// client drops their records; every Fetch reports the last stable offset.
//
// Fetch, ListOffsets (latest) and DeleteRecords (-1) work to the log's high
// watermark: the end of the appends that have returned. With
// log.flush.interval.messages=1 an append returns after its fdatasync, so a
// consumer never reads a record that a crash could take back, as in Kafka
// (whose flush is part of the append and whose high watermark moves after
// it).
//
// Fetch responses are framed by hand (fetch_write.go): everything but the
// record bytes is encoded into a buffer, the frame size is computed up front
// from the file regions the log returned, and each region goes from the
// segment file to the socket with sendfile(2) at an explicit offset, so no
// record byte passes through user space. The buffer pieces before each
// region go with MSG_MORE, so they share TCP segments with the region's
// bytes. A sendfile that fails with EINVAL or ENOSYS before its first byte
// (a filesystem or kernel without it) is replaced by a buffered copy. The
// record bytes of one response are capped by the smaller of the request's
// max_bytes and the broker's fetch.max.bytes (default 55 MiB), the first
// batch going whole however large (KIP-74). Long polls wait on
// Log.Changed, so an append wakes them; nothing polls.
//
// # Data directory
//
// Each log dir holds Kafka's meta.properties (version, cluster.id generated
// once, node.id, checked at start) and partition directories
// <topic>-<partition>, each with Kafka's partition.metadata (the topic id).
// New partitions go to the log dir with the fewest partition directories
// (or the one AlterReplicaLogDirs named for them).
// Topic definitions (name, topic id, partition count, config overrides) are
// kept in one JSON file, strata-topics.json in the first log dir, replaced
// atomically (write, fsync, rename, fsync dir) on every change and read at
// start; it is written before the partition directories are created, so a
// crash in between leaves a topic whose missing directories are created on
// the next start.
//
// # Recovery, checkpoints, deletion
//
// At start every log dir is opened with recovery.OpenDataDir: the dir is
// locked (a second broker or an offline tool on it fails to start with
// ErrDataDir wrapping recovery.ErrLocked), the clean-shutdown marker is
// taken, and partitions are recovered in parallel
// (num.recovery.threads.per.data.dir) from the checkpoints; the report is
// logged per partition that needed work, with totals and whether the last
// shutdown was clean. New partitions are registered with DataDir.AddLog.
// Checkpoints are written every log.flush.offset.checkpoint.interval.ms and
// after DeleteRecords; Close closes each DataDir (flush, checkpoints, clean-
// shutdown marker, unlock). A missing log dir is created and its entry made
// durable in its parent. Everything the broker stores goes through
// Options.FS (the OS by default; tests run whole brokers on a MemFS and
// start them again from power-loss clones).
//
// # Offline log dirs
//
// Kafka's log-dir failure model (KIP-112, see the segment and recovery
// package docs): an I/O error a log cannot undo takes its whole log dir
// offline. Its partitions answer Produce, Fetch and ListOffsets with
// KAFKA_STORAGE_ERROR, no checkpoint and no clean-shutdown marker is written
// for it, and the partitions of the other log dirs are served as before. The
// failure is logged once with its cause; a handler goroutine (Kafka's
// LogDirFailureHandler) takes the dir's partitions out of the cleaner and
// calls Options.OnLogDirOffline; Server.OfflineLogDirs lists the offline
// dirs. When every log dir is offline Server.AllLogDirsFailed is closed and
// strata broker exits with a non-zero status. A start with a log dir that
// cannot be loaded still fails as a whole (Kafka would go on without it).
//
// # Moving replicas between log dirs
//
// AlterReplicaLogDirs moves a replica to another log dir of the broker, as
// Kafka's future logs do (logdir_move.go): a copy
// <topic>-<partition>.<32 hex>-future in the target dir (its own failure
// state: an I/O error in it fails the move, the replica serves on) is
// filled from the current log, batch by batch with their offsets, at most
// replica.alter.log.dirs.io.max.bytes.per.second (static, and a dynamic
// broker config in cluster mode); a follower's truncation cuts the copy
// too. Caught up, it is swapped in under the partition's append lock (a
// single node's movableLog, a replica's role lock: replica.Partition.SwapLog)
// after its last batches are copied: renamed to the plain name, reopened,
// registered with the target DataDir and the cleaner; the old log is closed
// and its directory renamed -delete. A restart resumes a move from its
// -future directory (in cluster mode after the first LeaderAndIsr); one of a
// partition the broker no longer has is removed; shutdown stops moves before
// the logs close. A dir named for a replica the broker does not have is
// remembered: the replica is created there (reassignment with log_dirs).
// Errors per partition: LOG_DIR_NOT_FOUND (not a configured dir),
// KAFKA_STORAGE_ERROR (the target or the replica's dir offline),
// REPLICA_NOT_AVAILABLE (no replica here yet), success when moving or
// already there.
//
// DeleteTopics first drops the topic from the topic table (durably), then
// closes its logs and renames each partition directory
// <topic>-<p>.<32 hex>-delete, removed after file.delete.delay.ms (pending
// ones are rescheduled at start), and rewrites the checkpoints at once, so a
// topic re-created under the same name cannot inherit the old log start
// offsets after a crash. A partition directory recovery finds for a
// topic the table does not hold (a crash mid-deletion) is renamed
// <topic>-<p>.<32 hex>-stray and not served, as Kafka does with stray logs.
//
// # Cleaner and retention
//
// A cleaner.Manager (log.cleaner.* settings) compacts logs whose
// cleanup.policy includes compact and runs the retention checker every
// log.retention.check.interval.ms over logs whose policy includes delete;
// each log is registered with its topic's effective cleanup.policy,
// min.cleanable.dirty.ratio, min/max.compaction.lag.ms, delete.retention.ms
// and segment.bytes (topic override, else the broker default).
//
// # Transaction coordinator
//
// coordinator/txn is the state machine; txn_coord.go wires its edges. A
// transactional id belongs to partition abs(hash(id)) % partitions of the
// compacted internal topic __transaction_state (Kafka's TransactionLog
// records; transaction.state.log.num.partitions, .segment.bytes, and in a
// cluster .replication.factor and .min.isr), created on the first
// FindCoordinator of key type 1. A single node owns every partition at
// coordinator epoch 0, loaded at start; in a cluster the leader of a
// partition owns it at its leader epoch (cluster_txn.go, following
// LeaderAndIsr and StopReplica as the group coordinator does). EndTxn is
// answered once PrepareCommit/PrepareAbort is written; the markers then go
// to every partition of the transaction (appended here through the log's
// append path, or WriteTxnMarkers to the partition's leader, acks=-1) and
// CompleteCommit/CompleteAbort is written. TxnOffsetCommit writes the
// offsets in a transactional batch of the producer to the group's
// __consumer_offsets partition and holds them until the marker reaches it
// (the offsets load replays the markers the same way). A transactional
// produce is verified with the coordinator when it is this broker
// (KIP-890): a fenced epoch is INVALID_PRODUCER_EPOCH, a partition outside
// the ongoing transaction INVALID_TXN_STATE. Transactions older than
// transaction.timeout.ms are aborted every
// transaction.abort.timed.out.transaction.cleanup.interval.ms with the
// producer's epoch bumped; ids idle for transactional.id.expiration.ms are
// removed (tombstones) every
// transaction.remove.expired.transaction.cleanup.interval.ms.
// transaction.max.timeout.ms bounds the timeout a producer asks for.
//
// # Group coordinator
//
// A single node coordinates every group (FindCoordinator names it for any
// group id; NOT_COORDINATOR never happens; in a cluster see Cluster mode). Groups follow Kafka's classic state
// machine (group_state.go, group_join.go, group_sync.go): Empty,
// PreparingRebalance, CompletingRebalance, Stable, Dead. JoinGroup v4+ without a member id and without
// group.instance.id is answered MEMBER_ID_REQUIRED with a new id
// (client id + "-" + UUID) the client must rejoin with within its session
// timeout. A join to an Empty group starts group.initial.rebalance.delay.ms
// (default 3000); each member joining during that delay restarts it, never
// past the largest rebalance timeout from the first join (Kafka instead
// extends by whole delays). Otherwise the join phase ends as soon as every
// member has rejoined, or at the largest rebalance timeout, dropping the
// members that did not. Then the generation advances, the protocol is chosen
// by vote (each member's most preferred protocol among those all members
// support; INCONSISTENT_GROUP_PROTOCOL for a member sharing none, or of
// another protocol type), the leader (the first member, or any remaining
// one) gets the member list and every parked JoinGroup is answered. The
// leader's SyncGroup stores the assignments (missing members get an empty
// one), writes the group's metadata record and answers every parked
// SyncGroup: the group is Stable. JoinGroup and SyncGroup park the
// connection (it serves one request at a time, as Kafka mutes it); Close
// releases them with COORDINATOR_NOT_AVAILABLE.
//
// Heartbeat answers REBALANCE_IN_PROGRESS while the group prepares a
// rebalance, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID; a
// member without a heartbeat (or commit) for its session timeout is removed
// and the group rebalances; members parked in JoinGroup or SyncGroup are
// kept alive. Every member of a new generation owes a SyncGroup within the
// group's rebalance timeout (Kafka's pending syncs): those that did not send
// one are removed and the group rebalances, so a leader that heartbeats but
// never syncs cannot park its followers forever. Session timeouts outside group.min/max.session.timeout.ms are
// INVALID_SESSION_TIMEOUT; group.max.size gives GROUP_MAX_SIZE_REACHED.
// LeaveGroup removes members (v3+ in batches, by member or instance id). A
// static member (group.instance.id) rejoining without its member id
// replaces its old id (the old one is fenced); in a Stable group whose
// selected protocol does not change it gets the current generation at once
// and its old assignment, without a rebalance.
//
// OffsetCommit follows Kafka 2.8: generation -1 (or v0) to an unknown or
// Empty group is a standalone commit (the group is created Empty, with no
// protocol type); a group completing a rebalance answers
// REBALANCE_IN_PROGRESS; otherwise the member must exist (UNKNOWN_MEMBER_ID)
// and the generation match (ILLEGAL_GENERATION). Unknown partitions are
// UNKNOWN_TOPIC_OR_PARTITION, metadata over offset.metadata.max.bytes
// OFFSET_METADATA_TOO_LARGE. OffsetFetch answers offset -1 for partitions
// without a commit; null topics (v2+) return every committed partition.
// DescribeGroups shows members' metadata and assignments only when Stable
// and an unknown group as Dead; DeleteGroups removes Empty groups
// (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND); OffsetDelete refuses partitions of
// topics the group's consumers subscribe to (GROUP_SUBSCRIBED_TO_TOPIC).
//
// # __consumer_offsets
//
// Offsets and group metadata live in Kafka's compacted internal topic
// __consumer_offsets, created on the first FindCoordinator, commit or group
// write (or by a Metadata lookup of it) with offsets.topic.num.partitions
// partitions (default 50), cleanup.policy=compact and
// segment.bytes=offsets.topic.segment.bytes (100 MiB). A group lives in
// partition abs(javaHashCode(group)) % partitions (String.hashCode over
// UTF-16 code units, Utils.abs(MIN_VALUE) = 0), so a Kafka data directory
// and strata agree. Records, Kafka's formats (big-endian, each key and value
// starting with its int16 version):
//
//	OffsetCommitKey v1     group STRING, topic STRING, partition INT32
//	OffsetCommitValue v3   offset INT64, leader_epoch INT32, metadata STRING,
//	                       commit_timestamp INT64
//	OffsetCommitValue v1   offset INT64, metadata STRING, commit_timestamp
//	                       INT64, expire_timestamp INT64 (a v2-v4 commit with
//	                       a retention time)
//	GroupMetadataKey v2    group STRING
//	GroupMetadataValue v3  protocol_type STRING, generation INT32,
//	                       protocol NULLABLE_STRING, leader NULLABLE_STRING,
//	                       current_state_timestamp INT64, members [member_id
//	                       STRING, group_instance_id NULLABLE_STRING,
//	                       client_id STRING, client_host STRING,
//	                       rebalance_timeout INT32, session_timeout INT32,
//	                       subscription BYTES, assignment BYTES]
//
// A null value is a tombstone (offset or group deleted). A commit appends
// one uncompressed batch with a record per partition to the group's
// partition and is answered after the append (fsync per the topic's flush
// settings); group metadata is written when a rebalance completes (Stable,
// or Empty when the last member left) and when a static member is
// replaced. Clients cannot produce to the topic (INVALID_TOPIC_EXCEPTION);
// Metadata shows it with is_internal. The cleaner compacts it like any
// compacted topic; strata dumplog --offsets-decoder prints its records.
//
// At start an existing __consumer_offsets is read back partition by partition
// in the background (its partition count wins over the setting): the last
// record per key wins, tombstones delete; groups with members come back
// Stable at their generation with fresh session timers (members that do not
// heartbeat expire), others Empty. Until its partition is loaded a group's
// requests answer COORDINATOR_LOAD_IN_PROGRESS. Every
// offsets.retention.check.interval.ms, offsets.retention.minutes (default
// 7 days) expires offsets of groups without members, as Kafka 2.1+: a
// consumer group's once it has been Empty that long, a standalone group's
// per commit (or at a v2-v4 commit's expire time); tombstones are written
// and a group left with no offsets is removed with a metadata tombstone.
//
// Each completed rebalance is logged with the time from the last JoinGroup
// received to the last SyncGroup answered (Server.RebalanceStats).
//
// # Metrics and status page
//
// With strata.metrics.listener set (default 127.0.0.1:9644; empty: off) the
// broker serves GET /metrics (Prometheus' text format, package
// internal/metrics: Kafka's JMX names as the JMX exporter's Kafka rules make
// them) and GET / (the status page, metrics_status.go) on an HTTP listener
// of its own; a port that will not bind is logged and the broker serves
// Kafka without it. Each request is counted by API and version and timed
// (conn.handle): request queue is the wait for queued.max.request.bytes,
// remote the time parked in a purgatory (acks=all, fetch long poll), send
// the response's write, local the rest; response queue is zero (the
// handler writes its own response). Produce and fetch count records and
// bytes per topic; topics the broker does not know get no series. The
// partition, controller, log and consumer-lag gauges are read at scrape
// time from the broker's state (metrics_state.go); for a partition with no
// replica here, consumer lag uses the high watermark its leader gave the
// lag refresher's last ListOffsets (every strata.consumer.lag.refresh.ms,
// metrics_lag_remote.go), none when it did not answer. Metrics off, the hot
// paths take no clock reading for them.
//
// # Operators' log lines
//
// A request whose time (the split above, less a fetch's remote time: a
// long poll waits for the client's max wait by design) reaches
// strata.request.slow.ms (default 1000; 0 every request; negative off) is
// logged as one "slow request" line with API, version, client id and
// address, the number of partitions it named, the split and the quotas'
// throttle time (request_log.go); requests are timed when metrics or this log are on,
// and below the threshold the check is a comparison, no allocation. Every
// strata.log.summary.interval.ms (default 60000; 0 or negative off) a
// "broker summary" line gives the interval's rates and p99s (from the
// metrics registry, left out without it), partitions, leaders,
// under-replicated and offline partitions and groups (log_summary.go).
// strata.log.format (text or json) is read by strata broker, which builds
// the logger the server is given.
//
// # Cluster mode
//
// With zookeeper.connect (cluster_*.go, api_leader_and_isr.go,
// api_update_metadata.go, api_stop_replica.go, api_controller_requests.go,
// api_offset_for_leader_epoch.go, api_describe_cluster.go) the broker is
// Kafka 2.8 in ZooKeeper mode; without it nothing of this runs and the
// broker is the single node above, with its topic table.
//
// Start-up, in Kafka's order (KafkaServer.startup): the ZooKeeper session
// (zookeeper.session.timeout.ms; no session within
// zookeeper.connection.timeout.ms is an error naming it, and strata broker
// exits non-zero); the log dirs' meta.properties (version 0: broker.id and
// cluster.id; a version 1 file's node.id is read too) checked against
// /cluster/id before recovery touches a log (another cluster's data, or a
// single node's, is refused: ErrInconsistentClusterID) and broker.id
// settled (the configured one must match meta.properties'; -1, the default
// in cluster mode, takes meta.properties' or a new one from /brokers/seqid,
// above 1000); recovery of every log dir with each topic's configs read
// from /config/topics/T; the listeners; the replica Manager (package
// replica) over the recovered logs; the membership (package cluster:
// Kafka's persistent paths, /cluster/id, the ephemeral /brokers/ids/N with
// the advertised endpoints and broker.rack, its czxid the broker epoch; a
// broker.id registered by another live broker is refused; the controller
// election; the config change listener); meta.properties where missing;
// the replica fetchers; then the group coordinator and the accept loops
// (so the controller's first requests wait in the listen backlog). There
// is no strata-topics.json: topics live in ZooKeeper.
//
// Logs. The replica Manager opens a partition when a LeaderAndIsr names
// it: the recovered log, else a new directory in the log dir with the
// fewest, with partition.metadata holding the topic id of the request (a
// recovered directory of another topic id answers INCONSISTENT_TOPIC_ID and
// is left alone). Checkpoints, the clean-shutdown marker and the cleaner
// work as on a single node; a follower's truncation writes the lowered
// recovery point at once; StopReplica with delete renames the directory
// -delete and removes it after file.delete.delay.ms. A recovered partition
// no LeaderAndIsr claims is a stray: kept open and checkpointed but not
// served, and named in the log after the first LeaderAndIsr (Kafka 2.x
// keeps strays too; the controller deletes the replicas of deleted topics
// with StopReplica when the broker returns).
// A log dir that goes offline (the log-dir failure model above) is
// reported to the controller (a /log_dir_event_notification znode); the
// controller's LeaderAndIsr for its partitions is answered
// KAFKA_STORAGE_ERROR before any epoch check (Kafka's offline hosted
// partition), so their leaderships move and this broker leaves their ISRs
// until it restarts; new partitions go to online dirs only.
//
// Control requests (advertised in ApiVersions in cluster mode only):
// LeaderAndIsr v0-5, UpdateMetadata v0-7, StopReplica v0-3 from the
// controller are fenced first: a broker epoch older than this broker's
// registration is STALE_BROKER_EPOCH, a controller epoch below the highest
// seen STALE_CONTROLLER_EPOCH, both logged and ignored. LeaderAndIsr and
// StopReplica go to the replica Manager; UpdateMetadata feeds the metadata
// cache (cluster_metadata.go): live brokers with endpoints and racks,
// partition states, topic ids, the controller; an immutable image swapped
// on each update, holding per listener the Metadata response's brokers and
// topics already built, so every Metadata, DescribeCluster (v0) and
// FindCoordinator answer copies nothing (Metadata for 1,000 partitions:
// one allocation, well under a millisecond; BenchmarkClusterMetadata1000).
// ControlledShutdown v1-3, AlterPartition v0-1, ElectLeaders v0-2,
// AlterPartitionReassignments v0 and ListPartitionReassignments v0 go
// to the member's controller entry points (NOT_CONTROLLER unless this
// broker is the controller; REQUEST_TIMED_OUT after
// controller.socket.timeout.ms). OffsetForLeaderEpoch v0-4 is answered by
// the leader (KIP-101, KIP-279, KIP-320).
//
// Clients. Metadata lists every live broker on the listener the request
// came in on (listeners may have several names, mapped to protocols by
// listener.security.protocol.map; see Security), the
// controller, and per partition the leader, leader epoch, replicas, ISR and
// offline replicas; a partition without a live leader is
// LEADER_NOT_AVAILABLE. Unknown topics are created through ZooKeeper when
// auto.create.topics.enable allows (num.partitions,
// default.replication.factor) and answer LEADER_NOT_AVAILABLE until
// elected. Produce to a partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER; acks=0 and 1 answer after the leader's append
// (Partition.AppendAsLeader stamps the leader epoch); acks=-1 is refused
// before the append when the ISR is below min.insync.replicas (topic
// override, else the broker's; NOT_ENOUGH_REPLICAS), else waits on the
// partition's high-watermark notification, in the request's own goroutine
// (no goroutine per partition, nothing spins), until the high watermark
// passes the batch (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
// below the minimum meanwhile), timeout_ms passes (REQUEST_TIMED_OUT) or
// the leadership is lost (NOT_LEADER_OR_FOLLOWER). Fetch with a replica id
// is a follower's: records up to the log end through
// Partition.FetchFromFollower (its progress recorded, the high watermark
// and the ISR moved; an expansion is proposed only for a follower the
// metadata cache lists alive, replica.Config.IsrEligible), long polls woken by the leader's appends, a
// divergence answered with diverging_epoch (v12). Consumers fetch from
// the leader only, below the high watermark, with KIP-320's
// current_leader_epoch checks (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH),
// long polls woken by the high watermark. A parked fetch waits on one
// broker-wide notification (appends as leader and role changes for
// followers; those and follower fetches served, which move high
// watermarks, for consumers), not on each partition it names; a high
// watermark moved by an ISR change alone reaches a parked consumer at its
// max wait. Both use the sendfile framing of fetch_write.go. ListOffsets is the leader's (latest = the high
// watermark; v4+ with the offset's leader epoch), a follower's (replica id)
// gets the log end or start. DeleteRecords moves the leader's log start
// (followers follow on their next fetch; the answer does not wait for
// them, unlike Kafka).
//
// Administration. CreateTopics, DeleteTopics and CreatePartitions are the
// controller's (NOT_CONTROLLER elsewhere, as Kafka's ZooKeeper mode):
// replicas are placed over the live brokers with package cluster's
// AssignReplicas (rack-aware; replication_factor -1 is
// default.replication.factor; INVALID_REPLICATION_FACTOR with too few live
// brokers) or taken from explicit assignments; /config/topics/T then
// /brokers/topics/T are written (cluster_admin.go), or
// /admin/delete_topics/T, or the grown assignment; the answer waits up to
// timeout_ms until the metadata cache shows every partition led, or the
// topic gone (REQUEST_TIMED_OUT otherwise). AlterConfigs and
// IncrementalAlterConfigs of topics are taken by any broker: written to
// /config/topics/T with a /config/changes notification, on which every
// broker reads the topic's configs again and applies them to its live logs
// (segment options, cleaner, produce settings, min.insync.replicas, the
// throttled-replica lists). On a broker resource (a broker id, or "" for
// <default>) they set or delete the dynamic broker configs
// leader.replication.throttled.rate and follower.replication.throttled.rate
// (bytes/s >= 0, else INVALID_CONFIG), written to /config/brokers/<name>
// with a notification; each broker applies its own (over <default>) to the
// replication throttles (cluster_throttle.go), reading them again, with the
// topic's lists, on a LeaderAndIsr naming adding_replicas. A follower's
// fetch leaves out a throttled partition's data for a follower outside the
// ISR while the leader throttle is over its rate, and a parked fetch is
// read again when the throttle allows. Every follower's read is cut to
// whole batches (no partial last batch it would drop and fetch again; a
// first batch larger than the limit is sent whole), which is what the
// throttle counts. DescribeConfigs reads topic
// overrides and the dynamic broker configs from ZooKeeper: on the broker's
// own resource a rate set for its id is DYNAMIC_BROKER_CONFIG, one set for
// <default> DYNAMIC_DEFAULT_BROKER_CONFIG (synonyms in Kafka's order:
// dynamic broker, dynamic default, static, default; a rate is listed only
// while set), and the resource name "" describes the cluster default, what
// <default> sets (describe_broker_configs.go).
//
// Groups. A group's coordinator is the leader of its __consumer_offsets
// partition (FindCoordinator names it; every other broker answers
// NOT_COORDINATOR). The topic is created on first lookup with
// offsets.topic.num.partitions partitions of
// offsets.topic.replication.factor replicas (default 3) once that many
// brokers live (COORDINATOR_NOT_AVAILABLE until then, as Kafka); its
// partition count in ZooKeeper wins over the setting. Becoming the leader
// of an offsets partition loads its groups in the background
// (COORDINATOR_LOAD_IN_PROGRESS meanwhile); losing it unloads them (parked
// joins and syncs answer NOT_COORDINATOR). The coordinator appends as the
// partition's leader and waits as acks=-1 does, up to 5 s (Kafka's
// offsets.commit.timeout.ms): too few in-sync replicas is
// COORDINATOR_NOT_AVAILABLE, a lost leadership NOT_COORDINATOR.
//
// Shutdown. With controlled.shutdown.enable (default) Close first asks the
// controller to move this broker's leaderships away (ControlledShutdown v3
// to the controller's inter-broker endpoint, up to
// controlled.shutdown.max.retries attempts controlled.shutdown.retry.
// backoff.ms apart, then stops anyway), while still serving; then the
// connections drain, parked acks=-1 produces are answered, the replica
// fetchers stop (a last high-watermark checkpoint), the membership ends
// (closing the session removes the registration at once), and the logs
// close with their checkpoints and the clean-shutdown marker.//
// # Security
//
// Each listener speaks the protocol listener.security.protocol.map gives
// its name (security_config.go): PLAINTEXT; SSL and SASL_SSL wrap the
// connection in crypto/tls (tls.go: TLS 1.2+, PEM key and trust stores,
// ssl.client.auth, ssl.principal.mapping.rules (security.PrincipalMapper)
// naming a client certificate's principal, the key store reloaded when its
// file changes; the
// handshake runs on the connection's goroutine within
// connections.max.idle.ms, and a failed one closes the connection, logged);
// SASL_PLAINTEXT and SASL_SSL start unauthenticated (sasl.go): only
// ApiVersions, SaslHandshake and SaslAuthenticate are served until the
// exchange succeeds, any other request closes the connection. SaslHandshake
// v1 is followed by SaslAuthenticate requests; after v0 the tokens are bare
// size-prefixed frames. Mechanisms are package security's PLAIN (users from
// the listener's JAAS property) and SCRAM-SHA-256/512 (credentials from
// scram_store.go: UsersFile on a single node, /config/users/<user> in
// ZooKeeper, read at each authentication). A failure is answered
// SASL_AUTHENTICATION_FAILED (v0 handshake: no answer) after
// connection.failed.authentication.delay.ms on the connection's own
// goroutine, and closes the connection. With connections.max.reauth.ms
// (KIP-368) a successful SaslAuthenticate gives the session lifetime; an
// authenticated connection may run SaslHandshake v1 and SaslAuthenticate
// again with the same mechanism and principal, and one whose session ended
// is closed at its next other request. A connection's principal is
// User:ANONYMOUS, User:<certificate DN> or User:<SASL user>.
//
// Brokers connect to each other (replica fetchers, the controller's
// requests, AlterPartition and ControlledShutdown) on
// inter.broker.listener.name, or the listener named by
// security.inter.broker.protocol, with its protocol (interbroker.go): TLS
// trusting the listener's trust store and presenting its key store's
// certificate, SASL with sasl.mechanism.inter.broker.protocol and the
// username/password of the listener's JAAS config for that mechanism. With
// ACLs on, that principal needs ClusterAction on the cluster (super.users,
// as Kafka's documentation sets it up). A failed inter-broker
// authentication is logged at error level by the fetcher and retried.
//
// Fetch under TLS cannot use sendfile: the regions are read into a pooled
// 64 KiB buffer and written through the TLS connection (copyRegion).
//
// With authorizer.class.name, acl_gate.go authorizes each request before
// its handler, with the operations KafkaApis checks, through package
// security's Authorizer over the bindings of acl.go (ACLsFile on a single
// node; /kafka-acl and /kafka-acl-extended/prefixed znodes in a cluster,
// reloaded on /kafka-acl-changes and /kafka-acl-extended-changes
// notifications). Refused entries are cut from the request and answered
// with Kafka's authorization errors beside the handler's answer for the
// rest; a consumer Fetch with a refused topic is answered with the refused
// partitions' errors only; a refused acks=0 Produce closes the connection.
//
// Client quotas (quota.go, conn_quota.go): producer_byte_rate,
// consumer_byte_rate and request_percentage per user, client id or both,
// resolved in Kafka's precedence order, measured as Kafka's Rate over
// quota.window.num samples of quota.window.size.seconds. Over a quota the
// response carries throttle_time_ms and the connection reads no request
// until it has passed (KIP-219; older response versions are held back
// instead); a fetch over quota is answered with no topics. Stored
// (quota_store.go) in QuotasFile on a single node, /config/users and
// /config/clients in a cluster, reloaded per entity on /config/changes
// notifications; DescribeClientQuotas and AlterClientQuotas
// (api_client_quotas.go) read and change them. With no quota configured the
// request path checks one atomic flag.
package server
