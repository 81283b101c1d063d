// Package faultproxy is a TCP proxy for fault tests: it forwards connections
// from a loopback port to a target address and can cut them the way a network
// partition does.
//
// Block makes the proxy a black hole: bytes already accepted are held, new
// bytes in either direction are not forwarded, and new connections are
// accepted but not connected onward, so peers see silence (timeouts), not a
// reset — what a partition looks like to TCP. Unblock resumes forwarding on
// the connections that survived. Reset closes every connection at once (a
// crash of the far side, as seen from the near one). Refuse is a host that is
// down: every connection is closed and new ones are closed at once, until
// Unblock. Close stops the proxy.
//
// A proxy made with NewSourced labels each accepted connection with where it
// came from (source.go: PeerPID tells which local process dialled a loopback
// connection), and BlockSource black-holes only the connections of one label:
// one proxy in front of a server then cuts the link from one client process
// while the others go on, as a partition between two hosts does.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP connections from Addr to a target.
type Proxy struct {
	ln net.Listener

	// source labels an accepted connection (NewSourced); nil: every label
	// is "".
	source func(net.Conn) string

	mu         sync.Mutex
	target     string
	blocked    bool
	refuse     bool            // close new connections at once (Refuse)
	srcBlocked map[string]bool // labels black-holed (BlockSource)
	wake       chan struct{}   // closed (and replaced) when anything unblocks
	conns      map[net.Conn]struct{}
	closed     bool
	wg         sync.WaitGroup
}

// New starts a proxy on 127.0.0.1 (an ephemeral port) forwarding to target.
func New(target string) (*Proxy, error) {
	return NewSourced(target, nil)
}

// NewSourced is New with each accepted connection labelled source(c) before
// anything is forwarded (source may be nil: every label is ""), for
// BlockSource.
func NewSourced(target string, source func(net.Conn) string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, source: source, srcBlocked: map[string]bool{},
		wake: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget sends the connections accepted from now on to target (a server
// that came back on another port); open connections keep theirs.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Block stops forwarding in both directions on every connection, old and new.
func (p *Proxy) Block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
}

// BlockSource stops forwarding, in both directions, on every connection
// labelled label, old and new (a new one is accepted but not connected
// onward); other connections go on.
func (p *Proxy) BlockSource(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srcBlocked[label] = true
}

// UnblockSource resumes forwarding for label (unless the whole proxy is
// blocked).
func (p *Proxy) UnblockSource(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srcBlocked[label] {
		delete(p.srcBlocked, label)
		p.wakeLocked()
	}
}

// wakeLocked lets every waiting gate look again (mu held).
func (p *Proxy) wakeLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// Refuse closes every connection and, until Unblock, every new one at once.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for c := range p.conns {
		c.Close()
	}
}

// Unblock resumes forwarding (after Block or Refuse).
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = false
	if p.blocked {
		p.blocked = false
		p.wakeLocked()
	}
}

// Blocked reports whether the proxy is blocking.
func (p *Proxy) Blocked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked
}

// Reset closes every open connection (both sides); the proxy keeps accepting.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.wake) // every gate sees closed
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// gate waits while the proxy blocks label's connections; false when the
// proxy closed.
func (p *Proxy) gate(label string) bool {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		if !p.blocked && !p.srcBlocked[label] {
			p.mu.Unlock()
			return true
		}
		ch := p.wake
		p.mu.Unlock()
		<-ch
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.refuse {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			if p.isClosed() {
				return
			}
			continue // refused
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve connects c onward once the proxy lets it, then pumps both ways.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	label := ""
	if p.source != nil {
		label = p.source(c)
	}
	if !p.gate(label) {
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	t, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	if !p.track(t) {
		return
	}
	defer p.untrack(t)
	done := make(chan struct{}, 2)
	go func() { p.pump(t, c, label); done <- struct{}{} }()
	go func() { p.pump(c, t, label); done <- struct{}{} }()
	<-done
	<-done
}

// pump copies src to dst chunk by chunk, holding each chunk while blocked.
func (p *Proxy) pump(dst, src net.Conn, label string) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate(label) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite() // half-close: the other direction goes on
				return
			}
			dst.Close()
			src.Close()
			return
		}
	}
}
