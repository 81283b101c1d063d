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

func TestForwardBlockUnblock(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "one", 10*time.Second); err != nil || got != "one\n" {
		t.Fatalf("forwarding: %q %v", got, err)
	}
	p.Block()
	// A partition is silence: the round trip times out, the connection stays.
	if got, err := roundTrip(c, r, "two", 200*time.Millisecond); err == nil {
		t.Fatalf("blocked proxy forwarded %q", got)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("blocked proxy: want a timeout, got %v", err)
	}
	// A new connection is accepted but goes nowhere.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	if _, err := roundTrip(c2, r2, "x", 200*time.Millisecond); err == nil {
		t.Fatal("new connection forwarded while blocked")
	}
	p.Unblock()
	// The held bytes arrive after the partition heals.
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after unblock: %q %v", got, err)
	}
	_ = c2.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := r2.ReadString('\n'); err != nil || got != "x\n" {
		t.Fatalf("held connection after unblock: %q %v", got, err)
	}
}

func TestReset(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundTrip(c, r, "one", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	if _, err := roundTrip(c, r, "two", 10*time.Second); err == nil {
		t.Fatal("connection survived Reset")
	}
	// New connections work after a reset.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := roundTrip(c2, bufio.NewReader(c2), "three", 10*time.Second); err != nil || got != "three\n" {
		t.Fatalf("after reset: %q %v", got, err)
	}
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
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "a", 10*time.Second); err != nil || got != "a\n" {
		t.Fatalf("before: %q %v", got, err)
	}
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
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, bufio.NewReader(c3), "c", 10*time.Second); err != nil || got != "c\n" {
		t.Fatalf("after Unblock: %q %v", got, err)
	}
}

// TestSetTarget: connections accepted after SetTarget go to the new
// target; an open one keeps its own.
func TestSetTarget(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "old", 10*time.Second); err != nil || got != "old\n" {
		t.Fatalf("%q %v", got, err)
	}
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
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := roundTrip(c2, bufio.NewReader(c2), "x", 10*time.Second); err != nil || got != "new:x\n" {
		t.Fatalf("a connection after SetTarget: %q %v", got, err)
	}
	if got, err := roundTrip(c, r, "still", 10*time.Second); err != nil || got != "still\n" {
		t.Fatalf("the open connection after SetTarget: %q %v", got, err)
	}
}
