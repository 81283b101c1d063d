// Package faults holds the fault tests of issue 18 ("Faults it must
// survive"): a real ZooKeeper (internal/zktest), three strata brokers as
// child processes (the `strata broker` command of package tools, run by
// the test binary: TestHelperBroker), killed, stopped and continued with
// real signals, and TCP proxies (internal/faultproxy) on the paths a
// network partition cuts. The package has no code outside its tests.
//
// # Topology
//
// Each broker has two listeners: CLIENT, which the test's clients dial
// directly, and INTERNAL (inter.broker.listener.name), bound on its own
// port but advertised at the address of a proxy in front of it, so every
// connection another broker opens to it (follower fetches, the
// controller's requests, AlterPartition, ControlledShutdown) passes that
// proxy. The proxy labels each connection with the broker process that
// opened it (faultproxy.PeerPID), so a leader is isolated by black-holing
// its own proxy (everything inbound) and, in the other brokers' proxies,
// the connections it opened (everything outbound). Each broker reaches
// ZooKeeper through a proxy of its own (zookeeper.connect), black-holed to
// cut it from ZooKeeper or to let its session expire. Clients are never
// cut: a client partitioned with an old leader is the case Jepsen found.
//
// # Load and checks
//
// One topic of three partitions, replication factor 3,
// min.insync.replicas=2, unclean.leader.election.enable=false. A steady
// producer (franz-go, acks=all, retries, no idempotence) sends one record
// at a time to each partition; every send is recorded in an
// internal/history.History: acknowledged at its offset, definitely failed
// only when a single attempt was refused before the append
// (NOT_ENOUGH_REPLICAS from a producer without retries), unknown
// otherwise. A consumer reads every partition from the start and records
// each read. After each scenario the producer stops, the cluster settles
// (every partition led with a full ISR and its high watermark at the log
// end), the consumer drains, and every broker stops with SIGTERM. Then,
// with every broker stopped: `strata verify` (tools.Main) finds nothing
// wrong in any log dir; the segment files of every replica are read batch
// by batch (record package) and every replica of a partition holds the
// same batches (offsets, leader epoch, CRC) up to the partition's high
// watermark; and history.Check finds no acknowledged record lost or moved,
// no read taken back, no value never sent, no definitely failed value
// written, no reader going back. No broker may log a truncation below its
// high watermark, nor more than a few ISR changes the controller refused
// for an ineligible replica. Duplicates (retries) and unknown outcomes are
// counted and logged. A broker killed with SIGKILL is restarted once its
// registration is gone (its session expired), as Kafka's system test
// waits: a broker refuses to start while its id is registered.
//
// # Timeouts
//
// Kafka's names, test-sized: zookeeper.session.timeout.ms=6000,
// replica.lag.time.max.ms=2500, replica.fetch.wait.max.ms=200,
// controlled.shutdown.retry.backoff.ms=200 (Kafka's 300 s
// leader.imbalance.check.interval.seconds stays: no preferred-leader
// election moves a leader in the middle of a scenario); the producer's
// request timeout is 5 s. Waits are conditions polled against generous deadlines
// (the machine is shared and loaded); nothing sleeps a fixed time.
//
// # Scenarios (TestFaults)
//
//   - kill-leader: SIGKILL the leader of a partition, restart it: it
//     truncates by leader epoch and rejoins the ISR.
//   - kill-two: SIGKILL two brokers one after the other (the leader, then
//     the new leader), restart them in the other order.
//   - stop-follower: SIGSTOP a follower past replica.lag.time.max.ms: the
//     ISR shrinks and writes go on; SIGCONT: it catches up and rejoins.
//   - isolate-leader: cut a leader from the other brokers and from
//     ZooKeeper: it acknowledges no acks=all write, a new leader takes
//     over, and after healing the old leader truncates to it.
//   - expire-sessions: the ZooKeeper session of the controller, then of a
//     leader, expires (its ZooKeeper proxy black-holed past the session
//     timeout), then heals.
//   - disk-full: a follower's first log dir is a small tmpfs that fills
//     up: the dir goes offline (Kafka's log dir failure model), the
//     controller lists its replicas there as offline and out of the ISRs,
//     the replica in its other dir stays in sync, the partitions keep
//     taking writes (skipped where mounting a tmpfs is not allowed, failed
//     under CI=true).
//   - rolling-restart: SIGTERM (controlled shutdown) and restart of each
//     broker in turn; the longest produce stall is logged.
//   - two-down: two of three brokers down: acks=all gets
//     NOT_ENOUGH_REPLICAS before the append, acks=1 works.
//
// The leader failover time after SIGKILL (first acknowledgement after the
// kill) and the longest stall under SIGTERM are logged as measurements,
// not asserted. STRATA_FAULTS_ROUNDS (default 1; `make soak-faults` sets
// more) repeats each scenario's fault in the same cluster.
package faults
