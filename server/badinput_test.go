package server

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

func sizePrefix(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func TestBadFramesCloseConnection(t *testing.T) {
	s := startServer(t, t.TempDir())
	cases := map[string][]byte{
		"http garbage":    []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"size 2^31-1":     sizePrefix(1<<31 - 1),
		"size -1":         sizePrefix(-1),
		"size min int32":  sizePrefix(-1 << 31),
		"size above max":  sizePrefix(DefaultSocketRequestMaxBytes + 1),
		"short header":    append(sizePrefix(3), 0, 18, 0),
		"bad client id":   append(sizePrefix(10), 0, 18, 0, 0, 0, 0, 0, 1, 0x7f, 0x00),
		"garbage in size": append(sizePrefix(12), 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, s)
			r.write(b)
			r.expectClosed()
			healthy(t, s)
		})
	}
}

func TestFrameCutMidway(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	full := kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	r.write(full[:len(full)/2])
	r.nc.(*net.TCPConn).CloseWrite()
	r.expectClosed()
	healthy(t, s)
}

func TestClientVanishesMidRequest(t *testing.T) {
	s := startServer(t, t.TempDir())
	cl := newTopic(t, s, "vanish", 1)
	_ = cl
	// A large produce cut off after its first bytes, then the socket dies.
	req := produceRequest("vanish", 0, makeBatch(t, 100, 1000), 1)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	r := dialRaw(t, s)
	r.write(frame[:len(frame)-5000])
	r.nc.Close()
	// A long-poll fetch whose client disappears while it waits.
	r2 := dialRaw(t, s)
	f := fetchRequest(12, "vanish", 0, 0)
	f.MaxWaitMillis, f.MinBytes = 2000, 1
	parks := fetchParks.Load()
	r2.send(f, 1)
	waitFor(t, 20*time.Second, "the fetch to park", func() bool { return fetchParks.Load() > parks })
	r2.nc.Close()
	healthy(t, s)
	if end := s.topics.partition("vanish", 0).log.LogEndOffset(); end != 0 {
		t.Fatalf("log end %d after a cut produce", end)
	}
}

func TestUnknownKeyAndUnsupportedVersion(t *testing.T) {
	s := startServer(t, t.TempDir())
	raw := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 7)
		b = append(b, 0xff, 0xff) // null client id
		return append(sizePrefix(int32(len(b))), b...)
	}
	for name, b := range map[string][]byte{
		"unknown key 1000":              raw(1000, 0),
		"not advertised InitProducerId": raw(22, 0),
		"negative key":                  raw(-5, 0),
		"Produce v2":                    raw(0, 2),
		"Fetch v13":                     raw(1, 13),
		"Metadata v12":                  raw(3, 12),
		"negative version":              raw(3, -1),
	} {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, s)
			r.write(b)
			r.expectClosed()
			healthy(t, s)
		})
	}
	t.Run("ApiVersions v5 answers v0 with UNSUPPORTED_VERSION", func(t *testing.T) {
		r := dialRaw(t, s)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 5
		r.send(req, 42)
		b, err := r.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		if corr := int32(binary.BigEndian.Uint32(b)); corr != 42 {
			t.Fatalf("correlation %d", corr)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(b[4:]); err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 3 {
			t.Fatalf("%+v", resp)
		}
		// The connection stays usable: retry at v3.
		req.Version = 3
		if resp := r.roundTrip(req, 43).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Fatalf("retry: %+v", resp)
		}
	})
	t.Run("body that does not parse", func(t *testing.T) {
		b := raw(3, 1) // Metadata v1 with no body
		r := dialRaw(t, s)
		r.write(b)
		r.expectClosed()
	})
}

