package sim

import "errors"

// ErrTimeout is what a caller learns when its request or the response was
// lost: it waited its timeout.
var ErrTimeout = errors.New("sim: request timed out")

// ClientNode is the network id of the clients (producer, consumer, admin);
// brokers are 1..n.
const ClientNode = 0

// Node is whatever the network delivers to: up or not, and which
// incarnation (a restart is a new one, whose connections are new).
type Node interface {
	Alive() (up bool, incarnation int)
}

// ConnKind tells the connections between two nodes apart: each is its own
// TCP connection, ordered within, reordered against the others.
type ConnKind uint8

// Connection kinds.
const (
	ConnControl ConnKind = iota + 1 // controller -> broker (LeaderAndIsr, UpdateMetadata, StopReplica)
	ConnAlter                       // broker -> controller (AlterPartition)
	ConnFetch                       // replica fetcher -> leader
	ConnList                        // follower -> leader (ListOffsets)
	ConnClient                      // client -> broker
)

// Conn names one direction of one connection. Gen tells apart successive
// connections of the same kind (a controller's channel is new at every
// activation).
type Conn struct {
	From, To int32
	Kind     ConnKind
	Gen      uint64
}

func (c Conn) reverse() Conn { return Conn{From: c.To, To: c.From, Kind: c.Kind, Gen: c.Gen} }

// Network carries messages between nodes 0 (the clients) to n (brokers).
type Network struct {
	w     *World
	nodes []Node

	// MinDelayMs and MaxDelayMs bound a message's delay.
	MinDelayMs, MaxDelayMs int64
	// DropRate is the chance a message on a lossy call is lost (its
	// connection broke).
	DropRate float64
	// TimeoutMs is how long a caller waits for a response by default.
	TimeoutMs int64

	cut  [][]bool       // cut[a][b]: messages from a to b are lost
	last map[Conn]int64 // the last arrival time scheduled on each connection: TCP order
}

// NewNetwork connects nodes (index = node id).
func NewNetwork(w *World, nodes []Node) *Network {
	n := &Network{w: w, nodes: nodes, MinDelayMs: 1, MaxDelayMs: 20, TimeoutMs: 1000, last: map[Conn]int64{}}
	n.cut = make([][]bool, len(nodes))
	for i := range nodes {
		n.cut[i] = make([]bool, len(nodes))
	}
	return n
}

// Cut makes messages between a and b (both ways) lost, or carried again.
func (n *Network) Cut(a, b int32, cut bool) {
	if a == b {
		return
	}
	n.cut[a][b], n.cut[b][a] = cut, cut
}

// IsCut reports whether a and b are cut off from each other.
func (n *Network) IsCut(a, b int32) bool { return n.cut[a][b] }

// HealAll carries every link again.
func (n *Network) HealAll() {
	for a := range n.cut {
		for b := range n.cut[a] {
			n.cut[a][b] = false
		}
	}
}

// Send delivers one message on connection c after a random delay, in order
// with the connection's earlier messages, unless the link is cut, the
// message is dropped (lossy only), or the receiver has restarted or is down
// when it arrives. It reports whether the message is on its way.
func (n *Network) Send(c Conn, lossy bool, deliver func()) bool {
	if n.cut[c.From][c.To] || lossy && c.From != c.To && n.w.Chance(n.DropRate) {
		return false
	}
	if up, _ := n.nodes[c.From].Alive(); !up && c.From != c.To {
		return false // the sender is gone (or stops: a power loss in this event)
	}
	up, inc := n.nodes[c.To].Alive()
	if !up {
		return false
	}
	at := max(n.w.Now+n.w.Between(n.MinDelayMs, n.MaxDelayMs), n.last[c])
	n.last[c] = at
	n.w.At(at, func() {
		if up, now := n.nodes[c.To].Alive(); up && now == inc {
			deliver()
		}
	})
	return true
}

// Call sends a request on c and routes the response back on the same
// connection: serve runs at the receiver and answers through reply (at once
// or later: a long poll); done runs at the sender exactly once, with the
// response, or with ErrTimeout after timeoutMs (0: TimeoutMs) when the
// request or the response was lost. Nothing runs at the sender if it has
// restarted meanwhile.
func (n *Network) Call(c Conn, lossy bool, timeoutMs int64, serve func(reply func(resp any)), done func(resp any, err error)) {
	if timeoutMs <= 0 {
		timeoutMs = n.TimeoutMs
	}
	_, inc := n.nodes[c.From].Alive()
	finished := false
	finish := func(resp any, err error) {
		if finished {
			return
		}
		finished = true
		if up, now := n.nodes[c.From].Alive(); !up || now != inc {
			return
		}
		done(resp, err)
	}
	n.Send(c, lossy, func() {
		serve(func(resp any) {
			n.Send(c.reverse(), lossy, func() { finish(resp, nil) })
		})
	})
	n.w.After(timeoutMs, func() { finish(nil, ErrTimeout) })
}
