package replica

import (
	"testing"
)

// TestRunnerStaleConnection: a follower's fetcher to a broker it no longer
// fetches from keeps its idle connection (until replica.socket.timeout.ms
// retires it). When that broker's process goes away meanwhile (its
// connections closed), comes back at the same address and leads again,
// the first fetch goes out on the dead connection: that is no sign of a
// leader down, so the fetcher dials again at once instead of backing off
// replica.fetch.backoff.ms. (The rolling-restart fault test saw acks=all
// stall a whole back-off, 1 s by default, after a broker's controlled
// shutdown and restart: the ISR member fetching from the new leader was
// waiting out the back-off.) The back-off here would outlast the test.
func TestRunnerStaleConnection(t *testing.T) {
	c := newCluster(t, clusterOptions{
		cfg:    func(cfg *Config) { cfg.ReplicaFetchBackoffMs = 10 * 60 * 1000 },
		runner: func(_ int32, o *RunnerOptions) { o.SocketTimeoutMs = 10 * 60 * 1000 },
	}, 1, 2, 3)
	all := []int32{1, 2, 3}
	c.elect(tp0, 1, all, all...)
	l := c.nodes[1].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, l, produce(t, l, 3, "a"), 30000); s != AckCommitted {
		t.Fatalf("acks=-1 under broker 1: %v", s)
	}
	// Broker 2 leads: the fetchers to broker 1 go idle, connected.
	c.elect(tp0, 2, all, all...)
	l2 := c.nodes[2].m.Partition(tp0.Topic, tp0.Partition)
	if s := await(t, l2, produce(t, l2, 3, "b"), 30000); s != AckCommitted {
		t.Fatalf("acks=-1 under broker 2: %v", s)
	}
	// Broker 1's process goes away and comes back at the same address.
	old := c.nodes[1].srv
	old.Close()
	c.nodes[1].srv = startServer(t, old.addr, c.nodes[1].m, nil)
	// Broker 1 leads again: the followers' first fetches to it go out on
	// their dead connections.
	c.elect(tp0, 1, all, all...)
	if s := await(t, l, produce(t, l, 3, "c"), 30000); s != AckCommitted {
		t.Fatalf("acks=-1 under broker 1 again: %v (a follower backing off after a fetch on its dead connection)", s)
	}
	c.sameLogs(t, tp0, 1, 2, 3)
}
