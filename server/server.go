package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/internal/metrics"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/producer"
)

// Options are the Go-level knobs that are not Kafka properties.
type Options struct {
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// OpenLog opens a new partition's log (default segment.Open); logs found
	// at start are loaded by recovery.OpenDataDir.
	OpenLog LogOpener
	// FS is the filesystem of everything the broker stores: log dirs, topic
	// table, meta.properties, checkpoints (default vfs.OS; tests pass a
	// vfs.MemFS to take power-loss clones of a running broker).
	FS vfs.FS
	// OnLogDirOffline, if set, is called (from the broker's log-dir failure
	// handler, not the failing goroutine) for each log dir that goes offline
	// after an I/O error; see Server.OfflineLogDirs.
	OnLogDirOffline func(dir string, err error)
}

// Server is a running single-node broker.
type Server struct {
	cfg    *Config
	log    *slog.Logger
	topics *topicStore
	groups *coordinator // the group coordinator
	txns   *txnCoord    // the transaction coordinator (txn_coord.go)

	listeners     []net.Listener
	advertised    Listener        // what Metadata tells clients to dial
	advertisedAll []Listener      // every advertised listener, bound ports resolved
	cl            *clusterNode    // cluster mode (zookeeper.connect), nil on a single node
	limits        *connLimits     // max.connections, max.connections.per.ip
	reqMem        *requestMemory  // queued.max.request.bytes
	sec           *serverSecurity // TLS and SASL of the listeners (sasl.go)
	acls          *aclStore       // authorizer.class.name (acl.go)
	quotas        *quotaStore     // client quotas (quota.go)

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing atomic.Bool
	done    chan struct{} // closed when shutdown begins
	// drainUntil is how long a connection that has answered only its
	// handshake may wait for its first request once closing is set
	// (freshDrain after Close began; see Close).
	drainUntil time.Time
	freshDrain time.Duration
	connWG     sync.WaitGroup
	accWG      sync.WaitGroup
	bgWG       sync.WaitGroup // background jobs (retention)
	nextID     atomic.Uint64

	onLogDirOffline func(dir string, err error)

	closeMu sync.Mutex
	closed  bool
	stopErr error

	// decompression is the produce path's decompression memory budget
	// (produce_memory.go); maxDecompressed caps what one batch may
	// decompress to (0: record.MaxDecompressedSize; tests lower it).
	pidOnce sync.Once
	pids    *producer.Blocks // ProducerIDs

	decompression   *memBudget
	maxDecompressed atomic.Int64

	// met is the broker's metrics (metrics.go), nil when
	// strata.metrics.listener is empty; metricsLn and metricsSrv serve it.
	met        *metrics.Registry
	metricsLn  net.Listener
	metricsSrv *http.Server
	// timed: requests are timed (metrics on, or the slow-request log);
	// slow is strata.request.slow.ms, negative when that log is off.
	timed bool
	slow  time.Duration
}

