// Package metrics holds a broker's measures and serves them to Prometheus
// under the names Kafka's JMX MBeans get from the Prometheus JMX exporter
// with the widely used Kafka rules (Strimzi's), so that an existing Kafka
// Grafana dashboard works against strata unchanged. README.md's Metrics
// chapter has the table MBean → metric → what strata measures.
//
// Hot paths update plain atomics: per-topic BrokerTopicMetrics counters
// (TopicStats, found through a copy-on-write map: no lock, no allocation),
// per-(API, version) request counters and per-API Latency histograms. A
// Latency is a fixed array of log-linear buckets (four per power of two
// of microseconds) updated with atomic adds; its count and sum are
// cumulative and its quantiles cover a sliding window of the last minute
// (snapshots taken every 15 s), which is what a dashboard's p99 panel shows
// of Kafka's decaying histograms. The RequestMetrics time families are
// exported as Prometheus summaries in milliseconds (quantiles 0.5, 0.75,
// 0.95, 0.98, 0.99, 0.999); strata's own latencies (append, fsync) as
// histograms in seconds with a strata_ prefix.
//
// The Prometheus Go client (client_golang) does the exposition: registry,
// text and OpenMetrics formats, HELP/TYPE lines that pass `promtool check
// metrics`, and the Go runtime and process collectors. Its own Summary type
// takes a lock per observation, so the hot paths never touch it: the
// registry's collectors build const metrics from the atomics at scrape
// time. The broker adds a scrape-time collector for its state (partitions,
// leaders, ISR, log sizes, consumer lag) with Register.
//
// A nil *Registry is "metrics off": its update methods do nothing.
package metrics
