package server

import (
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// produceFrame is a whole Produce v9 request frame body (header and body,
// without the size prefix) holding one batch of n records of size bytes, as
// franz-go sends them.
func produceFrame(t testing.TB, topic string, n, size int) []byte {
	t.Helper()
	req := produceRequest(topic, 0, makeBatch(t, n, size), 9)
	req.Acks = 1
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, 5)
	b = append(b, "bench"...)
	b = append(b, 0) // header tags
	return req.AppendTo(b)
}

// BenchmarkHandleProduce measures the broker's whole produce path for one
// franz-go-sized request (9,000 records of 100 bytes, ~1 MB): header and
// body parsing, validation, append to a real log, response encoding. The
// response goes to a discarding connection. records/s is the broker's
// ceiling on one core.
// With metrics on (the /metrics sub-benchmarks) it shows what the
// request's measures cost: allocs/op and cpu-ns/record beside the off ones.
func BenchmarkHandleProduce(b *testing.B) {
	for _, mode := range []string{"full", "header", "full/metrics-on", "full/metrics-off"} {
		b.Run(mode, func(b *testing.B) {
			// metrics-off is the broker as strata bench broker --metrics
			// both runs its off broker: no registry and no slow-request
			// log, so requests are not timed at all.
			listener, slow := "strata.metrics.listener=", "strata.request.slow.ms=-1"
			if strings.HasSuffix(mode, "/metrics-on") {
				listener, slow = listener+"127.0.0.1:0", "strata.request.slow.ms=1000"
			}
			s := startServer(b, b.TempDir(), "strata.produce.validation="+strings.Split(mode, "/")[0], "log.segment.bytes=1073741824", listener, slow)
			if strings.Contains(mode, "/metrics-") && s.timed != strings.HasSuffix(mode, "/metrics-on") {
				b.Fatalf("%s: timed %v", mode, s.timed)
			}
			newTopic(b, s, "hp", 1)
			const n = 9000
			frame := produceFrame(b, "hp", n, 100)
			c := &conn{s: s, nc: discardConn{}, log: s.log}
			work := make([]byte, len(frame))
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			cpu := threadCPU()
			for range b.N {
				copy(work, frame) // the log patches the batch in place
				if err := c.handle(work); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecord(b, n, threadCPU()-cpu)
		})
	}
}

// BenchmarkHandleProduceMetricsPerRequest is BenchmarkHandleProduce's
// metrics pair with requests of 10 records, so that what a request's
// measures cost (clock reads, RequestMetrics, BrokerTopicMetrics, the
// append histogram) is not lost beside the records' own work: the
// difference of the pair's cpu-ns/request is that cost, which a 1 MB
// produce request (~9,000 records) pays once.
func BenchmarkHandleProduceMetricsPerRequest(b *testing.B) {
	for _, mode := range []string{"metrics-on", "metrics-off"} {
		b.Run(mode, func(b *testing.B) {
			listener, slow := "strata.metrics.listener=", "strata.request.slow.ms=-1"
			if mode == "metrics-on" {
				listener, slow = listener+"127.0.0.1:0", "strata.request.slow.ms=1000"
			}
			s := startServer(b, b.TempDir(), "strata.produce.validation=full", "log.segment.bytes=1073741824", listener, slow)
			if s.timed != (mode == "metrics-on") {
				b.Fatalf("%s: timed %v", mode, s.timed)
			}
			newTopic(b, s, "hp", 1)
			frame := produceFrame(b, "hp", 10, 100)
			c := &conn{s: s, nc: discardConn{}, log: s.log}
			work := make([]byte, len(frame))
			copy(work, frame)
			if err := c.handle(work); err != nil { // the API's first request makes its histograms
				b.Fatal(err)
			}
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			cpu := threadCPU()
			for range b.N {
				copy(work, frame)
				if err := c.handle(work); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((threadCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/request")
		})
	}
}

// BenchmarkValidateProduceBatch is the validation step alone.
func BenchmarkValidateProduceBatch(b *testing.B) {
	batch := makeBatch(b, 9000, 100)
	c := &conn{}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu := threadCPU()
	for range b.N {
		if code, msg := validateProduceBatch(c, 9, batch, true, false); code != 0 {
			b.Fatal(code, msg)
		}
	}
	reportPerRecord(b, 9000, threadCPU()-cpu)
}

// reportPerRecord reports records/s (wall clock) and CPU ns per record: the
// benchmark's thread CPU time, which a busy machine disturbs far less than
// the wall clock.
func reportPerRecord(b *testing.B, perOp int, cpu time.Duration) {
	recs := float64(perOp) * float64(b.N)
	b.ReportMetric(recs/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/recs, "cpu-ns/record")
}

// threadCPU is the calling thread's CPU time; the benchmarks lock their
// goroutine to the thread (runtime.LockOSThread) around the measurement.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// discardConn is a connection whose writes vanish; only what handle uses
// is implemented.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
