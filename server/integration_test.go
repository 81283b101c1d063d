package server

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestProduceConsumeCodecs(t *testing.T) {
	s := startServer(t, t.TempDir())
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			cl := newClient(t, s, kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
			const n = 500
			var recs []*kgo.Record
			for i := range n {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{byte(i)}, 100+i%50)})
			}
			if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			got := consumeAll(t, s, topic, []int32{0}, n)
			if len(got) != n {
				t.Fatalf("got %d records, want %d", len(got), n)
			}
			for i, r := range got {
				if r.Offset != int64(i) || !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) {
					t.Fatalf("record %d: offset %d key %q", i, r.Offset, r.Key)
				}
			}
		})
	}
}

func TestCreateTopicsExplicitPartitionsAcks(t *testing.T) {
	s := startServer(t, t.TempDir(), "auto.create.topics.enable=false")
	r := dialRaw(t, s)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	for _, name := range []string{"four", "four", "bad/name", "rf3"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 4, 1
		if name == "rf3" {
			rt.ReplicationFactor = 3
		}
		req.Topics = append(req.Topics, rt)
	}
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "three", 3, -1
	req.Topics = append(req.Topics, rt)
	resp := r.roundTrip(req, 1).(*kmsg.CreateTopicsResponse)
	want := map[string]int16{"four": kerr.InvalidRequest.Code, "bad/name": kerr.InvalidTopicException.Code, "rf3": kerr.InvalidReplicationFactor.Code, "three": 0}
	for _, st := range resp.Topics {
		if st.ErrorCode != want[st.Topic] {
			t.Errorf("%s: code %d, want %d", st.Topic, st.ErrorCode, want[st.Topic])
		}
	}
	// Again: already exists.
	req.Topics = req.Topics[len(req.Topics)-1:]
	if c := r.roundTrip(req, 2).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != kerr.TopicAlreadyExists.Code {
		t.Fatalf("second create: code %d", c)
	}

	for _, acks := range []kgo.Acks{kgo.NoAck(), kgo.LeaderAck(), kgo.AllISRAcks()} {
		opts := []kgo.Opt{kgo.RequiredAcks(acks), kgo.RecordPartitioner(kgo.ManualPartitioner())}
		if acks != kgo.AllISRAcks() { // an idempotent producer needs acks=all
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl := newClient(t, s, opts...)
		var recs []*kgo.Record
		for p := int32(0); p < 3; p++ {
			for i := range 10 {
				recs = append(recs, &kgo.Record{Topic: "three", Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
			}
		}
		if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
			t.Fatalf("acks %v: %v", acks, err)
		}
	}
	// acks=0 has no response: wait until its records are visible.
	got := consumeAll(t, s, "three", []int32{0, 1, 2}, 90)
	per := map[int32]int{}
	for _, r := range got {
		if want := fmt.Sprintf("p%d-%d", r.Partition, per[r.Partition]%10); string(r.Value) != want {
			t.Fatalf("partition %d record %d: %q, want %q", r.Partition, per[r.Partition], r.Value, want)
		}
		per[r.Partition]++
	}
	for p := int32(0); p < 3; p++ {
		if per[p] != 30 {
			t.Fatalf("partition %d holds %d records", p, per[p])
		}
	}

	// Auto-creation is off: unknown topics stay unknown.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 11
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("nope")
	md.Topics = append(md.Topics, mt)
	md.AllowAutoTopicCreation = true
	mresp := r.roundTrip(md, 3).(*kmsg.MetadataResponse)
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata for unknown topic: %+v", mresp.Topics)
	}
}

func TestMetadataAutoCreateAndVersions(t *testing.T) {
	s := startServer(t, t.TempDir(), "num.partitions=2")
	r := dialRaw(t, s)
	for v := int16(0); v <= 11; v++ {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = v
		mt := kmsg.NewMetadataRequestTopic()
		name := fmt.Sprintf("auto-%d", v)
		mt.Topic = &name
		md.Topics = append(md.Topics, mt)
		md.AllowAutoTopicCreation = true
		resp := r.roundTrip(md, int32(v)).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].Port != int32(s.Addr().(*net.TCPAddr).Port) {
			t.Fatalf("v%d brokers %+v", v, resp.Brokers)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d topics %+v", v, resp.Topics)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != s.ClusterID()) {
			t.Fatalf("v%d cluster id %v", v, resp.ClusterID)
		}
		if v >= 10 && resp.Topics[0].TopicID == ([16]byte{}) {
			t.Fatalf("v%d no topic id", v)
		}
	}
	// All topics: null list at v1+, empty at v0.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if n := len(r.roundTrip(md, 20).(*kmsg.MetadataResponse).Topics); n != 12 {
		t.Fatalf("all topics: %d", n)
	}
	md.Topics = []kmsg.MetadataRequestTopic{}
	if n := len(r.roundTrip(md, 21).(*kmsg.MetadataResponse).Topics); n != 0 {
		t.Fatalf("empty list at v1: %d topics", n)
	}
}