func TestProduceBadBatches(t *testing.T) {
	s := startServer(t, t.TempDir(), "message.max.bytes=4000")
	newTopic(t, s, "bad", 1)
	good := func() []byte { return makeBatch(t, 3, 10) }
	cases := map[string]struct {
		recs []byte
		code int16
	}{
		"corrupt crc": {func() []byte { b := good(); b[len(b)-1] ^= 0xff; return b }(), kerr.CorruptMessage.Code},
		"magic 1":     {func() []byte { b := good(); b[16] = 1; return b }(), kerr.InvalidRecord.Code},
		"magic 7":     {func() []byte { b := good(); b[16] = 7; return b }(), kerr.InvalidRecord.Code},
		"too large":   {makeBatch(t, 10, 500), kerr.MessageTooLarge.Code},
		"count above records": {func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[57:], 4)
			record.Batch(b).UpdateCRC()
			return b
		}(), kerr.InvalidRecord.Code},
		"count and delta above records": {func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[57:], 4)
			binary.BigEndian.PutUint32(b[23:], 3)
			record.Batch(b).UpdateCRC()
			return b
		}(), kerr.InvalidRecord.Code},
		"two batches": {append(good(), good()...), kerr.InvalidRecord.Code},
		"truncated":   {good()[:40], kerr.CorruptMessage.Code},
		"empty":       {[]byte{}, kerr.InvalidRecord.Code},
		"length lies": {func() []byte { b := good(); binary.BigEndian.PutUint32(b[8:], 1000); return b }(), kerr.CorruptMessage.Code},
		"compressed garbage": {func() []byte {
			b := good()
			binary.BigEndian.PutUint16(b[21:], 1) // gzip, records are not gzip
			record.Batch(b).UpdateCRC()
			return b
		}(), kerr.CorruptMessage.Code},
	}
	r := dialRaw(t, s)
	corr := int32(0)
	for name, tc := range cases {
		corr++
		resp := r.roundTrip(produceRequest("bad", 0, tc.recs, 9), corr).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != tc.code {
			t.Errorf("%s: code %d, want %d (%v)", name, p.ErrorCode, tc.code, p.ErrorMessage)
		}
	}
	if end := s.topics.partition("bad", 0).log.LogEndOffset(); end != 0 {
		t.Fatalf("rejected batches were stored: log end %d", end)
	}
	// Unknown topic/partition, bad acks; then a good batch still works.
	resp := r.roundTrip(produceRequest("bad", 5, good(), 9), 100).(*kmsg.ProduceResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %d", c)
	}
	req := produceRequest("bad", 0, good(), 9)
	req.Acks = 2
	if c := r.roundTrip(req, 101).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks 2: %d", c)
	}
	for v := int16(3); v <= 9; v++ {
		p := r.roundTrip(produceRequest("bad", 0, good(), v), 200+int32(v)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(v-3)*3 || p.LogAppendTime != -1 || (v >= 5 && p.LogStartOffset != 0) {
			t.Fatalf("v%d good batch: %+v", v, p)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	s := startServer(t, t.TempDir())
	newTopic(t, s, "f", 1)
	r := dialRaw(t, s)
	if c := r.roundTrip(produceRequest("f", 0, makeBatch(t, 5, 10), 9), 1).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatal(c)
	}
	for v := int16(4); v <= 12; v++ {
		for _, tc := range []struct {
			topic  string
			offset int64
			code   int16
		}{
			{"nope", 0, kerr.UnknownTopicOrPartition.Code},
			{"f", -1, kerr.OffsetOutOfRange.Code},
			{"f", 6, kerr.OffsetOutOfRange.Code},
			{"f", 0, 0},
			{"f", 5, 0},
		} {
			req := fetchRequest(v, tc.topic, 0, tc.offset)
			req.MaxWaitMillis = 10
			resp := r.roundTrip(req, int32(v)).(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tc.code {
				t.Fatalf("v%d %s@%d: code %d, want %d", v, tc.topic, tc.offset, p.ErrorCode, tc.code)
			}
			if tc.topic == "f" && (p.HighWatermark != 5 || p.LastStableOffset != 5 || (v >= 5 && p.LogStartOffset != 0)) {
				t.Fatalf("v%d offsets %+v", v, p)
			}
			if tc.code == 0 && tc.offset == 0 && len(p.RecordBatches) == 0 {
				t.Fatalf("v%d no records", v)
			}
		}
	}
	// An incremental fetch session is refused: sessions are not kept.
	req := fetchRequest(12, "f", 0, 0)
	req.SessionID, req.SessionEpoch = 5, 1
	if resp := r.roundTrip(req, 50).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("session: %d", resp.ErrorCode)
	}
}

// newTopic creates a topic through CreateTopics.
func newTopic(t testing.TB, s *Server, name string, n int32) *rawConn {
	t.Helper()
	r := dialRaw(t, s)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, -1
	req.Topics = append(req.Topics, rt)
	if c := r.roundTrip(req, 1).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
		t.Fatalf("create %s: code %d", name, c)
	}
	return r
}

// makeBatch builds an uncompressed producer batch of n records of size bytes.
func makeBatch(t testing.TB, n, size int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: 1_700_000_000_000 + int64(i), Value: make([]byte, size)}
	}
	b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceRequest(topic string, p int32, recs []byte, version int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, recs
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchRequest(version int16, topic string, p int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = version, -1, 50<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// listOffsetsRequest asks for partition p of topic at timestamp ts (-1
// latest, -2 earliest).
func listOffsetsRequest(topic string, p int32, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestAcksZero: acks=0 produces get no response; a failed one closes the
// connection (Kafka's way of telling the client).
func TestAcksZero(t *testing.T) {
	s := startServer(t, t.TempDir())
	newTopic(t, s, "a0", 1)
	r := dialRaw(t, s)
	req := produceRequest("a0", 0, makeBatch(t, 2, 10), 7)
	req.Acks = 0
	r.send(req, 1)
	// The next response on the connection is ApiVersions' (corr 2), not the produce's.
	av := kmsg.NewPtrApiVersionsRequest()
	if resp := r.roundTrip(av, 2).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatal(resp.ErrorCode)
	}
	if end := s.topics.partition("a0", 0).log.LogEndOffset(); end != 2 {
		t.Fatalf("log end %d", end)
	}
	bad := makeBatch(t, 2, 10)
	bad[len(bad)-1] ^= 1
	req = produceRequest("a0", 0, bad, 7)
	req.Acks = 0
	r.send(req, 3)
	r.expectClosed()
	healthy(t, s)
}
