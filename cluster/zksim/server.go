package zksim

import (
	"fmt"
	"sort"
	"sync"

	"github.com/stratalog/strata/cluster"
)

// Options tune a Server. The zero value delivers every event at once and
// injects no fault.
type Options struct {
	// Hold, when set, is asked about every watch and session event as it is
	// queued; true keeps it (and everything queued after it for the same
	// handle) back until Server.Deliver or DeliverAll, or the handle's next
	// call.
	Hold func(Delivery) bool
	// Fault, when set, is asked before every call of a connected handle.
	Fault func(Call) Fault
	// EventBuffer is the capacity of each handle's Events channel (default
	// 64); events that do not fit wait in the handle's queue.
	EventBuffer int
}

// Call describes a call about to run, for Options.Fault.
type Call struct {
	Session int64
	Op      string // get, getw, children, childrenw, exists, existsw, create, set, delete, multi
	Path    string // the first op's path for a multi
}

// Fault is what Options.Fault makes of a call.
type Fault int

// Faults.
const (
	NoFault Fault = iota
	// LoseRequest: the connection drops before the request reaches the
	// server; nothing runs.
	LoseRequest
	// LoseResponse: the request runs, the connection drops before the
	// answer.
	LoseResponse
)

// Server is one in-memory ZooKeeper.
type Server struct {
	mu       sync.Mutex
	opts     Options
	tree     *tree
	zxid     int64
	lastID   int64
	live     map[int64]*Session // server-side live sessions -> their handle
	handles  []*Session
	seq      uint64 // delivery sequence
	watchSeq uint64
}

// NewServer returns an empty ZooKeeper (just / and /zookeeper).
func NewServer(opts Options) *Server {
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = 64
	}
	return &Server{opts: opts, tree: newTree(), live: map[int64]*Session{}}
}

// Connect opens a new handle with a new session; its Events channel gets
// SessionConnected first.
func (s *Server) Connect() *Session {
	h, _ := s.ConnectChroot("")
	return h
}

// ConnectChroot is Connect with every path of the handle under chroot,
// created when missing (as the production client does for
// zookeeper.connect's chroot).
func (s *Server) ConnectChroot(chroot string) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if chroot == "/" {
		chroot = ""
	}
	if chroot != "" {
		if err := checkPath(chroot); err != nil {
			return nil, err
		}
		s.zxid++
		for i := 1; i <= len(chroot); i++ {
			if i == len(chroot) || chroot[i] == '/' {
				if s.tree.nodes[chroot[:i]] == nil {
					_, _ = s.tree.create(chroot[:i], nil, cluster.Persistent, 0, s.zxid)
				}
			}
		}
		s.dispatch(nil)
	}
	h := &Session{srv: s, chroot: chroot, client: len(s.handles), events: make(chan cluster.SessionEvent, s.opts.EventBuffer)}
	s.handles = append(s.handles, h)
	s.newSession(h)
	s.flush(h)
	return h, nil
}

// newSession gives h a new server session and queues SessionConnected.
func (s *Server) newSession(h *Session) {
	s.zxid++
	s.lastID++
	h.id = s.lastID
	h.state = stateConnected
	s.live[h.id] = h
	s.queue(h, Delivery{Session: h.id, Event: &cluster.SessionEvent{State: cluster.SessionConnected, SessionID: h.id}})
}

// endSession drops session id on the server: its ephemerals are deleted in
// one transaction (other sessions' watches fire). The handle's watches are
// left to the caller.
func (s *Server) endSession(id int64) {
	delete(s.live, id)
	s.zxid++
	for _, p := range s.tree.ephemerals(id) {
		_ = s.tree.delete(p, -1)
	}
	s.dispatch(nil)
}

// ExpireSession expires session id as ZooKeeper does when its timeout
// passes; false if no live session has that id.
func (s *Server) ExpireSession(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.live[id]
	if h == nil {
		return false
	}
	s.endSession(id)
	if h.state == stateConnected {
		s.queue(h, Delivery{Session: id, Event: &cluster.SessionEvent{State: cluster.SessionDisconnected, SessionID: id}})
		s.renew(h, id)
		h.failNext = true
	} else {
		h.expired = true // learnt at Reconnect
	}
	s.flushAll()
	return true
}

// renew tells h its session old expired and gives it a new one.
func (s *Server) renew(h *Session, old int64) {
	s.queue(h, Delivery{Session: old, Event: &cluster.SessionEvent{State: cluster.SessionExpired, SessionID: old}})
	s.loseWatches(h)
	s.newSession(h)
}

// Sessions lists the live session ids, sorted.
func (s *Server) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Zxid is the last transaction id.
func (s *Server) Zxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zxid
}

// Dump lists every znode (path, version, czxid, owner, data) sorted by
// path, for test failures.
func (s *Server) Dump() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := make([]string, 0, len(s.tree.nodes))
	for p := range s.tree.nodes {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	for i, p := range ps {
		n := s.tree.nodes[p]
		ps[i] = fmt.Sprintf("%s v%d czxid %d owner 0x%x %q", p, n.version, n.czxid, n.owner, n.data)
	}
	return ps
}
