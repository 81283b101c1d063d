package metrics

import (
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TickInterval is how often the registry samples its history (the status
// page's charts) and moves the quantile windows on (every ticksPerWindow
// ticks).
const (
	TickInterval   = 5 * time.Second
	ticksPerWindow = 3
	historyLen     = 120 // 10 minutes of TickInterval samples
)

// Registry holds a broker's measures: the counters and histograms the hot
// paths update (atomics only), the scrape-time collectors the broker
// registers for its state, and a Prometheus registry with the Go runtime
// and process collectors. A nil *Registry ignores every update (metrics
// off).
type Registry struct {
	reg    *prometheus.Registry
	topics topicTable
	req    requestTable

	// LogFlush is LogFlushRateAndTimeMs: every fsync group of a partition log.
	LogFlush Latency
	// Append is strata's append latency (validation excluded): the log's
	// Append call on the produce path.
	Append Latency

	ISRShrinks, ISRExpands atomic.Uint64
	// LeaderElections and UncleanElections count the leaders the
	// controller on this broker elected for offline partitions.
	LeaderElections, UncleanElections atomic.Uint64
	// LeaderElectionTime is LeaderElectionRateAndTimeMs: the controller's
	// handling of each event that elected leaders for offline partitions
	// (its step and ZooKeeper writes).
	LeaderElectionTime Latency
	// PurgatoryProduce and PurgatoryFetch are the requests parked now:
	// acks=all produces waiting for the ISR, fetches waiting for min.bytes.
	PurgatoryProduce, PurgatoryFetch atomic.Int64

	idle atomic.Uint64 // float64 bits: handler idle ratio of the last tick

	mu      sync.Mutex
	hist    []Sample
	last    Sample
	lastAt  time.Time
	lastBsy int64
	ticks   int
	started bool
	stop    chan struct{}
	stopped sync.WaitGroup
}

// Sample is one point of the status page's charts.
type Sample struct {
	At            time.Time
	MessagesIn    uint64  // cumulative
	BytesIn       uint64  // cumulative
	BytesOut      uint64  // cumulative
	MsgRate       float64 // per second over the tick
	BytesInRate   float64
	BytesOutRate  float64
	ProduceP99Ms  float64 // over the quantile window, NaN with no request
	FetchP99Ms    float64
	HandlerIdle   float64
	ProduceCount  uint64
	FetchRequests uint64
}

// New makes a registry; Start starts its ticker and Close stops it.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), stop: make(chan struct{})}
	r.idle.Store(f64bits(1))
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.reg.MustRegister(brokerCollector{r})
	r.lastAt = time.Now()
	return r
}

// Start starts the ticker (history samples, quantile windows); once.
func (r *Registry) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	r.stopped.Add(1)
	go r.loop()
}

// Register adds a scrape-time collector (the broker's state).
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Gatherer is the Prometheus registry, for tests and the handler.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves /metrics in Prometheus' text format (or OpenMetrics or
// protobuf when the scraper asks for them).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Topic returns a topic's BrokerTopicMetrics (no lock, no allocation once
// the topic has been seen).
func (r *Registry) Topic(name string) *TopicStats { return r.topics.Topic(name) }

// ForgetTopic drops a deleted topic's series.
func (r *Registry) ForgetTopic(name string) { r.topics.Forget(name) }

// RetainTopics drops the series of every topic keep says is gone.
func (r *Registry) RetainTopics(keep func(string) bool) { r.topics.retain(keep) }

// Close stops the ticker.
func (r *Registry) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.mu.Unlock()
	r.stopped.Wait()
}

func (r *Registry) loop() {
	defer r.stopped.Done()
	t := time.NewTicker(TickInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.Tick(now)
		}
	}
}

// Tick takes a history sample and, every ticksPerWindow ticks, moves the
// quantile windows on. The ticker calls it; tests call it to get samples
// without waiting.
func (r *Registry) Tick(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks++
	if r.ticks%ticksPerWindow == 0 {
		r.eachLatency(func(l *Latency) { l.Tick() })
	}
	s := Sample{At: now}
	r.topics.each(func(_ string, t *TopicStats) {
		s.MessagesIn += t.MessagesIn.Load()
		s.BytesIn += t.BytesIn.Load()
		s.BytesOut += t.BytesOut.Load()
	})
	dt := now.Sub(r.lastAt).Seconds()
	if dt > 0 {
		s.MsgRate = float64(s.MessagesIn-r.last.MessagesIn) / dt
		s.BytesInRate = float64(s.BytesIn-r.last.BytesIn) / dt
		s.BytesOutRate = float64(s.BytesOut-r.last.BytesOut) / dt
		busy := r.req.busyNs.Load()
		capacity := dt * 1e9 * float64(runtime.GOMAXPROCS(0))
		idle := 1 - float64(busy-r.lastBsy)/capacity
		r.idle.Store(f64bits(min(max(idle, 0), 1)))
		r.lastBsy = busy
	}
	qs, out := []float64{0.99}, []float64{0}
	s.ProduceP99Ms, s.FetchP99Ms = nan, nan
	if t := r.Times(0); t != nil { // Produce
		t.Total.Quantiles(qs, out)
		s.ProduceP99Ms = out[0]
	}
	if t := r.Times(1); t != nil { // Fetch
		t.Total.Quantiles(qs, out)
		s.FetchP99Ms = out[0]
	}
	s.HandlerIdle = f64frombits(r.idle.Load())
	r.last, r.lastAt = s, now
	r.hist = append(r.hist, s)
	if len(r.hist) > historyLen {
		r.hist = append(r.hist[:0], r.hist[len(r.hist)-historyLen:]...)
	}
}

// History is a copy of the samples of the last minutes, oldest first.
func (r *Registry) History() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Sample(nil), r.hist...)
}

// HandlerIdleRatio is the request handlers' idle share of the last tick:
// 1 − (time spent serving requests) / (GOMAXPROCS × the tick). strata has no
// handler pool (each connection serves its own requests), so the CPUs stand
// for Kafka's num.io.threads.
func (r *Registry) HandlerIdleRatio() float64 { return f64frombits(r.idle.Load()) }

func (r *Registry) eachLatency(f func(*Latency)) {
	f(&r.LogFlush)
	f(&r.Append)
	f(&r.LeaderElectionTime)
	for k := range r.req.times {
		if t := r.req.times[k].Load(); t != nil {
			f(&t.Total)
			f(&t.RequestQueue)
			f(&t.Local)
			f(&t.Remote)
			f(&t.ResponseQueue)
			f(&t.ResponseSend)
		}
	}
}
