package metrics

import (
	"math"
	"testing"
	"time"
)

// TestBucketBounds: every duration lands in a bucket whose upper bound is
// above it and within a quarter of it, and buckets are in order.
func TestBucketBounds(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<22; us = us*5/4 + 1 {
		i := bucketOf(us)
		if i < prev {
			t.Fatalf("%dµs: bucket %d after %d", us, i, prev)
		}
		prev = i
		up := bucketUpper(i)
		if float64(us) >= up || up > float64(us)*1.25+1 {
			t.Fatalf("%dµs in bucket %d with upper bound %v", us, i, up)
		}
	}
	if i := bucketOf(math.MaxUint64); i != numBuckets-1 {
		t.Fatalf("largest duration in bucket %d", i)
	}
}

// TestQuantilesWindow: quantiles follow the observations, and forget them
// once the window has moved past them; count and sum stay cumulative.
func TestQuantilesWindow(t *testing.T) {
	var l Latency
	out := make([]float64, 2)
	l.Quantiles([]float64{0.5, 0.99}, out)
	if !math.IsNaN(out[0]) {
		t.Fatalf("empty window: %v", out)
	}
	for i := 1; i <= 100; i++ {
		l.Observe(time.Duration(i) * time.Millisecond)
	}
	l.Quantiles([]float64{0.5, 0.99}, out)
	if out[0] < 50 || out[0] > 50*1.25 || out[1] < 99 || out[1] > 99*1.25 {
		t.Fatalf("p50 %v p99 %v of 1..100 ms", out[0], out[1])
	}
	for range windowTicks {
		l.Tick()
	}
	l.Quantiles([]float64{0.5, 0.99}, out)
	if !math.IsNaN(out[0]) {
		t.Fatalf("window moved past every observation, p50 %v", out[0])
	}
	if l.Count() != 100 || l.Sum() != 5050*time.Millisecond {
		t.Fatalf("count %d sum %v", l.Count(), l.Sum())
	}
}

// TestRequestNoAllocs: recording a request and finding a known topic's
// stats allocate nothing.
func TestRequestNoAllocs(t *testing.T) {
	r := New()
	defer r.Close()
	sp := &Span{Local: time.Millisecond, Send: time.Microsecond}
	r.Request(0, 9, sp) // the API's first request makes its histograms
	r.Topic("t")
	name := string([]byte("t")) // not the same string header
	if n := testing.AllocsPerRun(1000, func() {
		r.Request(0, 9, sp)
		r.Topic(name).BytesIn.Add(10)
	}); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
	if got := r.Requests(0, 9); got != 1002 {
		t.Fatalf("requests %d", got)
	}
}

func BenchmarkRequest(b *testing.B) {
	r := New()
	defer r.Close()
	sp := &Span{Local: time.Millisecond, Send: time.Microsecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Request(0, 9, sp)
			r.Topic("t").BytesIn.Add(10)
		}
	})
}
