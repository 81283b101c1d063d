package cluster_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zkconformance"
	"github.com/stratalog/strata/internal/faultproxy"
	"github.com/stratalog/strata/internal/zktest"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// realBackend opens every session through a proxy of its own, so a check
// can cut one session's connection and refuse new ones (Disconnect, as a
// ZooKeeper that is down for it) or keep it so until the server expires the
// session (Expire).
type realBackend struct {
	srv     *zktest.Server
	mu      sync.Mutex
	proxies map[cluster.ZK]*faultproxy.Proxy
}

func (b *realBackend) open(t *testing.T, o zkconformance.OpenOptions) cluster.ZK {
	p, err := faultproxy.New(b.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	timeout := 20 * time.Second
	if o.Expiring {
		timeout = 3 * time.Second // short, but a loaded machine still pings in time
	}
	z, err := cluster.DialZK(cluster.ZKConfig{Connect: p.Addr() + o.Chroot, SessionTimeout: timeout,
		ConnectionTimeout: 30 * time.Second, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.proxies[z] = p
	b.mu.Unlock()
	return z
}

func (b *realBackend) proxy(z cluster.ZK) *faultproxy.Proxy {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proxies[z]
}

// expire keeps z's connection cut until the server has dropped the session
// (it leaves the server's session dump), then lets the client reconnect,
// learn of the expiry and make a new session.
func (b *realBackend) expire(t *testing.T, z cluster.ZK) {
	id := fmt.Sprintf("0x%x", z.SessionID())
	p := b.proxy(z)
	p.Refuse()
	deadline := time.Now().Add(30 * time.Second)
	for {
		dump, err := zktest.FourLetter(b.srv.Addr(), "dump")
		if err == nil && strings.Contains(dump, "SessionTracker dump") && !strings.Contains(dump, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s not expired within 30 s; dump:\n%s", id, dump)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Unblock()
}

// TestZKConnConformance runs the ZK conformance suite over the production
// client and a real ZooKeeper, the same suite zksim passes.
func TestZKConnConformance(t *testing.T) {
	b := &realBackend{srv: zktest.Start(t), proxies: map[cluster.ZK]*faultproxy.Proxy{}}
	zkconformance.Run(t, zkconformance.Backend{
		Open:       b.open,
		Expire:     b.expire,
		Disconnect: func(t *testing.T, z cluster.ZK) { b.proxy(z).Refuse() },
		Reconnect:  func(t *testing.T, z cluster.ZK) { b.proxy(z).Unblock() },
	})
}

// TestDialZKNoServer: nothing listens, so DialZK fails with ErrNoSession
// after zookeeper.connection.timeout.ms, naming the servers.
func TestDialZKNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = cluster.DialZK(cluster.ZKConfig{Connect: addr, ConnectionTimeout: 300 * time.Millisecond, Logger: quietLog})
	if !errorsIs(err, cluster.ErrNoSession) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err %v, want ErrNoSession naming %s", err, addr)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Fatalf("gave up after %v, before the connection timeout", time.Since(start))
	}
}
