package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// Broker-level power loss. A broker runs with everything it stores on a
// MemFS: the topic table (strata-topics.json), meta.properties,
// partition.metadata, the recovery-point and log-start checkpoints (written
// every few milliseconds here), the partition logs and __consumer_offsets,
// all under flush.messages=1. A session creates topics, produces, commits
// group offsets, creates another topic and produces more; the process dies
// at its k-th mutating filesystem operation (vfs.CrashAt: nothing it does
// reaches the disk after that). A power-loss state of the whole data dir
// (unsynced data and directory entries lost or torn, as MemFS models it) is
// then started as a new broker, which must come up, keep the cluster id,
// hold every acknowledged topic with its partitions, serve every
// acknowledged record at its offset (and nothing that was never produced
// there), and return every acknowledged offset commit.

// plSession is what a session was told was done.
type plSession struct {
	clusterID string
	topics    map[string]int32          // created (CreateTopics acknowledged): partitions
	acked     map[string][][]byte       // topic-partition -> value at each offset (nil: not acknowledged)
	produced  map[string]map[string]int // topic-partition -> values produced (acked or not) -> offset, -1 unknown
	commits   map[string]int64          // topic-partition -> last acknowledged committed offset
}

func plKey(topic string, p int32) string { return topic + "/" + strconv.Itoa(int(p)) }

// plRun runs the session against a broker on fsys; it stops at the first
// failure (the process has died), and returns what was acknowledged.
func plRun(t *testing.T, fsys vfs.FS, seed uint64) *plSession {
	ps := &plSession{topics: map[string]int32{}, acked: map[string][][]byte{}, produced: map[string]map[string]int{}, commits: map[string]int64{}}
	cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=/data/a,/data/b",
		"log.flush.interval.messages=1", "log.flush.offset.checkpoint.interval.ms=5", "log.segment.bytes=2048",
		"offsets.topic.num.partitions=2", "group.initial.rebalance.delay.ms=0", "strata.shutdown.timeout.ms=2000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(cfg, &Options{Logger: testLogger(), FS: fsys})
	if err != nil {
		return ps // died while starting
	}
	defer s.Close()
	ps.clusterID = s.ClusterID()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 7))
	create := func(name string, n int32) bool {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 5000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Topics[0].ErrorCode != 0 {
			return false
		}
		ps.topics[name] = n
		return true
	}
	produce := func(topic string, n int32, rounds int) bool {
		for i := 0; i < rounds; i++ {
			p := int32(rng.IntN(int(n)))
			k := plKey(topic, p)
			v := fmt.Appendf(nil, "%s-%d-%d", k, i, rng.Uint32())
			if ps.produced[k] == nil {
				ps.produced[k] = map[string]int{}
			}
			ps.produced[k][string(v)] = -1
			b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), []record.Record{{Timestamp: time.Now().UnixMilli(), Value: v}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := produceRequest(topic, p, b, 7).RequestWith(ctx, cl)
			if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				return false
			}
			off := resp.Topics[0].Partitions[0].BaseOffset
			ps.produced[k][string(v)] = int(off)
			for int64(len(ps.acked[k])) <= off {
				ps.acked[k] = append(ps.acked[k], nil)
			}
			ps.acked[k][off] = v
		}
		return true
	}
	commit := func(topic string, p int32, off int64) bool {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, "g", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return false
			}
			switch code := resp.Topics[0].Partitions[0].ErrorCode; code {
			case 0:
				ps.commits[plKey(topic, p)] = off
				return true
			case kerr.CoordinatorLoadInProgress.Code:
				time.Sleep(5 * time.Millisecond)
				continue
			default:
				return false
			}
		}
	}
	_ = create("orders", 3) && produce("orders", 3, 12) && commit("orders", 0, 2) && commit("orders", 1, 1) &&
		create("events", 2) && produce("events", 2, 6) && produce("orders", 3, 6) && commit("orders", 0, 5)
	return ps
}

