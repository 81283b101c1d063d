package metrics

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchFollowerKey is the request-table slot of fetches from followers:
// Kafka's RequestMetrics split Fetch into FetchConsumer and FetchFollower.
const FetchFollowerKey int16 = maxKeys - 2

// Quantiles are the RequestMetrics percentiles Kafka's histograms publish
// (50th, 75th, 95th, 98th, 99th, 99.9th).
var Quantiles = []float64{0.5, 0.75, 0.95, 0.98, 0.99, 0.999}

// kafkaNames are Kafka's ApiKeys names where kmsg spells them differently.
var kafkaNames = map[int16]string{
	1: "FetchConsumer", 4: "LeaderAndIsr", 17: "SaslHandshake", 22: "InitProducerId",
	29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls", 36: "SaslAuthenticate",
	50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials", 67: "AllocateProducerIds",
}

// RequestName is the request label of an API key as Kafka's RequestMetrics
// name it.
func RequestName(key int16) string {
	if key == FetchFollowerKey {
		return "FetchFollower"
	}
	if n, ok := kafkaNames[key]; ok {
		return n
	}
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return "Unknown" + strconv.Itoa(int(key))
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	topicLabel = []string{"topic"}
	dMsgIn     = desc("kafka_server_brokertopicmetrics_messagesin_total", "Messages appended by produce requests (MessagesInPerSec).", topicLabel...)
	dBytesIn   = desc("kafka_server_brokertopicmetrics_bytesin_total", "Record bytes received by produce requests (BytesInPerSec).", topicLabel...)
	dBytesOut  = desc("kafka_server_brokertopicmetrics_bytesout_total", "Record bytes sent to consumers (BytesOutPerSec).", topicLabel...)
	dFailProd  = desc("kafka_server_brokertopicmetrics_failedproducerequests_total", "Produce partitions answered with an error (FailedProduceRequestsPerSec).", topicLabel...)
	dFailFetch = desc("kafka_server_brokertopicmetrics_failedfetchrequests_total", "Fetch partitions answered with an error (FailedFetchRequestsPerSec).", topicLabel...)
	dTotProd   = desc("kafka_server_brokertopicmetrics_totalproducerequests_total", "Produce partitions served (TotalProduceRequestsPerSec).", topicLabel...)
	dTotFetch  = desc("kafka_server_brokertopicmetrics_totalfetchrequests_total", "Fetch partitions served (TotalFetchRequestsPerSec).", topicLabel...)
	dReplOut   = desc("kafka_server_brokertopicmetrics_replicationbytesout_total", "Record bytes sent to follower replicas (ReplicationBytesOutPerSec).")

	dRequests = desc("kafka_network_requestmetrics_requests_total", "Requests served (RequestMetrics RequestsPerSec).", "request", "version")
	dTimes    = [6]*prometheus.Desc{
		desc("kafka_network_requestmetrics_totaltimems", "Request total time in ms: request queue + local + remote + response queue + send (TotalTimeMs).", "request"),
		desc("kafka_network_requestmetrics_requestqueuetimems", "Time in ms a request waited before its handler ran: for queued.max.request.bytes (RequestQueueTimeMs).", "request"),
		desc("kafka_network_requestmetrics_localtimems", "Time in ms the handler worked on a request (LocalTimeMs).", "request"),
		desc("kafka_network_requestmetrics_remotetimems", "Time in ms a request was parked in a purgatory: acks=all, fetch long poll (RemoteTimeMs).", "request"),
		desc("kafka_network_requestmetrics_responsequeuetimems", "Time in ms between handler and network; zero in strata, whose handler writes its response (ResponseQueueTimeMs).", "request"),
		desc("kafka_network_requestmetrics_responsesendtimems", "Time in ms writing the response (ResponseSendTimeMs).", "request"),
	}

	dFlush      = desc("kafka_log_logflushstats_logflushrateandtimems", "Partition log fsync groups and their time in ms (LogFlushRateAndTimeMs).")
	dAppendSec  = desc("strata_log_append_seconds", "Latency of the partition log's Append on the produce path (validation excluded).")
	dFsyncSec   = desc("strata_log_fsync_seconds", "Latency of a partition log's fsync group (data, indexes, directory).")
	dShrinks    = desc("kafka_server_replicamanager_isrshrinks_total", "ISR shrinks accepted by the controller for partitions this broker leads (IsrShrinksPerSec).")
	dExpands    = desc("kafka_server_replicamanager_isrexpands_total", "ISR expansions accepted by the controller for partitions this broker leads (IsrExpandsPerSec).")
	dElections  = desc("kafka_controller_controllerstats_leaderelectionrateandtimems", "Controller events on this broker that elected leaders for offline partitions (a broker's failure, a log dir's, an unclean ElectLeaders) and the ms each took to handle, ZooKeeper writes included (LeaderElectionRateAndTimeMs).")
	dUnclean    = desc("kafka_controller_controllerstats_uncleanleaderelections_total", "Leaders elected from outside the ISR by the controller on this broker (UncleanLeaderElectionsPerSec).")
	dPurgatory  = desc("kafka_server_delayedoperationpurgatory_purgatorysize", "Requests parked now waiting for a condition (PurgatorySize).", "delayedoperation")
	dIdle       = desc("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", "Share of request-handling capacity idle over the last 5 s, 0 to 1: 1 - serving time / (GOMAXPROCS x 5 s) (RequestHandlerAvgIdlePercent).")
	secondsBkts = []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// brokerCollector turns the registry's counters and histograms into
// Prometheus metrics at scrape time.
type brokerCollector struct{ r *Registry }

// Describe sends nothing: an unchecked collector (its label values are only
// known at scrape).
func (brokerCollector) Describe(chan<- *prometheus.Desc) {}

func (c brokerCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	var repl uint64
	r.topics.each(func(name string, t *TopicStats) {
		counter(ch, dMsgIn, t.MessagesIn.Load(), name)
		counter(ch, dBytesIn, t.BytesIn.Load(), name)
		counter(ch, dBytesOut, t.BytesOut.Load(), name)
		counter(ch, dFailProd, t.FailedProduce.Load(), name)
		counter(ch, dFailFetch, t.FailedFetch.Load(), name)
		counter(ch, dTotProd, t.TotalProduce.Load(), name)
		counter(ch, dTotFetch, t.TotalFetch.Load(), name)
		repl += t.ReplicationOut.Load()
	})
	counter(ch, dReplOut, repl)
	var fetchCounts [maxVersions]uint64 // "Fetch": consumers and followers
	for k := range r.req.count {
		name := ""
		for v := range r.req.count[k] {
			if n := r.req.count[k][v].Load(); n > 0 {
				if name == "" {
					name = RequestName(int16(k))
				}
				counter(ch, dRequests, n, name, strconv.Itoa(v))
				if k == 1 || k == int(FetchFollowerKey) {
					fetchCounts[v] += n
				}
			}
		}
		if t := r.req.times[k].Load(); t != nil {
			for i, l := range []*Latency{&t.Total, &t.RequestQueue, &t.Local, &t.Remote, &t.ResponseQueue, &t.ResponseSend} {
				summaryMs(ch, dTimes[i], l, RequestName(int16(k)))
			}
		}
	}
	for v, n := range fetchCounts {
		if n > 0 {
			counter(ch, dRequests, n, "Fetch", strconv.Itoa(v))
		}
	}
	if f := mergeTimes(r.req.times[1].Load(), r.req.times[FetchFollowerKey].Load()); f != nil {
		for i, l := range []*Latency{&f.Total, &f.RequestQueue, &f.Local, &f.Remote, &f.ResponseQueue, &f.ResponseSend} {
			summaryMs(ch, dTimes[i], l, "Fetch")
		}
	}
	summaryMs(ch, dFlush, &r.LogFlush)
	histogramSeconds(ch, dAppendSec, &r.Append)
	histogramSeconds(ch, dFsyncSec, &r.LogFlush)
	counter(ch, dShrinks, r.ISRShrinks.Load())
	counter(ch, dExpands, r.ISRExpands.Load())
	summaryMs(ch, dElections, &r.LeaderElectionTime)
	counter(ch, dUnclean, r.UncleanElections.Load())
	gauge(ch, dPurgatory, float64(r.PurgatoryProduce.Load()), "Produce")
	gauge(ch, dPurgatory, float64(r.PurgatoryFetch.Load()), "Fetch")
	gauge(ch, dIdle, r.HandlerIdleRatio())
}

// Counter and Gauge send one const metric.
func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Gauge is gauge for the broker's scrape-time collectors.
func Gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	gauge(ch, d, v, labels...)
}

