package metrics

import (
	"sync"
	"sync/atomic"
)

// TopicStats are one topic's BrokerTopicMetrics meters (their counts).
type TopicStats struct {
	MessagesIn     atomic.Uint64
	BytesIn        atomic.Uint64
	BytesOut       atomic.Uint64
	FailedProduce  atomic.Uint64
	FailedFetch    atomic.Uint64
	TotalProduce   atomic.Uint64
	TotalFetch     atomic.Uint64
	ReplicationOut atomic.Uint64 // bytes fetched by followers (Kafka's ReplicationBytesOutPerSec)
}

// topicTable maps topic names to their stats. Lookups read a map behind an
// atomic pointer (no lock, no allocation); a new topic copies the map under
// mu, once per topic.
type topicTable struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]*TopicStats]
}

// Topic returns the stats of topic, created at its first use.
func (t *topicTable) Topic(name string) *TopicStats {
	if m := t.m.Load(); m != nil {
		if s := (*m)[name]; s != nil {
			return s
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old != nil {
		if s := (*old)[name]; s != nil {
			return s
		}
	}
	nm := make(map[string]*TopicStats, 1)
	if old != nil {
		for k, v := range *old {
			nm[k] = v
		}
	}
	s := new(TopicStats)
	nm[name] = s
	t.m.Store(&nm)
	return s
}

// Forget drops a deleted topic's series.
func (t *topicTable) Forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old == nil || (*old)[name] == nil {
		return
	}
	nm := make(map[string]*TopicStats, len(*old))
	for k, v := range *old {
		if k != name {
			nm[k] = v
		}
	}
	t.m.Store(&nm)
}

// retain drops the topics keep does not hold.
func (t *topicTable) retain(keep func(string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old == nil {
		return
	}
	nm := make(map[string]*TopicStats, len(*old))
	for k, v := range *old {
		if keep(k) {
			nm[k] = v
		}
	}
	if len(nm) < len(*old) {
		t.m.Store(&nm)
	}
}

// each calls f for every topic.
func (t *topicTable) each(f func(name string, s *TopicStats)) {
	if m := t.m.Load(); m != nil {
		for k, v := range *m {
			f(k, v)
		}
	}
}
