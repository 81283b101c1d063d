package metrics

import (
	"math"
	"sync/atomic"
	"time"
)

// API keys and versions the request table holds; larger ones are counted
// under the last slot (no Kafka API is near either bound).
const (
	maxKeys     = 128
	maxVersions = 32
)

// RequestTimes are the six RequestMetrics histograms of one API.
type RequestTimes struct {
	Total, RequestQueue, Local, Remote, ResponseQueue, ResponseSend Latency
}

// requestTable holds RequestsPerSec per (API, version) and the time
// histograms per API, allocated at an API's first request.
type requestTable struct {
	count [maxKeys][maxVersions]atomic.Uint64
	times [maxKeys]atomic.Pointer[RequestTimes]
	// busyNs is the handlers' time spent serving (local time), for the
	// request handler idle ratio.
	busyNs atomic.Int64
}

// Span is what one request took, split as Kafka's RequestMetrics:
// RequestQueue waiting before the handler ran (here: for
// queued.max.request.bytes memory), Local in the handler, Remote parked in a
// purgatory (acks=all, fetch long poll), ResponseQueue between the handler
// and the network (none here: the handler writes its own response), Send
// writing the response.
type Span struct {
	RequestQueue, Local, Remote, ResponseQueue, Send time.Duration
}

func clampKey(key, version int16) (int, int) {
	k, v := int(key), int(version)
	if k < 0 || k >= maxKeys {
		k = maxKeys - 1
	}
	if v < 0 || v >= maxVersions {
		v = maxVersions - 1
	}
	return k, v
}

// Request records one served request. It allocates only at an API's first
// request.
func (r *Registry) Request(key, version int16, sp *Span) {
	if r == nil {
		return
	}
	k, v := clampKey(key, version)
	r.req.count[k][v].Add(1)
	t := r.req.times[k].Load()
	if t == nil {
		t = new(RequestTimes)
		if !r.req.times[k].CompareAndSwap(nil, t) {
			t = r.req.times[k].Load()
		}
	}
	t.RequestQueue.Observe(sp.RequestQueue)
	t.Local.Observe(sp.Local)
	t.Remote.Observe(sp.Remote)
	t.ResponseQueue.Observe(sp.ResponseQueue)
	t.ResponseSend.Observe(sp.Send)
	t.Total.Observe(sp.RequestQueue + sp.Local + sp.Remote + sp.ResponseQueue + sp.Send)
	r.req.busyNs.Add(int64(sp.Local))
}

// Times returns an API's histograms, nil before its first request.
func (r *Registry) Times(key int16) *RequestTimes {
	k, _ := clampKey(key, 0)
	return r.req.times[k].Load()
}

// Requests is the number of requests served for (key, version).
func (r *Registry) Requests(key, version int16) uint64 {
	k, v := clampKey(key, version)
	return r.req.count[k][v].Load()
}

// Totals are the registry's cumulative counts, for rates over an interval
// (the broker's summary log line).
type Totals struct {
	MessagesIn, BytesIn, BytesOut, Requests uint64
	ISRShrinks, ISRExpands                  uint64
}

// Totals sums the topics' meters and the request counts (a scan of the
// tables: for a periodic reader, not the hot path).
func (r *Registry) Totals() Totals {
	var t Totals
	if r == nil {
		return t
	}
	r.topics.each(func(_ string, s *TopicStats) {
		t.MessagesIn += s.MessagesIn.Load()
		t.BytesIn += s.BytesIn.Load()
		t.BytesOut += s.BytesOut.Load()
	})
	for k := range r.req.count {
		for v := range r.req.count[k] {
			t.Requests += r.req.count[k][v].Load()
		}
	}
	t.ISRShrinks, t.ISRExpands = r.ISRShrinks.Load(), r.ISRExpands.Load()
	return t
}

// P99 is the 99th percentile of an API's total request time in
// milliseconds over the quantile window; NaN before its first request or
// with none in the window.
func (r *Registry) P99(key int16) float64 {
	out := []float64{math.NaN()}
	if r == nil {
		return out[0]
	}
	if t := r.Times(key); t != nil {
		t.Total.Quantiles([]float64{0.99}, out)
	}
	return out[0]
}
