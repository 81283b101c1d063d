package sim

import "errors"

// ErrTimeout is what a caller learns when its request or the response was
// lost: it waited Network.TimeoutMs.
var ErrTimeout = errors.New("sim: request timed out")

// Node is whatever the network delivers to: up or not, and which
// incarnation (a restart is a new one, whose connections are new).
type Node interface {
	Alive() (up bool, incarnation int)
}

// Network carries messages between nodes, numbered 0 (the controller) to n.
type Network struct {
	w     *World
	nodes []Node

	// MinDelayMs and MaxDelayMs bound a message's delay.
	MinDelayMs, MaxDelayMs int64
	// DropRate is the chance a message on a lossy call is lost.
	DropRate float64
	// TimeoutMs is how long a caller waits for a response.
	TimeoutMs int64

	cut  [][]bool  // cut[a][b]: messages from a to b are lost
	last [][]int64 // the last arrival time scheduled on each link: TCP order
}

// NewNetwork connects nodes (index = node id).
func NewNetwork(w *World, nodes []Node) *Network {
	n := &Network{w: w, nodes: nodes, MinDelayMs: 1, MaxDelayMs: 20, TimeoutMs: 1000}
	n.cut = make([][]bool, len(nodes))
	n.last = make([][]int64, len(nodes))
	for i := range nodes {
		n.cut[i] = make([]bool, len(nodes))
		n.last[i] = make([]int64, len(nodes))
	}
	return n
}

// Cut makes messages between a and b (both ways) lost, or carried again.
func (n *Network) Cut(a, b int32, cut bool) {
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

// Send delivers one message from from to to after a random delay, in order
// with the link's earlier messages, unless the link is cut, the message is
// dropped (lossy only), or to has restarted or is down when it arrives.
// It reports whether the message is on its way.
func (n *Network) Send(from, to int32, lossy bool, deliver func()) bool {
	if n.cut[from][to] || lossy && n.w.Chance(n.DropRate) {
		return false
	}
	up, inc := n.nodes[to].Alive()
	if !up {
		return false
	}
	at := max(n.w.Now+n.w.Between(n.MinDelayMs, n.MaxDelayMs), n.last[from][to])
	n.last[from][to] = at
	n.w.At(at, func() {
		if up, now := n.nodes[to].Alive(); up && now == inc {
			deliver()
		}
	})
	return true
}

// Call sends a request and routes the response back: serve runs at to and
// answers through reply (at once or later: a long poll); done runs at from
// exactly once, with the response, or with ErrTimeout after TimeoutMs when
// the request or the response was lost. Nothing runs at from if it has
// restarted meanwhile.
func (n *Network) Call(from, to int32, lossy bool, serve func(reply func(resp any)), done func(resp any, err error)) {
	_, inc := n.nodes[from].Alive()
	finished := false
	finish := func(resp any, err error) {
		if finished {
			return
		}
		if up, now := n.nodes[from].Alive(); !up || now != inc {
			finished = true
			return
		}
		finished = true
		done(resp, err)
	}
	n.Send(from, to, lossy, func() {
		serve(func(resp any) {
			n.Send(to, from, lossy, func() { finish(resp, nil) })
		})
	})
	n.w.After(n.TimeoutMs, func() { finish(nil, ErrTimeout) })
}