// Counter is counter for the broker's scrape-time collectors.
func Counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	counter(ch, d, v, labels...)
}

// summaryMs sends l as a summary in milliseconds: Quantiles over the window,
// cumulative count and sum.
func summaryMs(ch chan<- prometheus.Metric, d *prometheus.Desc, l *Latency, labels ...string) {
	out := make([]float64, len(Quantiles))
	l.Quantiles(Quantiles, out)
	q := make(map[float64]float64, len(Quantiles))
	for i, v := range Quantiles {
		q[v] = out[i]
	}
	ch <- prometheus.MustNewConstSummary(d, l.Count(), float64(l.Sum())/1e6, q, labels...)
}

// histogramSeconds sends l as a cumulative histogram in seconds over
// secondsBkts; an observation counts in the first bound at or above its
// bucket's upper edge (within a quarter of its value).
func histogramSeconds(ch chan<- prometheus.Metric, d *prometheus.Desc, l *Latency) {
	var counts [numBuckets]uint64
	var total uint64
	for i := range l.buckets {
		counts[i] = l.buckets[i].Load()
		total += counts[i]
	}
	b := make(map[float64]uint64, len(secondsBkts))
	var cum uint64
	i := 0
	for _, bound := range secondsBkts {
		for i < numBuckets && bucketUpper(i)/1e6 <= bound {
			cum += counts[i]
			i++
		}
		b[bound] = cum
	}
	ch <- prometheus.MustNewConstHistogram(d, total, l.Sum().Seconds(), b)
}

// mergeTimes adds two APIs' histograms (Kafka's "Fetch" series covers
// both FetchConsumer and FetchFollower), nil when neither has served.
func mergeTimes(a, b *RequestTimes) *RequestTimes {
	if a == nil && b == nil {
		return nil
	}
	m := new(RequestTimes)
	ls := func(t *RequestTimes) []*Latency {
		return []*Latency{&t.Total, &t.RequestQueue, &t.Local, &t.Remote, &t.ResponseQueue, &t.ResponseSend}
	}
	for _, t := range []*RequestTimes{a, b} {
		if t == nil {
			continue
		}
		for i, l := range ls(t) {
			ls(m)[i].add(l)
		}
	}
	return m
}

var nan = math.NaN()

func f64bits(f float64) uint64     { return math.Float64bits(f) }
func f64frombits(u uint64) float64 { return math.Float64frombits(u) }