func TestListOffsetsByTime(t *testing.T) {
	s := startServer(t, t.TempDir())
	cl := newClient(t, s, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("times"), kgo.ProducerLinger(0))
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 10 {
		// One produce per record: one batch each, timestamps 1 s apart.
		r := &kgo.Record{Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rc := dialRaw(t, s)
	query := func(v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "times"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.MaxNumOffsets = ts, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.roundTrip(req, 1).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	ms := base.UnixMilli()
	for _, tc := range []struct {
		ts, off, gotTs int64
	}{
		{-2, 0, -1}, {-1, 10, -1}, {ms, 0, ms}, {ms + 3500, 4, ms + 4000}, {ms + 9000, 9, ms + 9000}, {ms + 9001, -1, -1}, {-3, 9, ms + 9000},
	} {
		for _, v := range []int16{1, 4, 7} {
			if tc.ts == -3 && v < 7 {
				continue
			}
			p := query(v, tc.ts)
			if p.ErrorCode != 0 || p.Offset != tc.off || p.Timestamp != tc.gotTs {
				t.Errorf("v%d ts %d: code %d offset %d timestamp %d, want %d %d", v, tc.ts, p.ErrorCode, p.Offset, p.Timestamp, tc.off, tc.gotTs)
			}
		}
	}
	if p := query(0, -1); len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 10 {
		t.Errorf("v0 latest: %v", p.OldStyleOffsets)
	}
	if p := query(0, -2); len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 0 {
		t.Errorf("v0 earliest: %v", p.OldStyleOffsets)
	}
}

func TestRestartKeepsTopicsAndData(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "num.partitions=3")
	cl := newClient(t, s, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("keep"))
	const n = 300
	for i := range n {
		cl.Produce(testCtx(t), &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}, nil)
	}
	if err := cl.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	id := s.topics.get("keep").id
	cluster := s.ClusterID()
	cl.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{MetaPropertiesFile, TopicsFile, "keep-0/" + PartitionMetadataFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	s2 := startServer(t, dir)
	if s2.ClusterID() != cluster || s2.topics.get("keep") == nil || s2.topics.get("keep").id != id || len(s2.topics.get("keep").parts) != 3 {
		t.Fatal("topic table or cluster id not kept across restart")
	}
	got := consumeAll(t, s2, "keep", []int32{0, 1, 2}, n)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records after restart, want %d", len(seen), n)
	}
	// A different node.id on the same dir is refused.
	cfg, _ := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "node.id=7"}, nil)
	s2.Close()
	if _, err := Start(cfg, &Options{Logger: testLogger()}); !errors.Is(err, ErrDataDir) {
		t.Fatalf("start with another node.id: %v", err)
	}
}

func TestSeveralLogDirs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	s := startServer(t, a+","+b)
	newTopic(t, s, "spread", 4)
	count := func(dir string) int {
		n := 0
		for p := 0; p < 4; p++ {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("spread-%d", p))); err == nil {
				n++
			}
		}
		return n
	}
	if ca, cb := count(a), count(b); ca != 2 || cb != 2 {
		t.Fatalf("partitions per dir: %d and %d", ca, cb)
	}
	for _, d := range []string{a, b} {
		if _, err := os.Stat(filepath.Join(d, MetaPropertiesFile)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s2 := startServer(t, a+","+b)
	if tp := s2.topics.get("spread"); tp == nil || len(tp.parts) != 4 || count(a)+count(b) != 4 {
		t.Fatal("partitions not found again across dirs")
	}
	s2.Close()
	// A partition directory of another topic incarnation is refused.
	if err := os.WriteFile(filepath.Join(a, "spread-0", PartitionMetadataFile), []byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n"), 0o644); err != nil {
		if err2 := os.WriteFile(filepath.Join(b, "spread-0", PartitionMetadataFile), []byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n"), 0o644); err2 != nil {
			t.Fatal(err, err2)
		}
	}
	cfg, _ := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + a + "," + b}, nil)
	if _, err := Start(cfg, &Options{Logger: testLogger()}); !errors.Is(err, ErrDataDir) {
		t.Fatalf("start with a foreign partition.metadata: %v", err)
	}
}

func TestManyIdleConnectionsAndConcurrentProducers(t *testing.T) {
	s := startServer(t, t.TempDir())
	newTopic(t, s, "busy", 2)
	var idle []net.Conn
	for range 1000 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	healthy(t, s)
	const producers, each = 4, 500
	errs := make(chan error, producers)
	for i := range producers {
		go func() {
			cl := newClient(t, s, kgo.DefaultProduceTopic("busy"))
			var recs []*kgo.Record
			for j := range each {
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%d-%d", i, j)})
			}
			errs <- cl.ProduceSync(testCtx(t), recs...).FirstErr()
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := consumeAll(t, s, "busy", []int32{0, 1}, producers*each)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	if len(seen) != producers*each {
		t.Fatalf("%d distinct records", len(seen))
	}
}
