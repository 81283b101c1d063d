package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/replica"
)

// clusterNode is the broker's cluster mode (zookeeper.connect set): its
// ZooKeeper session and membership, the replicas it hosts (replica.Manager
// and the Runner that fetches for its followers), the metadata cache the
// controller's UpdateMetadata keeps, and the topic configs read from
// ZooKeeper. Server.cl is nil on a single node.
type clusterNode struct {
	s   *Server
	cfg *Config
	log *slog.Logger

	zk        cluster.ZK // the session; the member closes it
	id        int32      // broker.id (configured, from meta.properties, or generated)
	clusterID string
	meta      clusterMeta

	rm *replica.Manager
	// security secures this broker's connections to the others (the
	// inter-broker listener's protocol, interbroker.go).
	security kwire.Security
	// leaderQuota and followerQuota are the replication throttles, the
	// Manager's (cluster_throttle.go feeds them).
	leaderQuota, followerQuota *replica.Quota
	// runner is the replica fetchers, set once join started them (the
	// member's callbacks may run before).
	runner atomic.Pointer[replica.Runner]
	mem    clusterMember

	// ctx ends when the broker shuts down: produce waits and calls to the
	// controller give up.
	ctx    context.Context
	cancel context.CancelFunc

	images imageStore // the metadata cache (cluster_metadata.go)

	cfgMu    sync.Mutex
	topicCfg map[string]*topic   // effective configs of topics in use here
	topicIDs map[string][16]byte // topic ids from LeaderAndIsr (partition.metadata)

	// ctrlEpoch is the highest controller epoch seen in a control request:
	// older ones are fenced (STALE_CONTROLLER_EPOCH).
	ctrlEpoch atomic.Int32
	// stateChangeMu is held by each control request (LeaderAndIsr,
	// UpdateMetadata, StopReplica) from its epoch check to the end of its
	// apply, as Kafka's replicaStateChangeLock: a request that passed the
	// check cannot be applied after a newer controller's request.
	stateChangeMu sync.Mutex
	// afterControlCheck, set by tests only, runs between a control
	// request's epoch check and its apply.
	afterControlCheck atomic.Pointer[func(kmsg.Request)]

	// Parked fetches wait on these, broker-wide, instead of on every
	// partition they name (a follower's fetch names dozens): appended is
	// signalled after every append as leader and every role change (what
	// followers wait for), hwMoved after those and after every follower
	// fetch served, which may move a high watermark (what consumers wait
	// for). A wake for another partition costs a parked fetch one re-read.
	appended, hwMoved broadcast

	// remoteHW holds the high watermarks of partitions led on other
	// brokers, for consumer lag (metrics_lag_remote.go); nil when off.
	remoteHW atomic.Pointer[remoteHWs]

	// sawLeaderAndIsr is set by the first LeaderAndIsr: recovered logs no
	// request claimed by then are strays (cluster_logs.go).
	sawLeaderAndIsr atomic.Bool
}

// startCluster is cluster mode's start up to the listeners, in Kafka's
// order (KafkaServer.startup): the ZooKeeper session (a clear error after
// zookeeper.connection.timeout.ms when ZooKeeper does not answer), the log
// dirs' meta.properties checked against ZooKeeper's /cluster/id before any
// log is touched (another cluster's data: refused), the broker id
// (configured, else meta.properties', else generated from /brokers/seqid),
// then the recovery of every log dir with the topic configs from
// ZooKeeper. No topic table is read: topics live in ZooKeeper.
func (s *Server) startCluster() error {
	cfg := s.cfg
	cl := &clusterNode{s: s, cfg: cfg, log: s.log, topicCfg: map[string]*topic{}, topicIDs: map[string][16]byte{}}
	cl.leaderQuota = replica.NewQuota(int(cfg.Cluster.ReplicationQuotaWindowNum), int(cfg.Cluster.ReplicationQuotaWindowSizeSec))
	cl.followerQuota = replica.NewQuota(int(cfg.Cluster.ReplicationQuotaWindowNum), int(cfg.Cluster.ReplicationQuotaWindowSizeSec))
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	cl.ctrlEpoch.Store(-1)
	names := make([]string, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		names[i] = l.Name
	}
	cl.images.init(names)
	sec, err := interBrokerSecurity(cfg)
	if err != nil {
		return err
	}
	cl.security = sec
	zk, err := cluster.DialZK(cluster.ZKConfig{
		Connect:           cfg.Cluster.ZookeeperConnect,
		SessionTimeout:    time.Duration(cfg.Cluster.ZookeeperSessionTimeoutMs) * time.Millisecond,
		ConnectionTimeout: cfg.Cluster.zkConnectionTimeout(),
		Logger:            s.log.With("component", "zookeeper"),
	})
	if err != nil {
		return fmt.Errorf("%w: zookeeper.connect=%s: %w", ErrCluster, cfg.Cluster.ZookeeperConnect, err)
	}
	cl.zk = zk
	fail := func(err error) error {
		zk.Close()
		return err
	}
	if err := s.topics.makeLogDirs(); err != nil {
		return fail(err)
	}
	if cl.meta, err = readClusterMeta(s.topics.fs, cfg.LogDirs); err != nil {
		return fail(err)
	}
	if err := cl.resolveBrokerID(); err != nil {
		return fail(err)
	}
	// Refuse another cluster's data before recovery touches it.
	if data, _, err := zk.Get(cluster.ClusterIDPath); err == nil {
		id, err := cluster.DecodeClusterID(data)
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrCluster, err))
		}
		if err := cl.meta.checkClusterID(id); err != nil {
			return fail(err)
		}
	} else if !errors.Is(err, cluster.ErrNoNode) {
		return fail(fmt.Errorf("%w: reading %s: %w", ErrCluster, cluster.ClusterIDPath, err))
	}
	if err := s.topics.openDataDirs(cl.recoveryOptions); err != nil {
		return fail(err)
	}
	s.cl = cl
	return nil
}

