package tools

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRequestHook counts the transactional producer's requests by key and
// sums their round trips (write to response read), so the transactions
// phase can say where a transaction's time goes: the coordinator's
// requests (AddPartitionsToTxn, EndTxn, and their retries after
// CONCURRENT_TRANSACTIONS), the produce requests, and the rest (the
// client's own work and its backoffs).
type txnRequestHook struct {
	mu   sync.Mutex
	reqs map[int16]*txnRequestStat
}

// txnRequestStat is one request key's count and summed round trips.
type txnRequestStat struct {
	n   int64
	rtt time.Duration
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (h *txnRequestHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reqs == nil {
		h.reqs = map[int16]*txnRequestStat{}
	}
	st := h.reqs[key]
	if st == nil {
		st = &txnRequestStat{}
		h.reqs[key] = st
	}
	st.n++
	st.rtt += e2e.DurationE2E()
}

// reset forgets what was counted (the warm-up transaction's requests).
func (h *txnRequestHook) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = nil
}

// TxnRequestFigures are one request key's figures per transaction.
type TxnRequestFigures struct {
	Request      string  `json:"request"`
	PerTxn       float64 `json:"per_transaction"`
	MsPerRequest float64 `json:"ms_per_request"`
}

// perTxn returns the figures per transaction of txns transactions, most
// time first.
func (h *txnRequestHook) perTxn(txns int64) []TxnRequestFigures {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []TxnRequestFigures
	for k, st := range h.reqs {
		name := kmsg.NameForKey(k)
		if name == "" {
			name = fmt.Sprintf("key %d", k)
		}
		out = append(out, TxnRequestFigures{Request: name, PerTxn: float64(st.n) / float64(txns),
			MsPerRequest: float64(st.rtt) / float64(st.n) / 1e6})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].PerTxn*out[i].MsPerRequest > out[j].PerTxn*out[j].MsPerRequest
	})
	return out
}

// medianIndex is the index of xs's median (the lower one of an even
// count); xs is left as it is.
func medianIndex(xs []float64) int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return xs[idx[i]] < xs[idx[j]] })
	return idx[(len(idx)-1)/2]
}
