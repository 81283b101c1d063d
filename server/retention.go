package server

import (
	"errors"
	"time"

	"github.com/stratalog/strata/segment"
)

// retainer is implemented by logs that apply their retention settings
// (*segment.Log does).
type retainer interface {
	ApplyRetention() (int, error)
}

// retentionLoop applies every partition's retention (retention.ms,
// retention.bytes, the log start offset) each log.retention.check.interval.ms,
// as Kafka's log manager does, until shutdown.
func (s *Server) retentionLoop() {
	defer s.bgWG.Done()
	t := time.NewTicker(time.Duration(s.cfg.RetentionCheckMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.applyRetention()
		}
	}
}

func (s *Server) applyRetention() {
	for _, t := range s.topics.all() {
		for _, p := range t.parts {
			r, ok := p.log.(retainer)
			if !ok {
				continue
			}
			n, err := r.ApplyRetention()
			switch {
			case errors.Is(err, segment.ErrClosed):
				return
			case err != nil:
				s.log.Error("retention failed", "topic", p.topic, "partition", p.index, "error", err)
			case n > 0:
				s.log.Info("retention deleted segments", "topic", p.topic, "partition", p.index,
					"segments", n, "log_start_offset", p.log.LogStartOffset())
			}
		}
	}
}