// resolveBrokerID settles broker.id: the configured one (which must match
// meta.properties', Kafka's InconsistentBrokerIdException), else the one in
// meta.properties, else a new one from /brokers/seqid (above
// reserved.broker.max.id, as broker.id.generation.enable).
func (cl *clusterNode) resolveBrokerID() error {
	conf, stored := cl.cfg.NodeID, cl.meta.brokerID
	switch {
	case conf >= 0 && stored >= 0 && conf != stored:
		return fmt.Errorf("%w: configured broker.id %d does not match broker.id %d in meta.properties of the log dirs; "+
			"if you moved the log dirs, set broker.id=%d (or -1)", ErrDataDir, conf, stored, stored)
	case conf >= 0:
		cl.id = conf
	case stored >= 0:
		cl.id = stored
	default:
		deadline := time.Now().Add(cl.cfg.Cluster.zkConnectionTimeout())
		if err := cluster.EnsurePersistentPaths(cl.zk, deadline); err != nil {
			return fmt.Errorf("%w: %w", ErrCluster, err)
		}
		id, err := cluster.GenerateBrokerID(cl.zk, cluster.ReservedBrokerMaxID, deadline)
		if err != nil {
			return fmt.Errorf("%w: generating a broker id: %w", ErrCluster, err)
		}
		cl.id = id
		cl.log.Info("broker id generated", "broker_id", id)
	}
	return nil
}

