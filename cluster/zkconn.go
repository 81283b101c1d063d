package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZKConn is the production ZK: one go-zookeeper client with the chroot of
// zookeeper.connect applied to every path. go-zookeeper reconnects by
// itself: within the session timeout to the same session (watches are set
// again, ephemerals stay), after an expiry with a new session, which Events
// reports as SessionExpired then SessionConnected with the new id.
type ZKConn struct {
	conn   *zk.Conn
	chroot string
	log    *slog.Logger
	closed atomic.Bool

	events *sessionEvents
	// session state as seen by the event callback (go-zookeeper's goroutines)
	mu          sync.Mutex
	haveSession bool
	lastID      int64
	first       chan struct{} // closed at the first session
	firstOnce   sync.Once
	connSet     chan struct{} // closed once conn is assigned
}

var _ ZK = (*ZKConn)(nil)

// DialZK connects to zookeeper.connect and waits for a session, at most
// cfg.ConnectionTimeout (ErrNoSession after it, as Kafka fails to start).
// A chroot that does not exist is created, as Kafka does.
func DialZK(cfg ZKConfig) (*ZKConn, error) {
	c := cfg.withDefaults()
	servers, chroot, err := ParseZKConnect(c.Connect)
	if err != nil {
		return nil, err
	}
	z := &ZKConn{chroot: chroot, log: c.Logger, events: newSessionEvents(), first: make(chan struct{}),
		connSet: make(chan struct{})}
	dial := c.Dial
	if dial == nil {
		dial = net.DialTimeout
	}
	dial = clampDeadlines(dial, c.SessionTimeout)
	conn, _, err := zk.Connect(servers, c.SessionTimeout, zk.WithLogger(zkLogger{c.Logger}),
		zk.WithLogInfo(false), zk.WithEventCallback(z.onEvent), zk.WithDialer(dial))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadConnect, c.Connect, err)
	}
	z.conn = conn
	close(z.connSet)
	timer := time.NewTimer(c.ConnectionTimeout)
	defer timer.Stop()
	select {
	case <-z.first:
	case <-timer.C:
		z.Close()
		return nil, fmt.Errorf("%w with %s within zookeeper.connection.timeout.ms (%v)",
			ErrNoSession, strings.Join(servers, ","), c.ConnectionTimeout)
	}
	if chroot != "" {
		if err := z.makeChroot(time.Now().Add(c.ConnectionTimeout)); err != nil {
			z.Close()
			return nil, err
		}
	}
	return z, nil
}

// makeChroot creates every missing component of the chroot (Kafka's
// KafkaServer.initZkClient does the same before using it). A create whose
// connection is lost is retried until deadline (the client reconnects by
// itself; a create that did land then finds the node existing).
func (z *ZKConn) makeChroot(deadline time.Time) error {
	parts := strings.Split(z.chroot[1:], "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		backoff := 20 * time.Millisecond
		for {
			_, err := z.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			err = z.mapErr(p, err)
			if !errors.Is(err, ErrConnectionLoss) || time.Now().Add(backoff).After(deadline) {
				return fmt.Errorf("cluster: creating chroot %s: %w", p, err)
			}
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
		}
	}
	return nil
}

// onEvent runs on go-zookeeper's goroutines for every event: it must not
// block. Session state changes are queued for Events.
func (z *ZKConn) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	<-z.connSet // the callback may run before zk.Connect has returned
	z.mu.Lock()
	defer z.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		id := z.conn.SessionID()
		z.haveSession, z.lastID = true, id
		z.log.Info("zookeeper session established", "session", fmt.Sprintf("0x%x", id), "server", ev.Server)
		z.events.push(SessionEvent{State: SessionConnected, SessionID: id})
		z.firstOnce.Do(func() { close(z.first) })
	case zk.StateDisconnected:
		if z.haveSession {
			z.haveSession = false
			if !z.closed.Load() {
				z.log.Warn("zookeeper disconnected", "session", fmt.Sprintf("0x%x", z.lastID))
			}
			z.events.push(SessionEvent{State: SessionDisconnected, SessionID: z.lastID})
		}
	case zk.StateExpired:
		z.haveSession = false
		z.log.Warn("zookeeper session expired", "session", fmt.Sprintf("0x%x", z.lastID))
		z.events.push(SessionEvent{State: SessionExpired, SessionID: z.lastID})
	}
}

// SessionID is the current session's id, 0 while none.
func (z *ZKConn) SessionID() int64 {
	if z.closed.Load() {
		return 0
	}
	return z.conn.SessionID()
}

// Events delivers session state changes in order. It is closed after Close.
func (z *ZKConn) Events() <-chan SessionEvent { return z.events.out }

