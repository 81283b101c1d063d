package faultproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, msg string, wait time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

// startProxy is a proxy in front of a new echo server, closed when the test
// ends.
func startProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dialLines connects to addr, closed when the test ends, with a reader of
// its lines.
func dialLines(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// wantEcho sends msg and wants want back within 10s.
func wantEcho(t *testing.T, c net.Conn, r *bufio.Reader, msg, want, what string) {
	t.Helper()
	if got, err := roundTrip(c, r, msg, 10*time.Second); err != nil || got != want {
		t.Fatalf("%s: %q %v", what, got, err)
	}
}

// wantSilence sends msg and wants no answer: a read timeout (200ms), the
// connection left open.
func wantSilence(t *testing.T, c net.Conn, r *bufio.Reader, msg, what string) {
	t.Helper()
	if got, err := roundTrip(c, r, msg, 200*time.Millisecond); err == nil {
		t.Fatalf("%s: forwarded %q", what, got)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("%s: want a timeout, got %v", what, err)
	}
}

// wantLine wants the next line read from c within 10s to be want.
func wantLine(t *testing.T, c net.Conn, r *bufio.Reader, want, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != want {
		t.Fatalf("%s: %q %v", what, got, err)
	}
}

func TestForwardBlockUnblock(t *testing.T) {
	p := startProxy(t)
	c, r := dialLines(t, p.Addr())
	wantEcho(t, c, r, "one", "one\n", "forwarding")
	p.Block()
	// A partition is silence: the round trip times out, the connection stays.
	wantSilence(t, c, r, "two", "blocked proxy")
	// A new connection is accepted but goes nowhere.
	c2, r2 := dialLines(t, p.Addr())
	if _, err := roundTrip(c2, r2, "x", 200*time.Millisecond); err == nil {
		t.Fatal("new connection forwarded while blocked")
	}
	p.Unblock()
	// The held bytes arrive after the partition heals.
	wantLine(t, c, r, "two\n", "after unblock")
	wantLine(t, c2, r2, "x\n", "held connection after unblock")
}

func TestReset(t *testing.T) {
	p := startProxy(t)
	c, r := dialLines(t, p.Addr())
	wantEcho(t, c, r, "one", "one\n", "before Reset")
	p.Reset()
	if _, err := roundTrip(c, r, "two", 10*time.Second); err == nil {
		t.Fatal("connection survived Reset")
	}
	// New connections work after a reset.
	c2, r2 := dialLines(t, p.Addr())
	wantEcho(t, c2, r2, "three", "three\n", "after reset")
}

func TestCloseWhileBlocked(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Block()
	_, _ = c.Write([]byte("held\n"))
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a blocked proxy")
	}
}

// TestRefuse: open connections are closed, new ones are closed at once,
// and Unblock lets connections through again.
func TestRefuse(t *testing.T) {
	p := startProxy(t)
	c, r := dialLines(t, p.Addr())
	wantEcho(t, c, r, "a", "a\n", "before")
	p.Refuse()
	if _, err := roundTrip(c, r, "b", 10*time.Second); err == nil {
		t.Fatal("an open connection survived Refuse")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c2.Read(make([]byte, 1)); err == nil {
			t.Fatal("a new connection was not closed while refusing")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a new connection was held, not closed, while refusing")
		}
		c2.Close()
	}
	p.Unblock()
	c3, r3 := dialLines(t, p.Addr())
	wantEcho(t, c3, r3, "c", "c\n", "after Unblock")
}

// TestSetTarget: connections accepted after SetTarget go to the new
// target; an open one keeps its own.
func TestSetTarget(t *testing.T) {
	p := startProxy(t)
	c, r := dialLines(t, p.Addr())
	wantEcho(t, c, r, "old", "old\n", "before SetTarget")
	// The new target answers with a prefix, so its answers tell.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		line, _ := bufio.NewReader(s).ReadString('\n')
		_, _ = s.Write([]byte("new:" + line))
	}()
	p.SetTarget(ln.Addr().String())
	c2, r2 := dialLines(t, p.Addr())
	wantEcho(t, c2, r2, "x", "new:x\n", "a connection after SetTarget")
	wantEcho(t, c, r, "still", "still\n", "the open connection after SetTarget")
}
