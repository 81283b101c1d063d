package server

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/metrics"
	"github.com/stratalog/strata/record"
)

// startMetrics makes the registry when strata.metrics.listener is set (the
// hot paths skip every measure when it is not). Called before the logs
// open: their flushes report to it.
func (s *Server) startMetrics() {
	if s.cfg.MetricsListener == "" {
		return
	}
	s.met = metrics.New()
	s.cfg.metrics = s.met
	_ = s.met.Register(stateCollector{s})
}

// serveMetrics binds strata.metrics.listener and serves /metrics and the
// status page. A listener that cannot bind (the port is taken: another
// broker on the machine) is logged as an error and the broker serves Kafka
// without it: the metrics endpoint is not worth refusing clients over.
func (s *Server) serveMetrics() {
	if s.met == nil {
		return
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsListener)
	if err != nil {
		s.log.Error("metrics listener not started: /metrics and the status page are off", "strata.metrics.listener", s.cfg.MetricsListener, "error", err)
		return
	}
	s.met.Start()
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.met.Handler())
	mux.HandleFunc("/", s.serveStatus)
	s.metricsLn = ln
	s.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		if err := s.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener failed", "error", err)
		}
	}()
	s.log.Info("serving metrics", "address", "http://"+ln.Addr().String()+"/metrics", "status", "http://"+ln.Addr().String()+"/")
}

// stopMetrics closes the metrics listener and the registry's ticker.
func (s *Server) stopMetrics() {
	if s.metricsSrv != nil {
		_ = s.metricsSrv.Close()
	}
	s.met.Close()
}

// MetricsAddr is the bound address of strata.metrics.listener, nil when it
// is off or did not bind.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// Metrics is the broker's registry, nil when metrics are off.
func (s *Server) Metrics() *metrics.Registry { return s.met }

// noteProduce counts one produce partition: its records and bytes when it
// was appended, a failure otherwise.
func (s *Server) noteProduce(topic string, code int16, recs []byte) {
	if s.met == nil || s.unknownTopic(topic, code) {
		return
	}
	t := s.met.Topic(topic)
	t.TotalProduce.Add(1)
	if code != 0 {
		t.FailedProduce.Add(1)
		return
	}
	t.BytesIn.Add(uint64(len(recs)))
	if len(recs) >= record.BatchHeaderSize {
		t.MessagesIn.Add(uint64(record.Batch(recs).NumRecords()))
	}
}

// unknownTopic: the request named a topic the broker does not know; it
// gets no series of its own (a client could make up any number of names).
// Only error codes lead to the lookup.
func (s *Server) unknownTopic(name string, code int16) bool {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code:
	default:
		return false
	}
	if s.cl != nil {
		return s.cl.images.load().topics[name] == nil
	}
	return s.topics.get(name) == nil
}

// noteFetch counts a fetch response's partitions and record bytes per
// topic; a follower's bytes are replication bytes, as in Kafka.
func (s *Server) noteFetch(req *kmsg.FetchRequest, topics []fetchTopic) {
	if s.met == nil {
		return
	}
	follower := req.ReplicaID >= 0
	for i := range topics {
		ft := &topics[i]
		if len(ft.parts) > 0 && s.unknownTopic(ft.name, ft.parts[0].code) {
			continue // no series for names clients make up
		}
		t := s.met.Topic(ft.name)
		var bytes, failed uint64
		for j := range ft.parts {
			bytes += uint64(ft.parts[j].region.Len)
			if ft.parts[j].code != 0 {
				failed++
			}
		}
		t.TotalFetch.Add(uint64(len(ft.parts)))
		if failed > 0 {
			t.FailedFetch.Add(failed)
		}
		if follower {
			t.ReplicationOut.Add(bytes)
		} else {
			t.BytesOut.Add(bytes)
		}
	}
}

// metricsStart is time.Now when metrics are on (the zero time otherwise:
// no clock read on the hot path).
func (s *Server) metricsStart() time.Time {
	if s.met == nil {
		return time.Time{}
	}
	return time.Now()
}

// noteAppend records the log append latency since began (metricsStart).
func (s *Server) noteAppend(began time.Time) {
	if s.met != nil {
		s.met.Append.Observe(time.Since(began))
	}
}

// parked brackets a purgatory wait: it counts the request in the produce
// or fetch purgatory gauge and adds the wait to the connection's remote
// time.
func (c *conn) parked(produce bool, wait func()) {
	if !c.quota.began.IsZero() { // request_percentage leaves parked time out
		began := time.Now()
		defer func() { c.quota.parked += time.Since(began) }()
	}
	m := c.s.met
	if m == nil {
		wait()
		return
	}
	g := &m.PurgatoryFetch
	if produce {
		g = &m.PurgatoryProduce
	}
	g.Add(1)
	began := time.Now()
	wait()
	c.remote += time.Since(began)
	g.Add(-1)
}
