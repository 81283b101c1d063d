package zksim_test

import (
	"testing"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zkconformance"
	"github.com/stratalog/strata/cluster/zksim"
)

// TestConformance runs the ZK conformance suite over the simulation, the
// same suite the production client passes against a real ZooKeeper.
func TestConformance(t *testing.T) {
	srv := zksim.NewServer(zksim.Options{})
	zkconformance.Run(t, zkconformance.Backend{
		Open: func(t *testing.T, o zkconformance.OpenOptions) cluster.ZK {
			h, err := srv.ConnectChroot(o.Chroot)
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
		Expire: func(t *testing.T, z cluster.ZK) {
			if !srv.ExpireSession(z.SessionID()) {
				t.Fatalf("no session 0x%x", z.SessionID())
			}
		},
		Disconnect: func(t *testing.T, z cluster.ZK) { z.(*zksim.Session).Disconnect() },
		Reconnect:  func(t *testing.T, z cluster.ZK) { z.(*zksim.Session).Reconnect() },
		Quiet:      -1, // delivery is immediate
	})
}
