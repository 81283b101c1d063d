// Package cluster is strata's ZooKeeper coordination, in Kafka 2.x's ZooKeeper
// mode: the znodes and their JSON, broker registration, controller election with
// epoch fencing, the controller itself, and replica placement.
//
// # ZooKeeper
//
// Every ZooKeeper call goes through the ZK interface (zk.go), one session's
// view: github.com/go-zookeeper/zk behind it in production (zkconn.go, with the
// chroot of zookeeper.connect), an in-memory ZooKeeper in the deterministic
// simulation (package cluster/zksim). The same conformance suite
// (cluster/zkconformance) runs over both, the production one against a real
// ZooKeeper (internal/zktest).
//
// DialZK (zkconfig.go: zookeeper.connect, zookeeper.session.timeout.ms,
// zookeeper.connection.timeout.ms) waits for the first session and fails
// with ErrNoSession after the connection timeout; it creates a missing
// chroot, as Kafka does. Then the client reconnects by itself: within the
// session timeout to the same session (its watches are set again and fire
// for what changed meanwhile; calls made while disconnected fail with
// ErrConnectionLoss, not hang: behind a silent partition within about one
// session timeout, as go-zookeeper's socket deadlines are clamped to it;
// an unanswered connect request is given up after a third of it, so a
// reconnect that reaches a silent peer still finds the server in time),
// after an expiry with a new session, which
// Events reports as Disconnected, Expired (old id), Connected (new id); the
// old session's watches end with WatchLost. ErrConnectionLoss means the
// outcome is unknown; ErrBadRequest that ZooKeeper refused the request as
// such (invalid path, child of an ephemeral). A failed Multi reports nil for
// the ops before the failing one, its error, then ErrRolledBack. Sequential
// suffixes count the children ever created under the parent (deletes give
// no number back).
//
// # Znodes
//
// Paths and JSON are Kafka's (znodes.go; reference: kafka-zookeeper.md), so
// Kafka's tools and zkCli.sh read a strata cluster as a Kafka one:
//
//	/cluster/id                               {"version":"1","id":"<22-char base64url>"}
//	/brokers/ids/N            ephemeral       registration v5 (endpoints, rack, timestamp); czxid = broker epoch
//	/brokers/seqid                            broker.id generation
//	/brokers/topics/T                         {"version":3,"partitions":{"0":[1,2,3]},"adding_replicas":{},"removing_replicas":{},"topic_id":"..."}
//	/brokers/topics/T/partitions/P/state      {"controller_epoch":5,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2,3]}
//	/controller               ephemeral       {"version":1,"brokerid":1,"timestamp":"..."}
//	/controller_epoch                         decimal text
//	/config/topics/T                          {"version":1,"config":{"retention.ms":"86400000"}}
//	/config/changes/config_change_N           {"version":2,"entity_path":"topics/T"}
//	/admin/delete_topics/T                    empty
//	/log_dir_event_notification/log_dir_event_N  {"version":1,"broker":3,"event":1}
//
// Encoders write Kafka's key order as Kafka 2.8/3.x writes it (golden files in
// testdata/znodes); readers never rely on JSON key order, ignore unknown keys
// and read every older version. Malformed data is an error wrapping
// ErrBadZnode that names the znode (logged, that entity skipped), never a
// panic (FuzzZnodeDecode).
//
// # Controller
//
// One broker is the controller: it created the ephemeral /controller in the
// same multi-op that moved /controller_epoch from the version it read to
// epoch+1. Every later controller write is a multi-op that starts with a
// version check of /controller_epoch, so a deposed controller's writes fail
// (ErrBadVersion) and it resigns. Brokers ignore control requests whose
// controller epoch is below the highest they have seen (STALE_CONTROLLER_EPOCH).
//
// The controller is a state machine with I/O at the edges, in the style of
// etcd's raft package: Controller (controller*.go) never blocks, reads a
// clock, starts a goroutine or does I/O, and iterates everything in sorted
// order, so the same events give the same outputs. The driver (one
// goroutine, Kafka's ControllerEventManager) turns ZooKeeper watches,
// brokers' requests and the results of what the controller asked for into
// events, feeds them to Controller.Step in order, and carries out what
// Controller.Ready returns.
//
// Activation. The driver wins the election (create /controller and move
// /controller_epoch from the version read to epoch+1 in one multi), sets
// its watches (children of /brokers/ids, /brokers/topics,
// /admin/delete_topics, /log_dir_event_notification; an exists watch on /controller),
// then reads LoadSnapshot(zk, brokerID) (load.go) and steps
// Activate{Snapshot}. LoadSnapshot refuses with ErrNotController unless
// /controller names this broker and belongs to this session.
//
// Events (controller_events.go): Activate, Resign; BrokersChanged (every
// registration under /brokers/ids, epoch = czxid), TopicsChanged (every
// topic: assignment, topic id, version of /brokers/topics/T, overrides of
// /config/topics/T or nil when that znode is absent), TopicConfigChanged,
// DeletionsRequested (children of /admin/delete_topics), LogDirEvents
// (children of /log_dir_event_notification with their broker);
// AlterPartition (key 56, v0-v3), ControlledShutdown (key 7, v1-v3),
// ElectLeaders (key 43, v0-v2), each with an ID the driver picks to match
// the Reply; RebalanceTick (every leader.imbalance.check.interval.seconds
// when auto.leader.rebalance.enable); WriteResult; RequestResult. The
// ZooKeeper-derived events carry full listings read when the watch fired:
// the controller diffs them with what it knows, so a repeated event does
// nothing.
//
// Ready (controller.go) holds, once: Writes, Requests, Replies, Log lines,
// and the flags Resigned and Reload. The driver's contract:
//
//   - Writes: apply each WriteBatch with ZK.Multi(batch.Ops...), one at a
//     time in order, and step WriteResult{Batch: ID, Results, Err} with
//     what Multi returned before starting the next. Ops[0] of every batch
//     is the check of /controller_epoch at the version this controller
//     made, so a deposed controller's batch fails whole. Partition states
//     are written many per batch, each batch estimated under
//     MaxWriteBatchBytes (256 KiB; ZooKeeper's limit is 1 MiB).
//   - After a failed batch, start no later batch: step its WriteResult and
//     read Ready. If the check op failed (ErrBadVersion, ErrNoNode) or the
//     session expired or closed, the controller resigns (Ready.Resigned):
//     it forgets everything, drops the requests not yet handed out, and
//     turns every reply it held into NOT_CONTROLLER; the driver goes back
//     to watching /controller (deleting it first if it still names this
//     broker and session). Any other failure (ErrConnectionLoss, applied
//     or not; an unexpected version or node) sets Ready.Reload: the
//     controller is inactive; the driver reloads LoadSnapshot (with a
//     backoff) and steps Activate again, which makes the controller agree
//     with ZooKeeper whatever the failed batch did.
//   - Requests are handed out only after every write batch cut before them
//     is acknowledged: a broker never hears of a state ZooKeeper does not
//     hold. Send them now, per broker in Ready order over one connection
//     (Kafka's per-broker queue); a request to a broker that is gone may be
//     dropped. Step a RequestResult (the response, or Err) for each: the
//     controller reads LeaderAndIsr responses (KAFKA_STORAGE_ERROR marks a
//     replica offline) and StopReplica (delete=true) responses (topic
//     deletion), matched by Request.ID; others are ignored, as are results
//     from a broker that died or bounced since.
//   - Replies answer the request event of the same ID; like requests they
//     wait for the writes they report. An inactive controller answers
//     NOT_CONTROLLER at once.
//
// Requests (kmsg v1.15.1 encodes these versions as Kafka does):
// LeaderAndIsr v5 (topic ids; controller epoch, the recipient's broker
// epoch, per partition the state, its partition epoch = the state znode's
// version, replicas, is_new when the state znode was just created;
// live_leaders on InterBrokerListener), UpdateMetadata v7 (topic ids,
// offline replicas, leader -2 for topics being deleted, every live broker
// with all endpoints and rack), StopReplica v3 (leader epoch per
// partition, -2 when deleting; delete flag per partition).
//
// Decisions follow Kafka 2.8's KafkaController and Election.scala:
//
//   - Activation (onControllerFailover): deletions are queued first; every
//     live broker gets the full UpdateMetadata and LeaderAndIsr for its
//     replicas; new and offline partitions are elected; dead brokers leave
//     the ISRs; deletions resume; stale log dir notifications are deleted;
//     topics without a topic id get one (written into /brokers/topics/T).
//   - New partition: leader = first online replica in assignment order,
//     ISR = the online replicas, leader epoch 0; the state znode (and the
//     partitions containers) created; LeaderAndIsr (is_new) to the
//     replicas, UpdateMetadata to all. With no online replica it stays
//     without state until one starts. Partitions added to an existing topic
//     likewise; changed replicas of existing partitions are ignored (a
//     reassignment goes through AlterPartitionReassignments).
//   - Reassignment (AlterPartitionReassignments, key 45; KIP-455 as
//     Kafka 2.8, controller_reassign.go): per partition
//     UNKNOWN_TOPIC_OR_PARTITION (also a topic being deleted),
//     INVALID_REPLICA_ASSIGNMENT (empty, repeated or negative ids, an added
//     broker not live), NO_REASSIGNMENT_IN_PROGRESS (cancel of none). The
//     assignment becomes RS = target then origin replicas, with
//     adding_replicas and removing_replicas in /brokers/topics/T (what a
//     new controller resumes from); leader epoch + 1 and LeaderAndIsr to
//     RS (is_new to the added). When the target is within the ISR (checked
//     on each AlterPartition and at activation): the leader moves to the
//     first target replica online and in the ISR if it is not one, the
//     removed replicas leave the ISR (one state write, leader epoch + 1),
//     the assignment becomes the target, StopReplica (delete=true) goes to
//     the removed. A cancel (replicas null) reassigns to the origin
//     replicas (in their RS order, as Kafka). ListPartitionReassignments
//     (key 46) lists replicas, adding and removing of those in progress.
//     /admin/reassign_partitions (Kafka's legacy JSON, stepped as
//     ReassignZnode and read at activation) starts the reassignments it
//     lists the same way; a refused entry is taken out of the znode at
//     once, a complete one when it completes, and the znode is deleted
//     when none is left (or when it does not decode); one already in
//     progress to the same replicas is only remembered.
//   - Offline partition (leader -1 or not online; online = live, not
//     shutting down, log dir not failed): the first replica in assignment
//     order that is online and in the ISR leads, ISR = its online members;
//     with none and unclean.leader.election.enable (topic, else broker),
//     the first online replica leads alone and the loss is logged; else it
//     stays leaderless. Every leader change is leader epoch + 1.
//   - Broker failure (dead, or bounced = same id with a larger epoch, which
//     is then a startup too): its offline partitions are elected, then it
//     leaves every ISR with leader epoch + 1 (a removed leader leaves -1;
//     the last ISR member stays); LeaderAndIsr to the live replicas,
//     UpdateMetadata to all. One write per partition per event; none when
//     nothing changes.
//   - Broker startup: UpdateMetadata (no partitions) to the others, the
//     full one to it, LeaderAndIsr for its replicas, offline partitions
//     elected, deletions waiting for it resumed. A registration whose
//     endpoints or rack changed: UpdateMetadata to all.
//   - AlterPartition (KIP-497, as Kafka 3.x's ZK controller):
//     STALE_BROKER_EPOCH unless the sender is live with that broker epoch;
//     per partition NOT_CONTROLLER for a newer leader or partition epoch,
//     FENCED_LEADER_EPOCH for an older leader epoch, INVALID_REQUEST from a
//     non-leader, the current state for an unchanged ISR (retries are
//     idempotent), INVALID_UPDATE_VERSION for an older partition epoch,
//     INVALID_REQUEST for an ISR that is empty, lacks the leader, repeats
//     or is outside the assignment, INELIGIBLE_REPLICA (before v2:
//     OPERATION_NOT_ATTEMPTED) for a member not online or, in v3, of
//     another broker epoch; else the state is written with the leader
//     epoch kept, UpdateMetadata goes to all, and the reply carries the new
//     partition epoch.
//   - ControlledShutdown: BROKER_NOT_AVAILABLE, STALE_BROKER_EPOCH; else
//     the broker is shutting down (no election picks it until it dies),
//     its leaderships of partitions with more than one replica move to the
//     first live ISR member not shutting down (ISR without the brokers
//     shutting down), it gets StopReplica (delete=false) and leaves the
//     ISR where it follows; the reply lists what it still leads.
//   - ElectLeaders and RebalanceTick: preferred replica (first assigned) if
//     online and in the ISR, ISR kept; the tick acts for brokers whose
//     share of preferred partitions led elsewhere exceeds
//     leader.imbalance.per.broker.percentage. Unclean ElectLeaders elects
//     leaderless partitions allowing an unclean choice.
//   - Log dir failure: the notification znode is deleted, the broker gets
//     LeaderAndIsr for its replicas; those it answers KAFKA_STORAGE_ERROR
//     for are offline until it restarts: elected away, StopReplica, out of
//     the ISR.
//   - Deletion (delete.topic.enable; else the request znode is just
//     removed, as for unknown topics): UpdateMetadata with leader -2 to
//     all, StopReplica (delete=false) then (delete=true) to each replica on
//     a live broker; replicas on dead brokers or answering an error wait
//     for their broker to start; when all are deleted, the state and
//     partition znodes, /brokers/topics/T, /config/topics/T and
//     /admin/delete_topics/T are deleted and the topic forgotten (a late
//     listing of the same topic id is ignored; a new topic of that name is
//     created). No ISR writes are made for a topic being deleted.
//
// # Member
//
// Member (member*.go) is a broker's life in ZooKeeper (Kafka's KafkaServer,
// KafkaZkClient and the election part of KafkaController). StartMember, on
// a connected session (JoinCluster dials one first: ErrNoSession after
// zookeeper.connection.timeout.ms), creates the PersistentPaths that are
// missing, reads /cluster/id or creates it with a random id
// (MemberConfig.CheckClusterID may refuse it: meta.properties of another
// cluster), takes /brokers/seqid's new version + reserved.broker.max.id as
// the id when broker.id is -1, and creates /brokers/ids/N (ephemeral,
// registration v5). An existing registration is ours only when our session
// owns it (a create whose answer was lost); else the start fails with
// ErrBrokerIDTaken ("broker.id N is already registered by another broker")
// and the other broker's registration stays. ZooKeeper calls failing with
// ErrConnectionLoss are retried until MemberConfig.StartTimeout.
//
// Then the Member runs, on its own goroutines: the event loop (below), a
// pump of session events into it, the config change listener, and the
// callbacks (OnControllerChange, OnReregistered, OnTopicConfigChange,
// OnBrokerConfigChange, OnEntityConfigChange), called in order on a
// goroutine of their own. Nothing of this runs on the
// broker's request paths: BrokerID, ClusterID, BrokerEpoch (the
// registration's czxid, 0 while unregistered), ControllerID (-1: none) and
// IsController read atomics. AlterPartition, ControlledShutdown and
// ElectLeaders hand a broker's request to the controller and block until
// its reply or the context's end; on a broker that is not the active
// controller they answer NOT_CONTROLLER at once. ReportLogDirFailure
// creates /log_dir_event_notification/log_dir_event_N ({"version":1,
// "broker":N,"event":1}) in the background, retried until written. Close
// stops it all and closes the session (registration and /controller go at
// once).
//
// Sessions: a disconnection changes nothing (the broker serves on; calls
// fail with ErrConnectionLoss and are retried with a backoff of 100 ms to
// 2 s); the same session back changes nothing either. An expiry (or a new
// session id) loses the registration, every watch and any controllership
// (the Controller steps Resign); the new session registers again (new
// broker epoch, OnReregistered) and takes part in the election.
//
// Config changes (member_config.go) follow Kafka's
// ZkNodeChangeNotificationListener: the children of /config/changes are
// processed in sequence order, each once (at start every existing one);
// for entity type topics the topic names go to OnTopicConfigChange and,
// read from /config/topics/T, to the controller as TopicConfigChanged; for
// entity type brokers the names (an id or <default>) go to
// OnBrokerConfigChange, which is also called once with none at start;
// other entities' paths (users/U, users/U/clients/C, clients/C) go to
// OnEntityConfigChange; a malformed notification is logged and skipped.
// Notifications are deleted
// once ConfigChangeExpiration (15 min) old, counted from when this broker
// first listed them (the ZK interface has no ctime).
//
// # Driver
//
// The driver (driver*.go) is the event loop: one goroutine that alone
// touches the registration state, the election and the Controller. Its
// inputs are queued (driver_queue.go, unbounded): session events, fired
// watches, timers, the broker's requests, request results. Election (Kafka's
// elect): read /controller with an exists watch (every broker keeps one);
// when absent, read /controller_epoch (created as 0 if missing) and multi
// {create /controller ephemeral, set /controller_epoch epoch+1 at the version
// read}; on NodeExists, BadVersion or an unknown outcome, re-read
// /controller: we won only if it names us and our registration's session
// owns it. A broker elects only in the session it registered in. Watches
// while active: children of /brokers/ids, /brokers/topics,
// /admin/delete_topics, /log_dir_event_notification, and data of every
// /brokers/ids/N and /brokers/topics/T, and the existence of
// /admin/reassign_partitions; each fired watch makes a full listing read
// then (the watch set again), stepped as BrokersChanged, TopicsChanged,
// DeletionsRequested, LogDirEvents or ReassignZnode; a watch whose class
// has a later event queued leaves the read to it. A malformed registration
// is left out; a malformed assignment or topic config gives the topic as it
// last decoded, or leaves it out (as the snapshot does) when it never did;
// a malformed log dir notification is given with broker -1 (deleted, no
// action). A failed read is retried with a backoff. /controller deleted or
// naming another broker makes an active controller resign; resignation
// (also after a fenced write) drops the channel manager's queues, deletes
// /controller if our session still holds it, and elects again. Ready.Reload
// reloads the snapshot with a backoff, then Activate; a snapshot that says
// ErrNotController sends the broker back to the election. RebalanceTick
// every MemberConfig.LeaderImbalanceCheckInterval when
// AutoLeaderRebalanceEnable.
//
// The channel manager (driver_channel.go, Kafka's ControllerChannelManager)
// keeps per live broker one kwire connection to the endpoint of
// inter.broker.listener.name (else the first) and an ordered queue, served
// by one goroutine: send, wait for the answer (controller.socket.timeout.ms
// for the connect and for each request), step RequestResult, next. A failed
// exchange closes the connection and is retried after a backoff (100 ms to
// 1 s) until answered. A broker that died, bounced (new epoch) or changed
// its endpoint gets a new queue; the requests of a dropped queue are
// stepped with an error.
//
// # Admin
//
// Admin (admin*.go) is Kafka's AdminZkClient, for the broker's CreateTopics,
// DeleteTopics, CreatePartitions and AlterConfigs and for `strata topics
// --zookeeper`. CreateTopic checks the name (Kafka's Topic.validate:
// ErrInvalidTopic), refuses one marked for deletion or existing
// (ErrTopicExists) or colliding with an existing one once '.' is '_'
// (ErrInvalidTopic), and writes /config/topics/T (set at its version or
// created) and /brokers/topics/T (v3 with the topic id) in one multi that
// creates and deletes /admin/delete_topics/T, so it fails when a deletion
// of that name is pending: creation never races deletion. DeleteTopic
// creates /admin/delete_topics/T (already marked: no error; unknown:
// ErrUnknownTopic). AddPartitions grows the assignment by a set at the
// version read (retried on a concurrent change), the new replicas placed by
// AssignAdditionalReplicas over the live brokers or checked against them;
// refused for a topic marked for deletion (ErrInvalidTopic) or a count not
// above the current one (ErrInvalidPartitions). ChangeTopicConfig writes
// /config/topics/T then a config_change_ notification (version 2,
// "topics/T"). TopicConfig, ListTopics, TopicsMarkedForDeletion,
// ReadAssignment, PartitionState and LiveBrokers read for describe.
// ErrorCode maps the refusals to TOPIC_ALREADY_EXISTS,
// UNKNOWN_TOPIC_OR_PARTITION and INVALID_TOPIC_EXCEPTION.
//
// # Placement
//
// placement.go assigns replicas as Kafka's AdminUtils does, for the
// CreateTopics and CreatePartitions handlers (the controller only reads
// assignments): AssignReplicas (round-robin over the brokers in id order
// from a random start, followers shifted by an increment that grows every
// len(brokers) partitions; rack-alternated when every broker has
// broker.rack, racks ignored when only some have one; no two replicas of a
// partition on one broker), AssignAdditionalReplicas (new partitions
// continue from partition 0's first replica), ValidateAssignment (explicit
// assignments: replicas, same count, no duplicates, known brokers).
// Randomness comes from the caller's *rand.Rand. ErrorCode maps
// ErrInvalidPartitions, ErrInvalidReplicationFactor and
// ErrInvalidReplicaAssignment to INVALID_PARTITIONS,
// INVALID_REPLICATION_FACTOR and INVALID_REPLICA_ASSIGNMENT.
package cluster