// Close ends the session: the server deletes its ephemerals at once; its
// watches fire WatchLost; later calls return ErrClosed.
func (z *ZKConn) Close() {
	if z.closed.Swap(true) {
		return
	}
	z.conn.Close()
	z.events.close()
}

func (z *ZKConn) full(p string) string {
	if z.chroot == "" {
		return p
	}
	if p == "/" {
		return z.chroot
	}
	return z.chroot + p
}

func (z *ZKConn) strip(p string) string {
	if z.chroot == "" {
		return p
	}
	p = strings.TrimPrefix(p, z.chroot)
	if p == "" {
		return "/"
	}
	return p
}

func (z *ZKConn) check(p string) error {
	if z.closed.Load() {
		return ErrClosed
	}
	if err := CheckPath(p); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return nil
}

// Get reads a znode.
func (z *ZKConn) Get(p string) ([]byte, Stat, error) {
	if err := z.check(p); err != nil {
		return nil, Stat{}, err
	}
	data, st, err := z.conn.Get(z.full(p))
	if err != nil {
		return nil, Stat{}, z.mapErr(p, err)
	}
	return data, toStat(st), nil
}

// GetW reads a znode and watches its data and deletion.
func (z *ZKConn) GetW(p string) ([]byte, Stat, <-chan WatchEvent, error) {
	if err := z.check(p); err != nil {
		return nil, Stat{}, nil, err
	}
	data, st, ch, err := z.conn.GetW(z.full(p))
	if err != nil {
		return nil, Stat{}, nil, z.mapErr(p, err)
	}
	return data, toStat(st), z.relay(p, ch), nil
}

// Children lists a znode's children.
func (z *ZKConn) Children(p string) ([]string, Stat, error) {
	if err := z.check(p); err != nil {
		return nil, Stat{}, err
	}
	cs, st, err := z.conn.Children(z.full(p))
	if err != nil {
		return nil, Stat{}, z.mapErr(p, err)
	}
	return cs, toStat(st), nil
}

// ChildrenW lists a znode's children and watches the list and deletion.
func (z *ZKConn) ChildrenW(p string) ([]string, Stat, <-chan WatchEvent, error) {
	if err := z.check(p); err != nil {
		return nil, Stat{}, nil, err
	}
	cs, st, ch, err := z.conn.ChildrenW(z.full(p))
	if err != nil {
		return nil, Stat{}, nil, z.mapErr(p, err)
	}
	return cs, toStat(st), z.relay(p, ch), nil
}

// Exists tells whether a znode exists.
func (z *ZKConn) Exists(p string) (bool, Stat, error) {
	if err := z.check(p); err != nil {
		return false, Stat{}, err
	}
	ok, st, err := z.conn.Exists(z.full(p))
	if err != nil {
		return false, Stat{}, z.mapErr(p, err)
	}
	if !ok {
		return false, Stat{}, nil
	}
	return true, toStat(st), nil
}

// ExistsW tells whether a znode exists and watches its creation, data and
// deletion.
func (z *ZKConn) ExistsW(p string) (bool, Stat, <-chan WatchEvent, error) {
	if err := z.check(p); err != nil {
		return false, Stat{}, nil, err
	}
	ok, st, ch, err := z.conn.ExistsW(z.full(p))
	if err != nil {
		return false, Stat{}, nil, z.mapErr(p, err)
	}
	if !ok {
		return false, Stat{}, z.relay(p, ch), nil
	}
	return true, toStat(st), z.relay(p, ch), nil
}

// Create creates a znode (open ACL, as Kafka without zookeeper.set.acl).
func (z *ZKConn) Create(p string, data []byte, mode CreateMode) (string, error) {
	if err := z.checkCreate(p, mode); err != nil {
		return "", err
	}
	got, err := z.conn.Create(z.full(p), data, zkFlags(mode), zk.WorldACL(zk.PermAll))
	if err != nil {
		return "", z.mapErr(p, err)
	}
	return z.strip(got), nil
}

func (z *ZKConn) checkCreate(p string, mode CreateMode) error {
	if mode < Persistent || mode > EphemeralSequential {
		return fmt.Errorf("%w: create mode %d", ErrBadRequest, mode)
	}
	if mode == PersistentSequential || mode == EphemeralSequential {
		return z.check(p + "0") // a sequential path may end in '/'
	}
	return z.check(p)
}

// Set writes a znode's data if its version is version (-1: any).
func (z *ZKConn) Set(p string, data []byte, version int32) (Stat, error) {
	if err := z.check(p); err != nil {
		return Stat{}, err
	}
	st, err := z.conn.Set(z.full(p), data, version)
	if err != nil {
		return Stat{}, z.mapErr(p, err)
	}
	return toStat(st), nil
}

