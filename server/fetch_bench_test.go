package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetchSendfile measures Fetch round trips over loopback whose
// records (64 KiB, above fetchInlineMax) go with sendfile: the per-response
// cost of framing, the header pieces and the region.
func BenchmarkFetchSendfile(b *testing.B) {
	s := startServer(b, b.TempDir())
	r := newTopic(b, s, "fs", 1)
	for i := range 16 {
		p := r.roundTrip(produceRequest("fs", 0, makeBatch(b, 1, 4000), 9), int32(i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			b.Fatal(p.ErrorCode)
		}
	}
	req := fetchRequest(12, "fs", 0, 0)
	req.MaxWaitMillis = 0
	b.SetBytes(16 * 4000)
	b.ResetTimer()
	for i := range b.N {
		r.send(req, int32(i))
		if _, err := r.readFrame(); err != nil {
			b.Fatal(err)
		}
	}
}
