package server

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/stratalog/strata/internal/metrics"
)

// startSummary starts the summary loop when strata.log.summary.interval.ms
// is positive.
func (s *Server) startSummary() {
	if s.cfg.LogSummaryIntervalMs <= 0 {
		return
	}
	s.bgWG.Add(1)
	go s.summaryLoop(time.Duration(s.cfg.LogSummaryIntervalMs) * time.Millisecond)
}

// summaryLoop logs one summary line each interval until the broker closes.
func (s *Server) summaryLoop(every time.Duration) {
	defer s.bgWG.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	prev, prevAt := s.met.Totals(), time.Now()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			cur := s.met.Totals()
			s.logSummary(prev, cur, now.Sub(prevAt))
			prev, prevAt = cur, now
		}
	}
}

// logSummary writes the broker's one-line summary at info level: message,
// byte and request rates over the interval with the p99 produce and fetch
// time (these need the metrics registry: without strata.metrics.listener
// they are left out), then what the broker holds now: partitions, those it
// leads, under-replicated and offline ones, the ISR shrinks and expands of
// the interval, and the consumer groups it coordinates.
func (s *Server) logSummary(prev, cur metrics.Totals, dt time.Duration) {
	st := s.state()
	var parts, leaders, under, offline int
	for i := range st.Partitions {
		p := &st.Partitions[i]
		if p.Offline && st.IsController {
			offline++
		}
		if !p.Local {
			continue
		}
		parts++
		if p.IsLeader {
			leaders++
			if p.UnderReplicated {
				under++
			}
		}
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.Int("node_id", int(st.NodeID)), slog.Float64("interval_s", round(dt.Seconds(), 3)))
	if s.met != nil {
		sec := dt.Seconds()
		rate := func(a, b uint64) float64 { return round(float64(b-a)/sec, 1) }
		attrs = append(attrs,
			slog.Float64("messages_in_per_s", rate(prev.MessagesIn, cur.MessagesIn)),
			slog.Float64("bytes_in_per_s", rate(prev.BytesIn, cur.BytesIn)),
			slog.Float64("bytes_out_per_s", rate(prev.BytesOut, cur.BytesOut)),
			slog.Float64("requests_per_s", rate(prev.Requests, cur.Requests)),
			slog.Any("produce_p99_ms", p99(s.met.P99(0))),
			slog.Any("fetch_p99_ms", p99(s.met.P99(1))),
			slog.Uint64("isr_shrinks", cur.ISRShrinks-prev.ISRShrinks),
			slog.Uint64("isr_expands", cur.ISRExpands-prev.ISRExpands),
		)
	}
	attrs = append(attrs,
		slog.Int("partitions", parts),
		slog.Int("leaders", leaders),
		slog.Int("under_replicated", under),
		slog.Int("offline", offline),
		slog.Int("groups", len(st.Groups)),
	)
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "broker summary", attrs...)
}

// p99 is a quantile for the log: null in JSON (<nil> in text) when there was no
// request in the window, as JSON has no NaN.
func p99(v float64) any {
	if math.IsNaN(v) {
		return nil
	}
	return v
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
