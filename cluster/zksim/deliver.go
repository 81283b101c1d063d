package zksim

import (
	"sort"

	"github.com/stratalog/strata/cluster"
)

// Delivery is one queued watch or session event.
type Delivery struct {
	Seq     uint64 // global queueing order
	Client  int    // the handle (Session.Client)
	Session int64  // the session it belongs to
	Watch   *cluster.WatchEvent
	Event   *cluster.SessionEvent

	ch   chan cluster.WatchEvent // the watch's channel
	held bool
}

// watch is one set watch of a handle.
type watch struct {
	seq  uint64
	kind watchKind
	path string
	ch   chan cluster.WatchEvent
}

type watchKind int

const (
	watchData  watchKind = iota // GetW, ExistsW of an existing znode
	watchExist                  // ExistsW of a missing znode
	watchChild                  // ChildrenW
)

// matches tells whether an event of type typ fires a watch of kind k (as
// ZooKeeper's client library dispatches them).
func (k watchKind) matches(typ cluster.WatchEventType) bool {
	switch typ {
	case cluster.NodeCreated:
		return k == watchExist
	case cluster.NodeDataChanged:
		return k == watchExist || k == watchData
	case cluster.NodeChildrenChanged:
		return k == watchChild
	case cluster.NodeDeleted:
		return true
	}
	return false
}

func (s *Server) addWatch(h *Session, kind watchKind, p string) <-chan cluster.WatchEvent {
	s.watchSeq++
	w := &watch{seq: s.watchSeq, kind: kind, path: p, ch: make(chan cluster.WatchEvent, 1)}
	h.watches = append(h.watches, w)
	return w.ch
}

// dispatch fires the watches of the transaction just committed (or drops
// the triggers of one rolled back when err != nil).
func (s *Server) dispatch(err error) {
	fs := s.tree.fired
	s.tree.fired = nil
	if err != nil {
		return
	}
	for _, f := range fs {
		for _, id := range s.liveIDs() {
			h := s.live[id]
			kept := h.watches[:0]
			for _, w := range h.watches {
				if w.path == f.path && w.kind.matches(f.typ) {
					s.queue(h, Delivery{Session: id, Watch: &cluster.WatchEvent{Type: f.typ, Path: h.rel(f.path)}, ch: w.ch})
				} else {
					kept = append(kept, w)
				}
			}
			h.watches = kept
		}
	}
}

func (s *Server) liveIDs() []int64 {
	ids := make([]int64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// loseWatches ends every watch of h with WatchLost (its session is gone),
// including those whose event was still queued: that event is never
// delivered, the watch reports WatchLost instead.
func (s *Server) loseWatches(h *Session) {
	var lost []*watch
	kept := h.queue[:0]
	for _, d := range h.queue {
		if d.Watch != nil && d.Watch.Type != cluster.WatchLost {
			lost = append(lost, &watch{path: h.full(d.Watch.Path), ch: d.ch})
			continue
		}
		kept = append(kept, d)
	}
	h.queue = kept
	lost = append(lost, h.watches...)
	for _, w := range lost {
		s.queue(h, Delivery{Session: h.id, Watch: &cluster.WatchEvent{Type: cluster.WatchLost, Path: h.rel(w.path)}, ch: w.ch})
	}
	h.watches = nil
}

// queue appends d to h's queue, asking Options.Hold.
func (s *Server) queue(h *Session, d Delivery) {
	s.seq++
	d.Seq, d.Client = s.seq, h.client
	if s.opts.Hold != nil && s.opts.Hold(d) {
		d.held = true
	}
	h.queue = append(h.queue, d)
}

// flush delivers h's queue from the front while nothing holds it back:
// held entries (unless force), watch events while disconnected, a full
// Events channel.
func (s *Server) flush(h *Session) { s.deliver(h, 0, false) }

func (s *Server) flushAll() {
	for _, h := range s.handles {
		s.flush(h)
	}
}

// deliver delivers h's queue up to seq (0: while not held; force: held
// ones too); it returns how many went out.
func (s *Server) deliver(h *Session, upTo uint64, force bool) int {
	n := 0
	for len(h.queue) > 0 {
		d := h.queue[0]
		if upTo != 0 && d.Seq > upTo {
			break
		}
		if d.held && !force {
			break
		}
		if d.Watch != nil {
			if h.state != stateConnected && d.Watch.Type != cluster.WatchLost {
				break
			}
			d.ch <- *d.Watch // cap 1, one event per watch: never blocks
			close(d.ch)
		} else {
			if h.state == stateClosed {
				h.queue = h.queue[:0]
				break
			}
			select {
			case h.events <- *d.Event:
			default:
				return n // full: try again later
			}
		}
		h.queue = h.queue[1:]
		n++
	}
	return n
}

// Pending lists the queued, undelivered events of every handle in queueing
// order.
func (s *Server) Pending() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ds []Delivery
	for _, h := range s.handles {
		ds = append(ds, h.queue...)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Seq < ds[j].Seq })
	for i := range ds {
		ds[i].ch = nil
	}
	return ds
}

// Deliver delivers the queued event seq and, to keep each handle's order,
// every event queued before it for the same handle; it returns how many
// went out (fewer when a watch event waits for a reconnect or Events is
// full).
func (s *Server) Deliver(seq uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.handles {
		for _, d := range h.queue {
			if d.Seq == seq {
				return s.deliver(h, seq, true)
			}
		}
	}
	return 0
}

// DeliverAll delivers everything that can go out now.
func (s *Server) DeliverAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.handles {
		n += s.deliver(h, 0, true)
	}
	return n
}
