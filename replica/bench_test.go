package replica

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// benchBatch is one batch of n records of size bytes each.
func benchBatch(b *testing.B, n, size int) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: t0, Value: []byte(strings.Repeat("x", size))}
	}
	buf, err := record.AppendBatch(nil, record.DefaultBatchOptions(), recs)
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

// BenchmarkAppendAsLeader: the leader's produce path per batch (10 records
// of 100 bytes), ISR of one: epoch stamp, append, high watermark. Real
// files.
func BenchmarkAppendAsLeader(b *testing.B) {
	p := newTestPartitionAt(b, 1, vfs.OS, b.TempDir())
	mustLeader(b, p, state(1, 0, []int32{1}), t0)
	batch := benchBatch(b, 10, 100)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.AppendAsLeader(batch, -1, 1, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplicationRoundTrip: per batch, the leader's append and one
// follower fetch round trip: the follower's request, the leader serving it
// (epoch checks, read of the region, follower progress, HW), the bytes
// copied out as the network would, and the follower's append (CRC check,
// epoch cache, AppendAssigned) and HW update. ISR {leader, follower},
// acks=-1 (each round trip commits the previous batch). Real files.
func BenchmarkReplicationRoundTrip(b *testing.B) {
	l := newTestPartitionAt(b, 1, vfs.OS, b.TempDir())
	f := newTestPartitionAt(b, 2, vfs.OS, b.TempDir())
	isr := []int32{1, 2}
	mustLeader(b, l, state(1, 0, isr, 1, 2), t0)
	mustFollower(b, f, state(1, 0, isr, 1, 2), t0)
	batch := benchBatch(b, 10, 100)
	data := kmsg.NewFetchResponseTopicPartition()
	var buf []byte
	roundTrip := func(now int64) {
		part, _, ok := f.fetchPart(now)
		if !ok {
			b.Fatal("no fetch")
		}
		res := l.FetchFromFollower(FollowerFetch{
			ReplicaID:          2,
			FetchOffset:        part.FetchOffset,
			LogStartOffset:     part.LogStartOffset,
			CurrentLeaderEpoch: part.CurrentLeaderEpoch,
			LastFetchedEpoch:   part.LastFetchedEpoch,
			MaxBytes:           int64(part.PartitionMaxBytes),
		}, now)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		var err error
		buf, err = res.Records.ReadInto(buf[:0])
		res.Records.Release()
		if err != nil {
			b.Fatal(err)
		}
		data.ErrorCode = 0
		data.HighWatermark, data.LogStartOffset = res.HighWatermark, res.LogStartOffset
		data.RecordBatches = buf
		if err := f.handleFetchData(1, &part, &data, now); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := t0 + int64(i)
		if _, err := l.AppendAsLeader(batch, -1, 2, now); err != nil {
			b.Fatal(err)
		}
		roundTrip(now)
	}
	b.StopTimer()
	roundTrip(t0 + int64(b.N))
	if hw, end := l.HighWatermark(), l.Log().LogEndOffset(); hw != end {
		b.Fatalf("leader HW %d, log end %d", hw, end)
	}
}

// BenchmarkManagerFetchRoundTrip: the same through the Managers, as the
// Runner drives them: Ready's Fetch v12, HandleFetch (records copied into the
// kmsg response), FetchResponse. In-memory filesystems.
func BenchmarkManagerFetchRoundTrip(b *testing.B) {
	newM := func(id int32) *Manager {
		fs := vfs.NewMem()
		fs.MkdirAll("/data", 0o755)
		m, err := NewManager(*testConfig(id, fs, "/data"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	m1, m2 := newM(1), newM(2)
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerEpoch = 5, 1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = testTopic
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Leader, ps.ISR, ps.Replicas = 1, []int32{1, 2}, []int32{1, 2}
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	m1.LeaderAndIsr(req, t0)
	m2.LeaderAndIsr(req, t0)
	l := m1.Partition(testTopic, 0)
	batch := benchBatch(b, 10, 100)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := t0 + int64(i)
		if _, err := l.AppendAsLeader(batch, -1, 2, now); err != nil {
			b.Fatal(err)
		}
		r := m2.Ready(now)
		if len(r.Fetches) != 1 {
			b.Fatalf("fetches %d", len(r.Fetches))
		}
		f := r.Fetches[0]
		m2.FetchResponse(f.Target, f.Req, m1.HandleFetch(f.Req, now), nil, now)
	}
}
