package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// logBuffer is a slog destination the test reads while brokers write.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClusterStaleControllerIgnored: after a controller failover (the
// controller broker stops; another is elected with a higher
// /controller_epoch), control requests carrying the deposed controller's
// epoch reach a surviving broker: a LeaderAndIsr making it leader at a
// higher leader epoch, a StopReplica deleting the partition and an
// UpdateMetadata listing no broker. Each is answered
// STALE_CONTROLLER_EPOCH and logged, and changes nothing: the partition
// keeps its leader, leader epoch and log, the metadata cache its brokers.
func TestClusterStaleControllerIgnored(t *testing.T) {
	_, connect := testZK(t)
	var logs [3]logBuffer
	var bs []*Server
	for i := range 3 {
		id := int32(i + 1)
		opts := &Options{Logger: slog.New(slog.NewTextHandler(&logs[i], nil))}
		s, err := tryClusterBrokerWith(connect, id, t.TempDir(), opts, "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		bs = append(bs, s)
	}
	defer func() {
		if t.Failed() {
			for i := range logs {
				t.Logf("broker %d:\n%s", i+1, logs[i].String())
			}
		}
	}()
	var addrs []string
	for _, s := range bs {
		addrs = append(addrs, s.Addr().String())
	}
	waitFor(t, 60*time.Second, "every broker live and a controller", func() bool {
		md := metadataOf(t, addrs, "")
		return len(md.Brokers) == 3 && md.ControllerID >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := kadm.NewClient(clusterClient(t, addrs)).CreateTopic(ctx, 1, 3, nil, "fenced"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	z := testZKConn(t, connect)
	epoch := func() int32 {
		data, _, err := z.Get(cluster.ControllerEpochPath)
		if err != nil {
			t.Fatal(err)
		}
		e, err := cluster.DecodeControllerEpoch(data)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var old *Server
	waitFor(t, 30*time.Second, "the controller", func() bool {
		for _, s := range bs {
			if s.cl.mem.IsController() {
				old = s
			}
		}
		return old != nil
	})
	oldEpoch := epoch()
	old.Close()
	var target *Server
	for _, s := range bs {
		if s != old {
			target = s
		}
	}
	// The new controller's requests have reached the target: it knows the
	// new epoch, leads or follows fenced-0 under the new controller, and its
	// metadata cache holds the new controller's UpdateMetadata (the two live
	// brokers). The controller epoch alone is not enough: the new
	// controller's LeaderAndIsr raises it before the UpdateMetadata sent
	// after it lands (and UpdateMetadata raises it before its cache swap),
	// so the cache may still list the old controller's three brokers then.
	var newEpoch int32
	waitFor(t, 60*time.Second, "a new controller known to the survivors", func() bool {
		newEpoch = epoch()
		if newEpoch <= oldEpoch || target.cl.ctrlEpoch.Load() != newEpoch {
			return false
		}
		if im := target.cl.images.load(); im.controllerEpoch != newEpoch || len(im.brokers) != 2 {
			return false
		}
		p := target.cl.rm.Partition("fenced", 0)
		return p != nil && p.Leader() != old.NodeID() && p.Leader() >= 1
	})
	p := target.cl.rm.Partition("fenced", 0)
	leader, leaderEpoch, dir := p.Leader(), p.LeaderEpoch(), p.Log().Dir()
	id := target.cl.images.load().topics["fenced"].id
	c := client(t, target)
	brokerEpoch := target.cl.mem.BrokerEpoch()

	lai := kmsg.NewPtrLeaderAndISRRequest()
	lai.Version, lai.ControllerID, lai.ControllerEpoch, lai.BrokerEpoch = 5, old.NodeID(), oldEpoch, brokerEpoch
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "fenced", id
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = oldEpoch, target.NodeID(), leaderEpoch+5
	ps.ISR, ps.Replicas, ps.ZKVersion = []int32{target.NodeID()}, []int32{1, 2, 3}, 100
	ts.PartitionStates = append(ts.PartitionStates, ps)
	lai.TopicStates = append(lai.TopicStates, ts)
	if resp := call[*kmsg.LeaderAndISRResponse](t, c, lai); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("LeaderAndIsr from controller epoch %d (now %d): error %d, want STALE_CONTROLLER_EPOCH", oldEpoch, newEpoch, resp.ErrorCode)
	}

	stop := kmsg.NewPtrStopReplicaRequest()
	stop.Version, stop.ControllerID, stop.ControllerEpoch, stop.BrokerEpoch = 3, old.NodeID(), oldEpoch, brokerEpoch
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = "fenced"
	sp := kmsg.NewStopReplicaRequestTopicPartitionState()
	sp.Partition, sp.LeaderEpoch, sp.Delete = 0, -2, true
	st.PartitionStates = append(st.PartitionStates, sp)
	stop.Topics = append(stop.Topics, st)
	if resp := call[*kmsg.StopReplicaResponse](t, c, stop); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("StopReplica from controller epoch %d (now %d): error %d, want STALE_CONTROLLER_EPOCH", oldEpoch, newEpoch, resp.ErrorCode)
	}

	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 7, old.NodeID(), oldEpoch, brokerEpoch
	if resp := call[*kmsg.UpdateMetadataResponse](t, c, um); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("UpdateMetadata from controller epoch %d (now %d): error %d, want STALE_CONTROLLER_EPOCH", oldEpoch, newEpoch, resp.ErrorCode)
	}

	if q := target.cl.rm.Partition("fenced", 0); q == nil || q.Leader() != leader || q.LeaderEpoch() != leaderEpoch {
		t.Fatalf("the stale requests changed fenced-0: %v (leader %d epoch %d before)", q, leader, leaderEpoch)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the stale StopReplica removed the log: %v", err)
	}
	if n := len(target.cl.images.load().brokers); n != 2 {
		t.Fatalf("the stale UpdateMetadata changed the metadata cache: %d brokers, want 2", n)
	}
	if target.cl.ctrlEpoch.Load() != newEpoch {
		t.Fatalf("controller epoch seen %d, want %d", target.cl.ctrlEpoch.Load(), newEpoch)
	}
	i := int(target.NodeID()) - 1
	for _, api := range []string{"LeaderAndIsr", "StopReplica", "UpdateMetadata"} {
		want := fmt.Sprintf("ignoring a request from a stale controller\" api=%s controller=%d controller_epoch=%d latest=%d",
			api, old.NodeID(), oldEpoch, newEpoch)
		if !strings.Contains(logs[i].String(), want) {
			t.Errorf("broker %d did not log %s", target.NodeID(), want)
		}
	}
}
