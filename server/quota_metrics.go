package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Client quota metrics, named as Prometheus's JMX exporter names Kafka's
// per-client quota MBeans (kafka.server:type=Produce|Fetch|Request,
// user=U,client-id=C): for each client rate a quota applies to, its rate
// (byte-rate; request-time, in percent of a thread) and the average
// throttle time in ms given over the quota window (throttle-time). The
// labels are the rate's tags: a part the matched entity leaves out is "".
var (
	quotaLabels = []string{"user", "client_id"}
	dQuotaRate  = [numQuotaKinds]*prometheus.Desc{
		prometheus.NewDesc("kafka_server_produce_byte_rate", "Produce bytes per second of a client under a producer_byte_rate quota (Produce byte-rate).", quotaLabels, nil),
		prometheus.NewDesc("kafka_server_fetch_byte_rate", "Fetch response bytes per second of a client under a consumer_byte_rate quota (Fetch byte-rate).", quotaLabels, nil),
		prometheus.NewDesc("kafka_server_request_request_time", "Request serving time, in percent of one thread, of a client under a request_percentage quota (Request request-time).", quotaLabels, nil),
	}
	dQuotaThrottle = [numQuotaKinds]*prometheus.Desc{
		prometheus.NewDesc("kafka_server_produce_throttle_time", "Average throttle time in ms given a client's produce requests over the quota window (Produce throttle-time).", quotaLabels, nil),
		prometheus.NewDesc("kafka_server_fetch_throttle_time", "Average throttle time in ms given a client's fetch requests over the quota window (Fetch throttle-time).", quotaLabels, nil),
		prometheus.NewDesc("kafka_server_request_throttle_time", "Average throttle time in ms given a client's requests for request_percentage over the quota window (Request throttle-time).", quotaLabels, nil),
	}
)

// quotaCollector exports the quota manager's rates at each scrape.
type quotaCollector struct{ q *quotaManager }

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for k := range dQuotaRate {
		ch <- dQuotaRate[k]
		ch <- dQuotaThrottle[k]
	}
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	q := c.q
	now := q.now().UnixMilli()
	q.smu.Lock()
	defer q.smu.Unlock()
	for key, r := range q.sensors {
		r.mu.Lock()
		rate, _ := r.rate(now, q.windowMs)
		thr := r.avgThrottle(now, q.windowMs)
		r.mu.Unlock()
		ch <- prometheus.MustNewConstMetric(dQuotaRate[key.kind], prometheus.GaugeValue, rate, key.user, key.client)
		ch <- prometheus.MustNewConstMetric(dQuotaThrottle[key.kind], prometheus.GaugeValue, thr, key.user, key.client)
	}
}
