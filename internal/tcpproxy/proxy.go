// Package tcpproxy is a TCP forwarder on loopback for fault tests: it sits
// between a client and a server (ZooKeeper, a broker) and can cut every
// connection and refuse new ones on demand (a network partition), then heal.
package tcpproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Proxy forwards connections from its own loopback address to Target.
type Proxy struct {
	Target string
	ln     net.Listener

	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Start listens on 127.0.0.1 at a free port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Block cuts every open connection and closes new ones at once, until
// Unblock.
func (p *Proxy) Block() {
	p.mu.Lock()
	p.blocked = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Unblock forwards new connections again.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

// Close stops the proxy and cuts its connections.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		if p.blocked || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.track(c)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c; p.mu held.
func (p *Proxy) track(c net.Conn) { p.conns[c] = struct{}{} }

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	s, err := net.Dial("tcp", p.Target)
	if err != nil {
		p.untrack(c)
		return
	}
	p.mu.Lock()
	if p.blocked || p.closed {
		p.mu.Unlock()
		s.Close()
		p.untrack(c)
		return
	}
	p.track(s)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	p.untrack(c, s) // closing both ends stops the other copy
	<-done
}