// Start loads the log dirs (meta.properties, topic table, partition logs),
// binds the listeners and starts accepting connections.
func Start(cfg *Config, opts *Options) (*Server, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OpenLog == nil {
		o.OpenLog = openSegmentLog
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	limits, err := newConnLimits(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		log:    o.Logger,
		conns:  map[*conn]struct{}{},
		done:   make(chan struct{}),
		limits: limits,
		reqMem: newRequestMemory(cfg.QueuedMaxRequestBytes),

		freshDrain:      freshDrain,
		decompression:   newMemBudget(DecompressionBudget),
		onLogDirOffline: o.OnLogDirOffline,
	}
	s.startMetrics()
	s.startTiming()
	s.topics = newTopicStore(cfg, o.OpenLog, o.Logger, o.FS)
	cm, err := newCleaner(cfg, s.topics)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.topics.cleaner = cm
	s.quotas = newQuotaStore(s)
	if s.met != nil {
		if err := s.met.Register(quotaCollector{s.quotas.q}); err != nil {
			s.met.Close()
			return nil, fmt.Errorf("%w: quota metrics: %w", ErrConfig, err)
		}
	}
	if cfg.Cluster.Enabled() {
		err = s.startCluster()
	} else {
		err = s.topics.load()
	}
	if err == nil {
		err = s.startSecurity()
	}
	if err == nil {
		err = s.startACLs()
	}
	if err == nil {
		err = s.quotas.load()
	}
	if err != nil {
		if s.cl != nil {
			_ = s.cl.close()
		}
		_ = s.topics.close()
		return nil, err
	}
	for _, l := range cfg.Listeners {
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		if err != nil {
			s.abortStart()
			return nil, fmt.Errorf("server: listen %s: %w", l, err)
		}
		s.listeners = append(s.listeners, ln)
	}
	s.advertised = s.advertise()
	s.advertisedAll = s.advertiseAll()
	if s.cl != nil {
		if err := s.cl.join(); err != nil {
			s.abortStart()
			return nil, err
		}
	}
	s.groups = newCoordinator(s)
	s.startTxns()
	if s.cl != nil {
		s.groups.clusterGroups(s.cl.offsetsPartitionCount())
	} else {
		s.groups.startLoading()
	}
	cm.Start()
	s.serveMetrics()
	s.bgWG.Add(1)
	go s.groups.expiryLoop()
	s.bgWG.Add(1)
	go s.checkpointLoop()
	s.bgWG.Add(1)
	go s.logDirFailureLoop()
	s.startSummary()
	s.startLagRefresh()
	for i, ln := range s.listeners {
		s.log.Info("listening", "address", ln.Addr().String(), "advertised", s.endpoint(cfg.Listeners[i].Name).String(),
			"node_id", s.NodeID(), "cluster_id", s.ClusterID(), "log_dirs", cfg.LogDirs)
		s.accWG.Add(1)
		go s.acceptLoop(ln, cfg.Listeners[i].Name)
	}
	return s, nil
}

// abortStart undoes a start that failed after the logs were opened.
func (s *Server) abortStart() {
	s.met.Close()
	for _, o := range s.listeners {
		o.Close()
	}
	if s.cl != nil {
		_ = s.cl.close()
	}
	_ = s.topics.close()
}

// advertise resolves the endpoint Metadata reports: advertised.listeners, or
// the first listener with its bound port (port 0 binds an ephemeral one) and
// a host clients can dial.
func (s *Server) advertise() Listener {
	if len(s.cfg.AdvertisedListeners) > 0 {
		return s.cfg.AdvertisedListeners[0]
	}
	l := s.cfg.Listeners[0]
	if a, ok := s.listeners[0].Addr().(*net.TCPAddr); ok {
		l.Port = int32(a.Port)
	}
	if ip := net.ParseIP(l.Host); l.Host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil && h != "" {
			l.Host = h
		} else {
			l.Host = "127.0.0.1"
		}
	}
	return l
}

// advertiseAll resolves every advertised endpoint as advertise does the
// first: advertised.listeners as given, else each listener with its bound
// port and a dialable host.
func (s *Server) advertiseAll() []Listener {
	if len(s.cfg.AdvertisedListeners) > 0 {
		return s.cfg.AdvertisedListeners
	}
	out := make([]Listener, len(s.cfg.Listeners))
	for i, l := range s.cfg.Listeners {
		if a, ok := s.listeners[i].Addr().(*net.TCPAddr); ok {
			l.Port = int32(a.Port)
		}
		if ip := net.ParseIP(l.Host); l.Host == "" || (ip != nil && ip.IsUnspecified()) {
			if h, err := os.Hostname(); err == nil && h != "" {
				l.Host = h
			} else {
				l.Host = "127.0.0.1"
			}
		}
		out[i] = l
	}
	return out
}

// Addr is the first listener's bound address.
func (s *Server) Addr() net.Addr { return s.listeners[0].Addr() }

// ClusterID is the cluster id: meta.properties' on a single node,
// ZooKeeper's /cluster/id in cluster mode.
func (s *Server) ClusterID() string {
	if s.cl != nil {
		return s.cl.clusterID
	}
	return s.topics.clusterID
}