// plCheck starts a broker on a power-loss state and checks it against ps.
func plCheck(fsys vfs.FS, ps *plSession) error {
	cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=/data/a,/data/b",
		"offsets.topic.num.partitions=2", "strata.shutdown.timeout.ms=2000"}, nil)
	if err != nil {
		return err
	}
	s, err := Start(cfg, &Options{Logger: testLogger(), FS: fsys})
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	defer s.Close()
	if ps.clusterID != "" && s.ClusterID() != ps.clusterID {
		return fmt.Errorf("cluster id %s after the restart, %s before", s.ClusterID(), ps.clusterID)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for topic, n := range ps.topics {
		t := s.topics.get(topic)
		if t == nil || int32(len(s.topics.parts(t))) != n {
			return fmt.Errorf("acknowledged topic %s (%d partitions) missing after the restart", topic, n)
		}
		for p := int32(0); p < n; p++ {
			k := plKey(topic, p)
			part := s.topics.partition(topic, p)
			end := part.log.HighWatermark()
			for off, v := range ps.acked[k] {
				if v != nil && int64(off) >= end {
					return fmt.Errorf("%s: acknowledged offset %d lost (log ends at %d)", k, off, end)
				}
			}
			// Everything served was produced there, at that offset.
			for off := part.log.LogStartOffset(); off < end; {
				r, err := part.log.Read(off, 1)
				if err != nil {
					return fmt.Errorf("%s: read %d: %w", k, off, err)
				}
				b, err := r.ReadInto(nil)
				r.Release()
				if err != nil {
					return fmt.Errorf("%s: read %d: %w", k, off, err)
				}
				var rr record.RecordReader
				rr.Reset(record.Batch(b), 0)
				for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
					want, found := ps.produced[k][string(rec.Value)]
					if !found || (want >= 0 && int64(want) != rec.Offset) {
						return fmt.Errorf("%s: offset %d holds %q, never produced there", k, rec.Offset, rec.Value)
					}
					if a := ps.acked[k]; rec.Offset < int64(len(a)) && a[rec.Offset] != nil && string(a[rec.Offset]) != string(rec.Value) {
						return fmt.Errorf("%s: offset %d holds %q, %q was acknowledged there", k, rec.Offset, rec.Value, a[rec.Offset])
					}
				}
				if err := rr.Err(); err != nil {
					return fmt.Errorf("%s: batch at %d: %w", k, off, err)
				}
				off = record.Batch(b).LastOffset() + 1
			}
		}
	}
	if len(ps.commits) == 0 {
		return nil
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, "g"
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("offset fetch: %w", err)
		}
		if resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		got := map[string]int64{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				got[plKey(rt.Topic, rp.Partition)] = rp.Offset
			}
		}
		for k, off := range ps.commits {
			if got[k] != off {
				return fmt.Errorf("acknowledged commit %s=%d, the restarted broker has %d (error %d)", k, off, got[k], resp.ErrorCode)
			}
		}
		return nil
	}
}

// plMem is a fresh machine: /data exists and is durable (the log dirs
// under it are created by the broker).
func plMem() *vfs.MemFS {
	m := vfs.NewMem()
	if err := m.MkdirAll("/data", 0o755); err != nil {
		panic(err)
	}
	m.SyncAll()
	return m
}

func TestBrokerPowerLoss(t *testing.T) {
	counter := vfs.NewCounter(vfs.MutatingOps...)
	ps := plRun(t, vfs.Inject(plMem(), counter), 1)
	if len(ps.commits) != 2 || len(ps.topics) != 2 {
		t.Fatalf("the session fails without a crash: %+v", ps)
	}
	K := counter.Count()
	points := 24 // STRATA_BROKER_CRASH_POINTS=1000 tries every one
	if testing.Short() {
		points = 8
	}
	if v, err := strconv.Atoi(os.Getenv("STRATA_BROKER_CRASH_POINTS")); err == nil && v > 0 {
		points = v
	}
	stride := max(1, K/points)
	states := 0
	for k := 0; k < K; k += stride {
		mem := plMem()
		crash := vfs.CrashAt(k, vfs.MutatingOps...)
		ps := plRun(t, vfs.Inject(mem, crash), uint64(k))
		for i, st := range mem.CrashStates(vfs.CrashOptions{}, 3) {
			states++
			if err := plCheck(st, ps); err != nil {
				t.Errorf("crash at operation %d of %d, state %d: %v", k, K, i, err)
			}
		}
	}
	t.Logf("%d mutating operations in a session, %d crash points, %d power-loss states started", K, (K+stride-1)/stride, states)
}
