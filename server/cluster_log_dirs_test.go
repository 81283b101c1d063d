package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// AlterReplicaLogDirs in cluster mode (real ZooKeeper, two in-process
// brokers with two log dirs each): the leader's and the follower's replica
// of a partition of replication factor 2 each move to their broker's other
// log dir while franz-go produces with acks=all; every acknowledged record
// reads back after the swaps, the ISR is whole again, the leader-epoch
// checkpoint and partition.metadata moved along, and the old dirs hold
// nothing of the partition.
func TestClusterAlterReplicaLogDirs(t *testing.T) {
	_, connect := testZK(t)
	c := &inprocCluster{t: t, connect: connect}
	dirs := map[int32][2]string{}
	for id := int32(1); id <= 2; id++ {
		base := t.TempDir()
		d := [2]string{filepath.Join(base, "a"), filepath.Join(base, "b")}
		dirs[id] = d
		c.brokers = append(c.brokers, startClusterBroker(t, connect, id, d[0]+","+d[1],
			"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=1",
			"file.delete.delay.ms=0", "replica.alter.log.dirs.io.max.bytes.per.second=300000", "log.segment.bytes=65536"))
	}
	waitFor(t, 60*time.Second, "both brokers live and a controller", func() bool {
		md := metadataOf(t, c.addrs(), "")
		return len(md.Brokers) == 2 && md.ControllerID >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 1, 2, nil, "moving"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("moving", 1, 2)
	// The copy rate is a dynamic broker config too (strata reassign
	// --replica-alter-log-dirs-throttle); deleting it restores the static one.
	for _, v := range []*string{kmsg2("1234"), nil} {
		op, want := kadm.SetConfig, int64(1234)
		if v == nil {
			op, want = kadm.DeleteConfig, 300000
		}
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: alterLogDirsRate, Value: v}}, 2)
		if err != nil || resps[0].Err != nil {
			t.Fatalf("AlterBrokerConfigs %s: %v %v", alterLogDirsRate, err, resps)
		}
		waitFor(t, 30*time.Second, "the dynamic copy rate applied", func() bool { return c.broker(2).topics.moves.rate.Load() == want })
	}
	src, dst := map[int32]string{}, map[int32]string{}
	for id := int32(1); id <= 2; id++ {
		cur := filepath.Dir(c.broker(id).cl.rm.Partition("moving", 0).Log().Dir())
		src[id], dst[id] = cur, dirs[id][0]
		if cur == dirs[id][0] {
			dst[id] = dirs[id][1]
		}
	}
	ap := startAckProducer(t, c.broker(1), "moving")
	waitFor(t, 60*time.Second, "records before the move", func() bool { return ap.count() >= 1500 })
	for id := int32(1); id <= 2; id++ {
		if code := alterLogDir(t, c.broker(id), "moving", 0, dst[id]); code != 0 {
			t.Fatalf("AlterReplicaLogDirs on broker %d: code %d", id, code)
		}
	}
	waitFor(t, 60*time.Second, "the future replicas", func() bool {
		return len(c.broker(1).LogDirMoves()) == 1 || len(c.broker(2).LogDirMoves()) == 1
	})
	waitFor(t, 60*time.Second, "both swaps", func() bool {
		for id := int32(1); id <= 2; id++ {
			b := c.broker(id)
			if len(b.LogDirMoves()) != 0 || b.cl.rm.Partition("moving", 0).Log().Dir() != filepath.Join(dst[id], "moving-0") {
				return false
			}
		}
		return true
	})
	after := ap.count()
	waitFor(t, 60*time.Second, "records after the swaps", func() bool { return ap.count() >= after+200 })
	ap.halt()
	c.waitLed("moving", 1, 2)
	checkAllAcked(t, c.broker(1), "moving", ap.acked)
	for id := int32(1); id <= 2; id++ {
		waitFor(t, 30*time.Second, "the old dir emptied of the partition", func() bool { return len(partitionDirsIn(t, src[id], "moving", 0)) == 0 })
		if got := partitionDirsIn(t, dst[id], "moving", 0); len(got) != 1 || got[0] != "moving-0" {
			t.Fatalf("broker %d's target dir holds %v", id, got)
		}
		for _, f := range []string{"leader-epoch-checkpoint", PartitionMetadataFile} {
			if b, err := os.ReadFile(filepath.Join(dst[id], "moving-0", f)); err != nil || len(b) == 0 {
				t.Fatalf("broker %d: %s did not move with the replica: %v", id, f, err)
			}
		}
	}
}
