package server

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataServer is a cluster-mode Server with only what Metadata needs:
// a metadata cache of topics×parts partitions on 3 brokers.
func metadataServer(tb testing.TB, topics, parts int) (*Server, *conn) {
	tb.Helper()
	cfg := DefaultConfig()
	s := &Server{cfg: cfg, log: testLogger()}
	cl := &clusterNode{s: s, cfg: cfg, log: s.log, clusterID: "benchcluster00000000aa"}
	cl.images.init([]string{"PLAINTEXT"})
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version, req.ControllerID, req.ControllerEpoch = 7, 1, 1
	for b := int32(1); b <= 3; b++ {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = b
		e := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		e.Host, e.Port, e.ListenerName = "127.0.0.1", 9091+b, "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, e)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	for t := 0; t < topics; t++ {
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = fmt.Sprintf("topic-%04d", t), newUUID()
		for p := 0; p < parts; p++ {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			r := []int32{int32(1 + (t+p)%3), int32(1 + (t+p+1)%3), int32(1 + (t+p+2)%3)}
			ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = int32(p), r[0], 3, r, r
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = append(req.TopicStates, ts)
	}
	cl.images.apply(req)
	s.cl = cl
	return s, &conn{s: s, listener: "PLAINTEXT"}
}

// metadataOnce serves one Metadata request for every topic and encodes the
// response into buf, as the connection does.
func metadataOnce(s *Server, c *conn, req *kmsg.MetadataRequest, buf []byte) []byte {
	resp := s.handleMetadataCluster(c, req)
	return resp.AppendTo(buf[:0])
}

// BenchmarkClusterMetadata1000 is issue 17's floor: a Metadata request for
// every topic of a cluster with 1,000 partitions (100 topics of 10, RF 3),
// answered from the metadata cache and encoded, must take at most 1 ms of
// server time, with allocations independent of the requests served.
func BenchmarkClusterMetadata1000(b *testing.B) {
	for _, shape := range []struct{ topics, parts int }{{100, 10}, {1000, 1}, {1, 1000}} {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", shape.topics, shape.parts), func(b *testing.B) {
			s, c := metadataServer(b, shape.topics, shape.parts)
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 11
			buf := metadataOnce(s, c, req, nil)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				buf = metadataOnce(s, c, req, buf)
			}
		})
	}
}

// TestClusterMetadataAllocs: serving Metadata for every one of 1,000
// partitions allocates the same few objects whatever the number of
// requests served before (the prebuilt content is shared, not copied), and
// named topics add one slice.
func TestClusterMetadataAllocs(t *testing.T) {
	s, c := metadataServer(t, 100, 10)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 11
	buf := metadataOnce(s, c, req, nil)
	first := testing.AllocsPerRun(10, func() { buf = metadataOnce(s, c, req, buf) })
	for range 1000 {
		buf = metadataOnce(s, c, req, buf)
	}
	later := testing.AllocsPerRun(10, func() { buf = metadataOnce(s, c, req, buf) })
	if first != later || first > 2 {
		t.Fatalf("allocations per request: %v at first, %v after 1000 requests (want the same, at most 2)", first, later)
	}
	named := kmsg.NewPtrMetadataRequest()
	named.Version = 11
	for i := 0; i < 100; i++ {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("topic-%04d", i))
		named.Topics = append(named.Topics, rt)
	}
	if n := testing.AllocsPerRun(10, func() { buf = metadataOnce(s, c, named, buf) }); n > 3 {
		t.Fatalf("allocations per request naming 100 topics: %v", n)
	}
	resp := s.handleMetadataCluster(c, req).(*kmsg.MetadataResponse)
	n := 0
	for _, tp := range resp.Topics {
		n += len(tp.Partitions)
	}
	if len(resp.Brokers) != 3 || n != 1000 || resp.ControllerID != 1 {
		t.Fatalf("answer: %d brokers, %d partitions, controller %d", len(resp.Brokers), n, resp.ControllerID)
	}
}
