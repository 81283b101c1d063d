package server

import (
	"runtime"
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

// BenchmarkHandleFetch measures the broker's whole path for one consumer
// fetch (header and body parsing, the log read, response framing, the
// records copied to a discarding connection) of 1,000 records of 100
// bytes, with metrics on and off: the difference is what the request's
// measures (RequestMetrics' time split, BytesOut per topic) cost a fetch;
// cpu-ns/record is the serving thread's CPU time, steadier than the wall
// time on a loaded machine.
func BenchmarkHandleFetch(b *testing.B) {
	for _, mode := range []string{"metrics-on", "metrics-off"} {
		b.Run(mode, func(b *testing.B) {
			listener, slow := "strata.metrics.listener=", "strata.request.slow.ms=-1"
			if mode == "metrics-on" {
				listener, slow = listener+"127.0.0.1:0", "strata.request.slow.ms=1000"
			}
			s := startServer(b, b.TempDir(), listener, slow)
			r := newTopic(b, s, "hf", 1)
			if p := r.roundTrip(produceRequest("hf", 0, makeBatch(b, 1000, 100), 9), 1).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
				b.Fatal(p.ErrorCode)
			}
			if s.timed != (mode == "metrics-on") {
				b.Fatalf("%s: timed %v", mode, s.timed)
			}
			c := &conn{s: s, nc: discardConn{}, log: s.log}
			frame := fetchFrame(b, "hf")
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			cpu := threadCPU()
			for range b.N {
				if err := c.handle(frame); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecord(b, 1000, threadCPU()-cpu)
		})
	}
}
