package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func produceN(t testing.TB, cl *kgo.Client, topic string, part int32, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// clientAt is a client whose requests of API key use version v at most.
func clientAt(t testing.TB, s *Server, key kmsg.Key, v int16) *kgo.Client {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(key), v)
	return newClient(t, s, kgo.MaxVersions(vs))
}

// deleteTopicsReq sends DeleteTopics at exactly version (through a client
// pinned to it).
func deleteTopicsReq(t testing.TB, s *Server, version int16, names ...string) *kmsg.DeleteTopicsResponse {
	t.Helper()
	cl := clientAt(t, s, kmsg.DeleteTopics, version)
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	req.TimeoutMillis = 5000
	for _, n := range names {
		if version >= 6 {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		} else {
			req.TopicNames = append(req.TopicNames, n)
		}
	}
	resp, err := cl.Request(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if req.Version != version {
		t.Fatalf("sent v%d, want v%d", req.Version, version)
	}
	return resp.(*kmsg.DeleteTopicsResponse)
}

func TestDeleteTopics(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "file.delete.delay.ms=300000")
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, n := range []string{"gone0", "gone1", "gone6", "byid", "stay"} {
		createTopicWith(t, cl, n, 2)
		produceN(t, cl, n, 1, 5)
	}
	for _, v := range []int16{0, 1, 5} {
		name := "gone0"
		if v > 0 {
			name = "gone1"
		}
		if v == 5 {
			name = "missing"
		}
		resp := deleteTopicsReq(t, s, v, name)
		want := int16(0)
		if name == "missing" {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != want {
			t.Fatalf("v%d delete %s: %+v", v, name, resp.Topics)
		}
	}
	if r := deleteTopicsReq(t, s, 6, "gone6", "gone6"); r.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("duplicate: %+v", r.Topics)
	}
	if r := deleteTopicsReq(t, s, 6, "gone6"); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("v6 by name: %+v", r.Topics)
	}
	// v6 by topic id; an unknown id is UNKNOWN_TOPIC_ID.
	req := kmsg.NewPtrDeleteTopicsRequest()
	for _, id := range [][16]byte{s.topics.get("byid").id, {1, 2, 3}} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "byid" ||
		resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("by id: %+v", resp.Topics)
	}
	for _, n := range []string{"gone0", "gone1", "gone6", "byid"} {
		if s.topics.get(n) != nil {
			t.Fatalf("%s still served", n)
		}
		for p := range 2 {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-%d", n, p))); !os.IsNotExist(err) {
				t.Fatalf("%s-%d still in place: %v", n, p, err)
			}
		}
	}
	if got := deleteDirs(t, dir); len(got) != 8 {
		t.Fatalf("%d -delete dirs, want 8: %v", len(got), got)
	}
	// Metadata no longer lists them; the kept topic still serves.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics) != 1 || *md.Topics[0].Topic != "stay" {
		t.Fatalf("metadata after delete: %d topics", len(md.Topics))
	}
	// A topic of the same name can be created again, empty.
	createTopicWith(t, cl, "gone0", 1)
	cl.Close()
	// Deletion survives a restart; pending directories are removed after
	// file.delete.delay.ms.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dir, "file.delete.delay.ms=10")
	if s2.topics.get("gone1") != nil || s2.topics.get("byid") != nil || s2.topics.get("stay") == nil || s2.topics.get("gone0") == nil {
		t.Fatal("topic table after restart")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(deleteDirs(t, dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("-delete dirs not removed: %v", deleteDirs(t, dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := consumeAll(t, s2, "stay", []int32{1}, 5)
	if len(got) != 5 {
		t.Fatalf("stay: %d records", len(got))
	}
}

func deleteDirs(t testing.TB, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-delete") {
			name := e.Name()
			// <topic>-<p>.<32 hex>-delete
			if i := strings.LastIndexByte(name, '.'); i < 0 || len(name)-i-1 != 32+len("-delete") {
				t.Fatalf("bad delete dir name %q", name)
			}
			out = append(out, name)
		}
	}
	return out
}

func TestDeleteTopicsDisabled(t *testing.T) {
	s := startServer(t, t.TempDir(), "delete.topic.enable=false")
	cl := newClient(t, s)
	createTopicWith(t, cl, "kept", 1)
	if r := deleteTopicsReq(t, s, 4, "kept"); r.Topics[0].ErrorCode != kerr.TopicDeletionDisabled.Code {
		t.Fatalf("v4: %+v", r.Topics)
	}
	if r := deleteTopicsReq(t, s, 2, "kept"); r.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v2: %+v", r.Topics)
	}
	if s.topics.get("kept") == nil {
		t.Fatal("topic deleted although deletion is disabled")
	}
}

func TestCreatePartitions(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopicWith(t, cl, "grow", 1)
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = v
		req.TimeoutMillis = 5000
		add := func(name string, n int32, assign ...[]int32) {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = name, n
			for _, a := range assign {
				x := kmsg.NewCreatePartitionsRequestTopicAssignment()
				x.Replicas = a
				rt.Assignment = append(rt.Assignment, x)
			}
			req.Topics = append(req.Topics, rt)
		}
		want := []int16{0, kerr.UnknownTopicOrPartition.Code}
		if v == 0 {
			add("grow", 3)
		} else {
			add("grow", 4, []int32{0})
			want = append(want, kerr.InvalidPartitions.Code, kerr.InvalidReplicaAssignment.Code)
		}
		add("nope", 2)
		if v == 3 {
			add("grow2", 0)
		}
		if v == 3 {
			createTopicWith(t, cl, "grow2", 2)
			createTopicWith(t, cl, "grow3", 1)
			add("grow3", 3, []int32{0}) // one assignment for two new partitions
		}
		resp, err := req.RequestWith(testCtx(t), clientAt(t, s, kmsg.CreatePartitions, v))
		if err != nil || req.Version != v {
			t.Fatalf("v%d: %v", req.Version, err)
		}
		for i, w := range want {
			if resp.Topics[i].ErrorCode != w {
				t.Fatalf("v%d topic %s: error %d, want %d", v, resp.Topics[i].Topic, resp.Topics[i].ErrorCode, w)
			}
		}
	}
	if n := len(s.topics.parts(s.topics.get("grow"))); n != 4 {
		t.Fatalf("grow has %d partitions", n)
	}
	produceN(t, cl, "grow", 3, 7)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range md.Topics {
		if *mt.Topic == "grow" && len(mt.Partitions) != 4 {
			t.Fatalf("metadata: %d partitions", len(mt.Partitions))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dir)
	if n := len(s2.topics.parts(s2.topics.get("grow"))); n != 4 {
		t.Fatalf("after restart grow has %d partitions", n)
	}
	if got := consumeAll(t, s2, "grow", []int32{3}, 7); len(got) != 7 {
		t.Fatalf("%d records", len(got))
	}
}

func TestDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopicWith(t, cl, "dr", 1, "segment.bytes", "1024")
	for range 20 {
		produceN(t, cl, "dr", 0, 10)
	}
	call := func(v int16, topic string, off int64) kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version = v
		req.TimeoutMillis = 5000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), clientAt(t, s, kmsg.DeleteRecords, v))
		if err != nil || req.Version != v {
			t.Fatalf("v%d: %v", req.Version, err)
		}
		return resp.Topics[0].Partitions[0]
	}
	if p := call(0, "dr", 150); p.ErrorCode != 0 || p.LowWatermark != 150 {
		t.Fatalf("v0: %+v", p)
	}
	if p := call(1, "dr", 100); p.ErrorCode != 0 || p.LowWatermark != 150 {
		t.Fatalf("below the start: %+v", p)
	}
	if p := call(2, "dr", 201); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("past the end: %+v", p)
	}
	// kgo refuses to route an unknown topic: send it by hand.
	raw := kmsg.NewPtrDeleteRecordsRequest()
	raw.Version = 2
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "missing"
	rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}
	raw.Topics = append(raw.Topics, rt)
	if p := dialRaw(t, s).roundTrip(raw, 1).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", p)
	}
	// A consumer from the start begins at 150.
	got := consumeAll(t, s, "dr", []int32{0}, 50)
	if got[0].Offset != 150 {
		t.Fatalf("first offset %d", got[0].Offset)
	}
	if p := call(2, "dr", -1); p.ErrorCode != 0 || p.LowWatermark != 200 {
		t.Fatalf("-1: %+v", p)
	}
	// The new start survives a SIGKILL-like stop (checkpoint written at once):
	// here a clean restart, and the log start offset checkpoint on disk.
	b, err := os.ReadFile(filepath.Join(dir, "log-start-offset-checkpoint"))
	if err != nil || !strings.Contains(string(b), "dr 0 200") {
		t.Fatalf("log-start-offset-checkpoint: %q %v", b, err)
	}
}

// TestDeleteCrashLeavesStray: a crash after the topic table dropped a topic
// but before its directories were renamed leaves <topic>-<p>; the next start
// does not serve it and renames it -stray.
func TestDeleteCrashLeavesStray(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	cl := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopicWith(t, cl, "half", 1)
	createTopicWith(t, cl, "keep", 1)
	produceN(t, cl, "half", 0, 3)
	cl.Close()
	// Simulate the crash: the table without "half", its directory in place.
	s.topics.mu.Lock()
	err := s.topics.persistWith(map[string]int32{"half": 0}, nil)
	s.topics.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dir)
	if s2.topics.get("half") != nil || s2.topics.get("keep") == nil {
		t.Fatal("topic table after restart")
	}
	if _, err := os.Stat(filepath.Join(dir, "half-0")); !os.IsNotExist(err) {
		t.Fatalf("half-0 still in place: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "half-0.") && strings.HasSuffix(e.Name(), "-stray") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d stray dirs", n)
	}
	// A new topic of the same name starts empty.
	createTopicWith(t, newClient(t, s2), "half", 1)
	if end := s2.topics.partition("half", 0).log.LogEndOffset(); end != 0 {
		t.Fatalf("recreated topic has log end %d", end)
	}
}
