package server

import (
	"sync"
	"sync/atomic"
)

// DecompressionBudget bounds the decompression memory that produce
// validation and recompression hold at once across all connections: each
// compressed batch reserves what its stream needs (record.StreamMemory, plus
// the buffer and encoder of a recompression) before it is decompressed, and
// waits, first come first served, while the budget is spent. A batch that
// needs more than the whole budget (a zstd window above it) waits until it
// can take all of it, so the memory in flight never exceeds the larger of
// the budget and one batch's need.
const DecompressionBudget = 64 << 20

// memBudget is a first-come-first-served weighted semaphore of bytes.
type memBudget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	waiters []*budgetWaiter
	peak    atomic.Int64 // the most ever reserved at once (tests)
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newMemBudget(size int64) *memBudget { return &memBudget{size: max(size, 1)} }

// acquire reserves n bytes (at least 1, at most the whole budget), waiting
// for earlier reservations to be released; release gives them back.
func (m *memBudget) acquire(n int64) (release func()) {
	n = min(max(n, 1), m.size)
	m.mu.Lock()
	if len(m.waiters) == 0 && m.used+n <= m.size {
		m.take(n)
		m.mu.Unlock()
		return func() { m.release(n) }
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	<-w.ready
	return func() { m.release(n) }
}

// take records n more bytes reserved; m.mu is held.
func (m *memBudget) take(n int64) {
	m.used += n
	if m.used > m.peak.Load() {
		m.peak.Store(m.used)
	}
}

func (m *memBudget) release(n int64) {
	m.mu.Lock()
	m.used -= n
	for len(m.waiters) > 0 && m.used+m.waiters[0].n <= m.size {
		w := m.waiters[0]
		m.waiters[0] = nil
		m.waiters = m.waiters[1:]
		m.take(w.n)
		close(w.ready)
	}
	m.mu.Unlock()
}
