package faultproxy

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestBlockSource: connections labelled "cut" are black-holed, old and new,
// while connections with another label go on through the same proxy; after
// UnblockSource the held bytes arrive.
func TestBlockSource(t *testing.T) {
	var n atomic.Int64
	// The first connection is "cut", the second "kept", the third "cut".
	p, err := NewSourced(echoServer(t), func(net.Conn) string {
		if n.Add(1)%2 == 0 {
			return "kept"
		}
		return "cut"
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() (net.Conn, *bufio.Reader) {
		c, r := dialLines(t, p.Addr())
		// A round trip makes sure the proxy labelled it before the next dial.
		wantEcho(t, c, r, "hello", "hello\n", "forwarding")
		return c, r
	}
	cut, cutR := dial()
	kept, keptR := dial()
	p.BlockSource("cut")
	wantSilence(t, cut, cutR, "one", "blocked source")
	wantEcho(t, kept, keptR, "two", "two\n", "another source while one is blocked")
	// A new connection of the blocked label is accepted but goes nowhere.
	c3, r3 := dialLines(t, p.Addr())
	if _, err := roundTrip(c3, r3, "three", 200*time.Millisecond); err == nil {
		t.Fatal("a new connection of a blocked source was forwarded")
	}
	// Block and Unblock of the whole proxy do not lift the source's block.
	p.Block()
	p.Unblock()
	wantEcho(t, kept, keptR, "four", "four\n", "after Block/Unblock")
	_ = cut.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if got, err := cutR.ReadString('\n'); err == nil {
		t.Fatalf("Unblock lifted a source block: %q", got)
	}
	p.UnblockSource("cut")
	wantLine(t, cut, cutR, "one\n", "held bytes after UnblockSource")
	wantLine(t, c3, r3, "three\n", "held connection after UnblockSource")
}

// TestHelperDialer is not a test: with FAULTPROXY_DIAL set it dials that
// address, writes one line and waits for stdin to close (a child process
// for TestPeerPID).
func TestHelperDialer(t *testing.T) {
	addr := os.Getenv("FAULTPROXY_DIAL")
	if addr == "" {
		t.Skip("helper process only")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	_, _ = c.Write([]byte("child\n"))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// TestPeerPID: the proxy's source function names the process that dialled
// it: this one for a connection of its own, the child's pid for the
// child's.
func TestPeerPID(t *testing.T) {
	pids := make(chan int, 2)
	p, err := NewSourced(echoServer(t), func(c net.Conn) string {
		pid, err := PeerPID(c)
		if err != nil {
			t.Errorf("PeerPID: %v", err)
		}
		pids <- pid
		return strconv.Itoa(pid)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dialLines(t, p.Addr())
	wantEcho(t, c, r, "self", "self\n", "own connection")
	if pid := <-pids; pid != os.Getpid() {
		t.Fatalf("own connection: PeerPID %d, want %d", pid, os.Getpid())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDialer$")
	cmd.Env = append(os.Environ(), "FAULTPROXY_DIAL="+p.Addr())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	select {
	case pid := <-pids:
		if pid != cmd.Process.Pid {
			t.Fatalf("child's connection: PeerPID %d, want the child's %d", pid, cmd.Process.Pid)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the child's connection never reached the proxy")
	}
}

// TestPeerPIDGone: a connection whose peer closed before the lookup is
// ErrNoPeer, not a wrong process.
func TestPeerPIDGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Close()
	if pid, err := PeerPID(s); !errors.Is(err, ErrNoPeer) {
		t.Fatalf("PeerPID after the peer closed: %d %v, want ErrNoPeer", pid, err)
	}
}