// Delete removes a childless znode if its version is version (-1: any).
func (z *ZKConn) Delete(p string, version int32) error {
	if err := z.check(p); err != nil {
		return err
	}
	if err := z.conn.Delete(z.full(p), version); err != nil {
		return z.mapErr(p, err)
	}
	return nil
}

func zkFlags(m CreateMode) int32 {
	switch m {
	case Ephemeral:
		return zk.FlagEphemeral
	case PersistentSequential:
		return zk.FlagSequence
	case EphemeralSequential:
		return zk.FlagEphemeralSequential
	}
	return zk.FlagPersistent
}

func toStat(s *zk.Stat) Stat {
	if s == nil {
		return Stat{}
	}
	return Stat{Version: s.Version, Czxid: s.Czxid, EphemeralOwner: s.EphemeralOwner, NumChildren: s.NumChildren}
}

// relay turns go-zookeeper's one-shot watch channel into ours. go-zookeeper
// closes every watch channel once: when it fires, when the session expires
// (EventNotWatching) and when the client closes, so the goroutine always
// ends.
func (z *ZKConn) relay(p string, in <-chan zk.Event) <-chan WatchEvent {
	out := make(chan WatchEvent, 1)
	go func() {
		defer close(out)
		ev, ok := <-in
		if !ok {
			out <- WatchEvent{Type: WatchLost, Path: p}
			return
		}
		out <- WatchEvent{Type: watchType(ev.Type), Path: z.stripEventPath(p, ev.Path)}
	}()
	return out
}

func (z *ZKConn) stripEventPath(p, evPath string) string {
	if evPath == "" {
		return p
	}
	return z.strip(evPath)
}

func watchType(t zk.EventType) WatchEventType {
	switch t {
	case zk.EventNodeCreated:
		return NodeCreated
	case zk.EventNodeDeleted:
		return NodeDeleted
	case zk.EventNodeDataChanged:
		return NodeDataChanged
	case zk.EventNodeChildrenChanged:
		return NodeChildrenChanged
	}
	return WatchLost // EventNotWatching: session expired or client closed
}

// mapErr maps go-zookeeper's errors to this package's sentinels, naming the
// path.
func (z *ZKConn) mapErr(p string, err error) error {
	if err == nil {
		return nil
	}
	var s error
	switch {
	case errors.Is(err, zk.ErrNoNode):
		s = ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		s = ErrNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		s = ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		s = ErrNotEmpty
	case errors.Is(err, zk.ErrSessionExpired):
		s = ErrSessionExpired
	case errors.Is(err, zk.ErrNoChildrenForEphemerals), errors.Is(err, zk.ErrInvalidPath),
		errors.Is(err, zk.ErrBadArguments), errors.Is(err, zk.ErrNoAuth),
		errors.Is(err, zk.ErrInvalidACL), errors.Is(err, zk.ErrInvalidFlags),
		errors.Is(err, zk.ErrAuthFailed):
		s = ErrBadRequest
	case z.closed.Load():
		s = ErrClosed
	default:
		// connection closed or lost, no server reachable, session moved,
		// closing, unknown codes: the outcome is unknown
		s = ErrConnectionLoss
	}
	return fmt.Errorf("%w: %s: %v", s, p, err)
}

// clampDeadlines makes go-zookeeper's socket deadlines at most the session
// timeout away. It waits 10 x 2/3 of the session timeout for the answer to
// a connect request, and requests queued meanwhile wait with it: behind a
// silent partition (packets dropped, no reset) a call would hang two
// minutes at Kafka's 18 s. Clamped, it gives up on the server after one
// session timeout and fails the queued calls with ErrConnectionLoss.
//
// Until the connection's first answer (the connect response) the limit is
// a third of the session timeout: a peer that accepts and never answers
// (while ZooKeeper restarts, its free port can be anything's for a moment)
// would otherwise hold the client a whole session timeout, so the session
// expired before it tried the real server again. A live server answers a
// connect request at once; two thirds of the session are left to find one.
func clampDeadlines(dial func(string, string, time.Duration) (net.Conn, error), max time.Duration) func(string, string, time.Duration) (net.Conn, error) {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &clampConn{Conn: c, max: max}, nil
	}
}

type clampConn struct {
	net.Conn
	max      time.Duration
	answered atomic.Bool // a read returned data: the handshake is answered
}

func (c *clampConn) clamp(t time.Time) time.Time {
	max := c.max
	if !c.answered.Load() {
		max /= 3
	}
	if lim := time.Now().Add(max); !t.IsZero() && t.After(lim) {
		return lim
	}
	return t
}

func (c *clampConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.answered.Store(true)
	}
	return n, err
}

func (c *clampConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *clampConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *clampConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

// zkLogger hands go-zookeeper's messages to slog at debug level: its
// reconnect attempts are noise next to our own session change lines.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "component", "zookeeper-client")
}
