package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBackgroundCompaction: a compacted topic produced with repeated keys is
// compacted by the cleaner in the background: a consume from 0 ends up with
// one record per key below the active segment, the latest value of every key,
// and the last batch.
func TestBackgroundCompaction(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "log.cleaner.backoff.ms=20")
	cl := newClient(t, s, kgo.DefaultProduceTopic("compacted"))
	createTopicWith(t, cl, "compacted", 1, "cleanup.policy", "compact", "segment.bytes", "2048", "min.cleanable.dirty.ratio", "0.01")
	const n, keys = 300, 10
	for i := range n {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%keys), Value: fmt.Appendf(nil, "v%d", i)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	l := s.topics.partition("compacted", 0).log.(*movableLog).cur()
	deadline := time.Now().Add(30 * time.Second)
	for {
		segs := l.Segments()
		active := segs[len(segs)-1].Base()
		got := consumeUpTo(t, s, "compacted", n-1)
		seen := map[string]int{}
		last := map[string]string{}
		dup := false
		for _, r := range got {
			if r.Offset < active {
				seen[string(r.Key)]++
				dup = dup || seen[string(r.Key)] > 1
			}
			last[string(r.Key)] = string(r.Value)
		}
		if !dup && len(got) < n && active > 0 {
			for k := range keys {
				want := fmt.Sprintf("v%d", n-keys+k)
				if last[fmt.Sprintf("k%d", k)] != want {
					t.Fatalf("key k%d: latest value %q, want %q", k, last[fmt.Sprintf("k%d", k)], want)
				}
			}
			if got[len(got)-1].Offset != n-1 {
				t.Fatalf("last record offset %d, want %d", got[len(got)-1].Offset, n-1)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not compacted: %d records, active segment base %d, duplicate keys below it %v", len(got), active, dup)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consumeUpTo reads a partition-0 topic from the start up to offset last.
func consumeUpTo(t testing.TB, s *Server, topic string, last int64) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < last {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records: %v", len(out), ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// createTopicWith creates a topic with CreateTopics; kv are config pairs.
func createTopicWith(t testing.TB, cl *kgo.Client, name string, parts int32, kv ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, 1
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if ec := resp.Topics[0].ErrorCode; ec != 0 {
		t.Fatalf("create %s: error %d", name, ec)
	}
}
