package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
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
