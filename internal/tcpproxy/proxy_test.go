package tcpproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves line echo on loopback.
func echo(t *testing.T) string {
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

func TestBlockUnblock(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "a"); err != nil || got != "a\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}
	p.Block()
	if _, err := roundTrip(c, "b"); err == nil {
		t.Fatal("an open connection survived Block")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		if _, err := roundTrip(c2, "c"); err == nil {
			t.Fatal("a new connection got through while blocked")
		}
		c2.Close()
	}
	p.Unblock()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, "d"); err != nil || got != "d\n" {
		t.Fatalf("after Unblock: %q %v", got, err)
	}
}
