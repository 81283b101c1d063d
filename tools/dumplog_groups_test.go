package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/server"
)

// TestDumplogRealOffsetsTopic: a broker's own __consumer_offsets partition,
// after many commits and a group's metadata records, compacted with
// "strata compact", dumps with --offsets-decoder to exactly one offset
// commit per key holding the latest committed offset, plus the group's
// metadata; the broker restarted on the compacted log serves the same
// offsets.
func TestDumplogRealOffsetsTopic(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	start := func() *server.Server {
		return startBroker(t, data, "offsets.topic.num.partitions=1", "offsets.topic.segment.bytes=8192",
			"group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=500")
	}
	s := start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "orders", 4, 1
	ct.Topics = append(ct.Topics, tt)
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, resp)
	}
	// 400 standalone commits over 2 groups x 4 partitions.
	latest := map[string]int64{}
	for i := range 400 {
		group := fmt.Sprintf("dump-%d", i%2)
		p := int32(i / 2 % 4)
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, int64(i)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit %d: %v %+v", i, err, resp)
		}
		latest[fmt.Sprintf("%s/orders/%d", group, p)] = int64(i)
	}
	// A real group (franz-go) writes group metadata records.
	for _, r := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(r)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	gc, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.ConsumerGroup("dump-live"), kgo.ConsumeTopics("orders"),
		kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 3; {
		fs := gc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		n += len(fs.Records())
	}
	if err := gc.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	gc.Close()
	cl.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	part := filepath.Join(data, server.OffsetsTopic+"-0")
	logs, _ := filepath.Glob(filepath.Join(part, "*.log"))
	if len(logs) < 3 {
		t.Fatalf("%d segments in %s, want several (offsets.topic.segment.bytes=8192)", len(logs), part)
	}
	if out, errOut, code := run(t, "compact", data); code != 0 {
		t.Fatalf("compact: exit %d\n%s\n%s", code, out, errOut)
	}
	logs, _ = filepath.Glob(filepath.Join(part, "*.log"))
	out, errOut, code := run(t, append([]string{"dumplog", "--offsets-decoder", "--json"}, logs...)...)
	if code != 0 {
		t.Fatalf("dumplog: exit %d\n%s", code, errOut)
	}
	type keyJSON struct {
		Type string `json:"type"`
		Data struct {
			Group     string `json:"group"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		} `json:"data"`
	}
	type valueJSON struct {
		Version string `json:"version"`
		Data    struct {
			Offset     int64             `json:"offset"`
			Generation int32             `json:"generation"`
			Members    []json.RawMessage `json:"members"`
		} `json:"data"`
	}
	perKey := map[string][]int64{}
	groupRecs := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Key     json.RawMessage `json:"key"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &r) != nil || r.Key == nil {
			continue // file headers, batch lines
		}
		var k keyJSON
		if err := json.Unmarshal(r.Key, &k); err != nil {
			t.Fatalf("undecoded key %s in %s", r.Key, line)
		}
		var v valueJSON
		if string(r.Payload) != "null" {
			if err := json.Unmarshal(r.Payload, &v); err != nil {
				t.Fatalf("undecoded value %s", r.Payload)
			}
		}
		switch k.Type {
		case "1":
			if k.Data.Group != "dump-live" {
				key := fmt.Sprintf("%s/%s/%d", k.Data.Group, k.Data.Topic, k.Data.Partition)
				perKey[key] = append(perKey[key], v.Data.Offset)
			}
			if v.Version != "3" {
				t.Errorf("offset commit value version %q, want 3", v.Version)
			}
		case "2":
			if k.Data.Group == "dump-live" {
				groupRecs++
				if v.Version != "3" || v.Data.Generation < 1 {
					t.Errorf("group metadata value %s", r.Payload)
				}
			}
		default:
			t.Errorf("key type %q", k.Type)
		}
	}
	if len(perKey) != len(latest) {
		t.Fatalf("%d offset keys after compaction, want %d:\n%s", len(perKey), len(latest), out)
	}
	for key, offs := range perKey {
		if len(offs) != 1 || offs[0] != latest[key] {
			t.Errorf("%s: offsets %v after compaction, want only the latest %d", key, offs, latest[key])
		}
	}
	if groupRecs != 1 {
		t.Errorf("%d group metadata records for dump-live after compaction, want 1", groupRecs)
	}

	s = start()
	cl, err = kgo.NewClient(kgo.SeedBrokers(s.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Group = "dump-1"
	fr.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0, 1, 2, 3}}}
	resp, err := fr.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("fetch after restart: %v %+v", err, resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if want := latest[fmt.Sprintf("dump-1/orders/%d", p.Partition)]; p.Offset != want {
			t.Errorf("after compaction and restart dump-1/%d at %d, want %d", p.Partition, p.Offset, want)
		}
	}
}
