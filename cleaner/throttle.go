package cleaner

import (
	"sync"
	"time"
)

// Throttler limits the cleaner's I/O to log.cleaner.io.max.bytes.per.second,
// shared by every cleaner thread, as Kafka's: it adds up the bytes observed
// (read while mapping, read and written while recopying) and, every 300 ms of
// measurement, sleeps long enough for the observed rate to drop to the limit.
// A nil Throttler, or one with a non-positive rate, does nothing.
type Throttler struct {
	rate  float64 // bytes per second
	check time.Duration
	mu    sync.Mutex
	start time.Time
	bytes float64
	sleep func(time.Duration)
	now   func() time.Time
	slept time.Duration
}

// NewThrottler returns a throttler at bytesPerSec (<= 0: unlimited).
func NewThrottler(bytesPerSec float64) *Throttler {
	return &Throttler{rate: bytesPerSec, check: 300 * time.Millisecond, sleep: time.Sleep, now: time.Now}
}

// Observe accounts n bytes and sleeps when the rate is above the limit.
func (t *Throttler) Observe(n int64) {
	if t == nil || t.rate <= 0 || n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.start.IsZero() {
		t.start = now
	}
	t.bytes += float64(n)
	elapsed := now.Sub(t.start)
	if elapsed < t.check && t.bytes < t.rate*t.check.Seconds() {
		return
	}
	want := time.Duration(t.bytes / t.rate * float64(time.Second))
	if want > elapsed {
		d := want - elapsed
		t.slept += d
		t.sleep(d) // holding the lock: every thread waits its turn
	}
	t.start = t.now()
	t.bytes = 0
}

// Slept is the total time spent throttled.
func (t *Throttler) Slept() time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slept
}
