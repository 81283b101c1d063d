// Package cluster is strata's ZooKeeper coordination, in Kafka 2.x's ZooKeeper
// mode: the znodes and their JSON, broker registration, controller election with
// epoch fencing, the controller itself, and replica placement.
//
// # ZooKeeper
//
// Every ZooKeeper call goes through the ZK interface (zk.go), one session's
// view: github.com/go-zookeeper/zk behind it in production (zkconn.go, with the
// chroot of zookeeper.connect), an in-memory ZooKeeper in the deterministic
// simulation (package cluster/zksim). The same conformance suite runs over both.
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
// Readers never rely on JSON key order; malformed JSON in a znode is logged and
// that entity skipped, never a panic.
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
// etcd's raft package (controller.go): the driver (controller_driver.go) turns
// ZooKeeper watches, inter-broker requests and their responses into events,
// one goroutine feeds them to Controller.Step in order (Kafka's
// ControllerEventManager), and carries out what Controller.Ready returns:
// ZooKeeper multi-ops (each fenced by the controller epoch check; partition
// state writes batched, many per multi) first, then the control requests
// (LeaderAndIsr, UpdateMetadata, StopReplica, over the Kafka protocol) that
// depend on them, then the replies to brokers' requests (AlterPartition,
// ControlledShutdown). The state machine never blocks, reads a clock or does
// I/O; a failed fenced write makes it resign; any other failed write makes
// the driver reload the state from ZooKeeper and activate it again.
//
// Decisions (Kafka's Election.scala): a new or offline partition's leader is
// the first replica in assignment order that is live and in the ISR; the new
// ISR is the live members of the old one; with none and unclean election
// enabled for the topic, the first live replica leads with ISR [it] and the
// loss is logged; otherwise the partition has no leader (-1) until an ISR
// member returns. Every leader change increments the leader epoch. ISR
// changes reach the controller as AlterPartition (KIP-497, Kafka 2.7+) from
// the leader: the controller checks the broker epoch, leader epoch and
// partition epoch (the state znode's version), writes the state and answers
// with the new partition epoch; the leader's ISR never changes otherwise.
// Controlled shutdown moves leadership off the stopping broker and drops it
// from the ISRs it follows in.
//
// # Placement
//
// placement.go assigns replicas as Kafka's AdminUtils does: round-robin from a
// random start, followers shifted by a per-round increment, rack-alternating
// when every broker has broker.rack; no two replicas of a partition on one
// broker.
package cluster
