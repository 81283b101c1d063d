package server

import (
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
)

// connLimits are Kafka's connection quotas: max.connections (the acceptor
// waits for a free slot before it accepts the next connection, so clients
// over the limit wait in the kernel's backlog, as Kafka's acceptor blocks)
// and max.connections.per.ip with its overrides (a connection over its
// address's limit is closed at once, as Kafka's TooManyConnectionsException
// closes it).
type connLimits struct {
	slots chan struct{} // one per open connection; nil: no limit
	// waiting is set while an acceptor waits for a slot (tests read it).
	waiting atomic.Int32
	mu      sync.Mutex
	perIP   map[string]int32 // open connections per address
	maxIP   int32
	ipMax   map[string]int32 // overrides by address
}

// newConnLimits resolves the overrides' host names (Kafka resolves them
// when it reads its config).
func newConnLimits(cfg *Config) (*connLimits, error) {
	l := &connLimits{perIP: map[string]int32{}, maxIP: cfg.MaxConnectionsPerIP, ipMax: map[string]int32{}}
	if cfg.MaxConnections < math.MaxInt32 {
		l.slots = make(chan struct{}, cfg.MaxConnections)
	}
	for host, n := range cfg.MaxConnectionsPerIPOverrides {
		if ip := net.ParseIP(host); ip != nil {
			l.ipMax[ip.String()] = n
			continue
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			return nil, fmt.Errorf("%w: max.connections.per.ip.overrides: %w", ErrConfig, err)
		}
		for _, ip := range ips {
			l.ipMax[ip.String()] = n
		}
	}
	return l, nil
}

// waitSlot takes a connection slot, waiting while max.connections are open;
// false when done closes first.
func (l *connLimits) waitSlot(done <-chan struct{}) bool {
	if l.slots == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
		return true
	default:
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	select {
	case l.slots <- struct{}{}:
		return true
	case <-done:
		return false
	}
}

// releaseSlot gives back a slot taken by waitSlot.
func (l *connLimits) releaseSlot() {
	if l.slots != nil {
		<-l.slots
	}
}

// admitIP counts a connection from ip, or says (with the limit) that the
// address already has its maximum.
func (l *connLimits) admitIP(ip string) (bool, int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	max, ok := l.ipMax[ip]
	if !ok {
		max = l.maxIP
	}
	if l.perIP[ip] >= max {
		return false, max
	}
	l.perIP[ip]++
	return true, max
}

// releaseIP uncounts a connection admitted by admitIP.
func (l *connLimits) releaseIP(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// remoteIP is the address part of a connection's peer.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// requestMemory is queued.max.request.bytes, Kafka's memory pool for
// requests read but not yet served: a connection reserves a request's size
// once it has read the size prefix and before it reads the body, and gives
// it back when the request has been served. While the pool is used up,
// connections wait before reading more (Kafka mutes their channels). As in
// Kafka's non-strict pool, a reservation is granted whenever anything is
// left, so a request larger than what is left (never larger than
// socket.request.max.bytes, which the pool is at least) is not starved by
// small ones.
type requestMemory struct {
	limit int64 // bytes; <= 0: no limit
	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced when memory comes back
	// waiting counts connections waiting for memory (tests read it).
	waiting atomic.Int32
}

func newRequestMemory(limit int64) *requestMemory {
	return &requestMemory{limit: limit, freed: make(chan struct{})}
}

// reserve waits until memory is left, then takes n bytes; false when done
// closes first.
func (m *requestMemory) reserve(n int64, done <-chan struct{}) bool {
	if m == nil || m.limit <= 0 {
		return true
	}
	for {
		m.mu.Lock()
		if m.used < m.limit {
			m.used += n
			m.mu.Unlock()
			return true
		}
		freed := m.freed
		m.mu.Unlock()
		m.waiting.Add(1)
		select {
		case <-freed:
			m.waiting.Add(-1)
		case <-done:
			m.waiting.Add(-1)
			return false
		}
	}
}

// release gives back n reserved bytes and wakes the waiters.
func (m *requestMemory) release(n int64) {
	if m == nil || m.limit <= 0 || n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	close(m.freed)
	m.freed = make(chan struct{})
	m.mu.Unlock()
}

// inUse is the memory reserved now (tests read it).
func (m *requestMemory) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}