// join is cluster mode's start after the listeners are bound: the replica
// manager over the recovered logs, the membership (registration in
// /brokers/ids, the controller election), meta.properties where missing,
// and the replica fetchers. The accept loops start after it, so the
// controller's first requests wait in the listen backlog, not in vain.
func (cl *clusterNode) join() error {
	cc := &cl.cfg.Cluster
	rm, err := replica.NewManager(replica.Config{
		BrokerID:                     cl.id,
		ReplicaLagTimeMaxMs:          cc.ReplicaLagTimeMaxMs,
		ReplicaFetchMaxBytes:         cc.ReplicaFetchMaxBytes,
		ReplicaFetchResponseMaxBytes: cc.ReplicaFetchResponseMaxBytes,
		ReplicaFetchWaitMaxMs:        cc.ReplicaFetchWaitMaxMs,
		ReplicaFetchMinBytes:         max(cc.ReplicaFetchMinBytes, 0),
		ReplicaFetchBackoffMs:        int64(cc.ReplicaFetchBackoffMs),
		NumReplicaFetchers:           int(cc.NumReplicaFetchers),
		QuotaWindowNum:               int(cc.ReplicationQuotaWindowNum),
		QuotaWindowSizeSeconds:       int(cc.ReplicationQuotaWindowSizeSec),
		LeaderQuota:                  cl.leaderQuota,
		FollowerQuota:                cl.followerQuota,
		OpenLog:                      cl.openLog,
		DeleteLog:                    cl.deleteLog,
		OnTruncate:                   cl.onTruncate,
		IsrEligible:                  cl.brokerAlive,
		OnISRChange:                  cl.s.onISRChange,
		Logger:                       cl.log.With("component", "replica-manager"),
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cl.rm = rm
	mem, err := cl.startMember()
	if err != nil {
		return err
	}
	cl.mem = mem
	rm.SetBrokerEpoch(mem.BrokerEpoch())
	if len(cl.meta.missing) > 0 {
		if err := writeClusterMeta(cl.s.topics.fs, cl.meta.missing, cl.clusterID, cl.id); err != nil {
			return err
		}
	}
	r, err := replica.StartRunner(rm, replica.RunnerOptions{
		Controller:                        cl.controllerAddr,
		Resolve:                           cl.brokerAddr,
		SocketTimeoutMs:                   int64(cc.ReplicaSocketTimeoutMs),
		SocketReceiveBufferBytes:          int(cc.ReplicaSocketReceiveBufferBytes),
		HighWatermarkCheckpointIntervalMs: cc.ReplicaHWCheckpointIntervalMs,
		Logger:                            cl.log.With("component", "replica-fetcher"),
		Security:                          cl.security,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cl.runner.Store(r)
	cl.log.Info("joined the cluster", "broker_id", cl.id, "cluster_id", cl.clusterID, "broker_epoch", mem.BrokerEpoch(),
		"zookeeper", cc.ZookeeperConnect)
	return nil
}

// adoptClusterID takes ZooKeeper's cluster id, unless the log dirs belong
// to another cluster.
func (cl *clusterNode) adoptClusterID(id string) error {
	if err := cl.meta.checkClusterID(id); err != nil {
		return err
	}
	cl.clusterID = id
	return nil
}

// endpoints are the registration's endpoints: the advertised listeners,
// with the bound port of a listener on port 0 and a host others can dial.
func (cl *clusterNode) endpoints() []cluster.Endpoint {
	var out []cluster.Endpoint
	for _, l := range cl.s.advertisedAll {
		proto, _ := cluster.ParseSecurityProtocol(cl.cfg.Cluster.ListenerSecurityProtocolMap[l.Name])
		out = append(out, cluster.Endpoint{Listener: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: proto})
	}
	return out
}

// reregistered: after a session expiry the member registered again with a
// new broker epoch, which AlterPartition must carry.
func (cl *clusterNode) reregistered(epoch int64) {
	cl.rm.SetBrokerEpoch(epoch)
	cl.log.Info("registered again after a ZooKeeper session expiry", "broker_epoch", epoch)
}

// controllerChanged tells the fetchers' AlterPartition sender to look the
// controller up again.
func (cl *clusterNode) controllerChanged() {
	if r := cl.runner.Load(); r != nil {
		r.ControllerChanged()
	}
}

// controllerAddr is the controller's id and inter-broker address: the
// member's view of /controller (else the metadata cache's, which a new
// controller's first UpdateMetadata updates a little later).
func (cl *clusterNode) controllerAddr() (int32, string, bool) {
	id := int32(-1)
	if m := cl.mem; m != nil {
		id = m.ControllerID()
	}
	if id < 0 {
		id = cl.images.load().controllerID
	}
	if id < 0 {
		return -1, "", false
	}
	addr, ok := cl.brokerAddr(id)
	return id, addr, ok
}

// brokerAddr is a live broker's address on the inter-broker listener, from
// the metadata cache, else from LeaderAndIsr's live leaders.
func (cl *clusterNode) brokerAddr(id int32) (string, bool) {
	if b, ok := cl.images.load().broker(id); ok {
		if e, ok := b.endpoint(cl.cfg.interBrokerListener()); ok {
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
		}
	}
	if e, ok := cl.rm.Endpoint(id); ok {
		return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
	}
	return "", false
}

// brokerAlive tells whether the metadata cache lists broker id as alive:
// only then may a leader propose it for an ISR (replica.Config.IsrEligible,
// Kafka's ZooKeeper-mode isReplicaIsrEligible).
func (cl *clusterNode) brokerAlive(id int32) bool { return cl.images.load().alive(id) }

// close stops what join started, in Kafka's order after the requests are
// drained: the replica fetchers (a last high-watermark checkpoint), the
// membership (the session closes: the registration goes at once), the
// replicas' logs. The DataDirs close after (checkpoints, clean-shutdown
// marker).
func (cl *clusterNode) close() error {
	cl.cancel()
	var errs []error
	if r := cl.runner.Load(); r != nil {
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("replica fetchers: %w", err))
		}
	}
	if cl.rm != nil {
		if err := cl.rm.CheckpointHighWatermarks(); err != nil {
			errs = append(errs, fmt.Errorf("high watermark checkpoint: %w", err))
		}
	}
	if cl.mem != nil {
		cl.mem.Close()
	} else if cl.zk != nil {
		cl.zk.Close()
	}
	if cl.rm != nil {
		if err := cl.rm.Close(); err != nil {
			errs = append(errs, fmt.Errorf("replica logs: %w", err))
		}
	}
	return errors.Join(errs...)
}
