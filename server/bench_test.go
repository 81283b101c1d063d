package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkKgoProduceConsume drives the broker with franz-go as the issue's
// bench does (acks=1, default batching, no compression, 100-byte records,
// one partition) and reports records/s both ways. b.N is the record count.
func BenchmarkKgoProduceConsume(b *testing.B) {
	s := startServer(b, b.TempDir())
	newTopic(b, s, "bench", 1)
	cl := newClient(b, s, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("bench"))
	val := make([]byte, 100)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	prod := time.Since(start)
	start = time.Now()
	got := consumeAll(b, s, "bench", []int32{0}, b.N)
	cons := time.Since(start)
	b.StopTimer()
	if len(got) < b.N {
		b.Fatalf("consumed %d", len(got))
	}
	b.ReportMetric(float64(b.N)/prod.Seconds(), "produce_rec/s")
	b.ReportMetric(float64(b.N)/cons.Seconds(), "consume_rec/s")
}