// NodeID is the broker's id (generated in cluster mode when broker.id is
// -1).
func (s *Server) NodeID() int32 {
	if s.cl != nil {
		return s.cl.id
	}
	return s.cfg.NodeID
}

// freshDrain is how long, at shutdown, a connection that has answered only
// its handshake may wait for its first request (see Close). A client sends
// it as soon as ApiVersions is answered, so this covers a loaded machine.
const freshDrain = 500 * time.Millisecond

// acceptLoop accepts connections while max.connections allows: it takes a
// slot before it accepts, so at the limit new clients wait in the kernel's
// backlog until a connection closes (Kafka's acceptor waits the same way).
// A connection over its address's max.connections.per.ip is closed at once.
func (s *Server) acceptLoop(ln net.Listener, listener string) {
	defer s.accWG.Done()
	var delay time.Duration
	for {
		if !s.limits.waitSlot(s.done) {
			return
		}
		nc, err := ln.Accept()
		if err != nil {
			s.limits.releaseSlot()
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary trouble (EMFILE...): back off, as net/http does.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.log.Error("accept failed", "error", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		ip := remoteIP(nc)
		if ok, max := s.limits.admitIP(ip); !ok {
			s.log.Info("rejected connection: the address already has max.connections.per.ip", "remote", nc.RemoteAddr().String(), "max", max)
			nc.Close()
			s.limits.releaseSlot()
			continue
		}
		c := newConn(s, s.secureConn(nc, listener))
		c.ip, c.listener = ip, listener
		c.initAuth()
		s.mu.Lock() // Close waits for this loop before it wakes s.conns
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.limits.releaseIP(c.ip)
	s.limits.releaseSlot()
	s.connWG.Done()
}

// Close shuts down: stop accepting, let every connection finish the request
// it is handling (up to strata.shutdown.timeout.ms), then flush and close the
// logs. Safe to call more than once.
//
// A connection that has answered only its handshake (ApiVersions, SASL) is
// not cut while it waits: its client has not seen it work, and a client such
// as franz-go takes an end of stream on a connection's first request for a
// misconfiguration (missing SASL or TLS) and gives up instead of retrying.
// It gets up to freshDrain to send its first request, which is answered
// (after the controlled shutdown, most answers send the client elsewhere)
// before the connection closes.
func (s *Server) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return s.stopErr
	}
	s.closed = true
	s.log.Info("shutting down")
	if s.cl != nil {
		s.cl.controlledShutdown() // while still serving, as Kafka
	}
	// Stop accepting first: a client dialing now is refused, and retries.
	for _, ln := range s.listeners {
		ln.Close()
	}
	s.mu.Lock()
	s.drainUntil = time.Now().Add(min(s.freshDrain, time.Duration(s.cfg.ShutdownTimeoutMs)*time.Millisecond))
	s.closing.Store(true)
	close(s.done)
	if s.cl != nil {
		s.cl.cancel() // parked acks=all produces answer now
	}
	s.mu.Unlock()
	s.accWG.Wait() // every accepted connection is in s.conns now
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Wake connections waiting for their next request; one handling a
	// request finishes it, writes the response and then sees closing.
	for _, c := range conns {
		c.wake()
	}
	finished := make(chan struct{})
	go func() { s.connWG.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Duration(s.cfg.ShutdownTimeoutMs) * time.Millisecond):
		s.log.Warn("shutdown timeout: closing connections with requests in flight")
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-finished
	}
	if s.txns != nil {
		s.txns.close()
	}
	s.groups.close()
	s.stopMetrics()
	s.bgWG.Wait()
	s.topics.stopMoves() // before the replicas close: a move resumes at the next start
	var clusterErr error
	if s.cl != nil {
		clusterErr = s.cl.close()
	}
	s.stopErr = errors.Join(clusterErr, s.topics.close())
	if s.stopErr != nil {
		s.log.Error("closing logs", "error", s.stopErr)
	} else {
		s.log.Info("shut down cleanly")
	}
	return s.stopErr
}
