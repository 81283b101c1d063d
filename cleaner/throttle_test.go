package cleaner

import (
	"testing"
	"time"
)

func TestThrottler(t *testing.T) {
	clock := time.Unix(0, 0)
	th := NewThrottler(1e6) // 1 MB/s
	th.now = func() time.Time { return clock }
	th.sleep = func(d time.Duration) { clock = clock.Add(d) }
	for i := 0; i < 100; i++ {
		th.Observe(100_000) // 10 MB in total, instantly
	}
	if got := clock.Sub(time.Unix(0, 0)); got < 9*time.Second || got > 11*time.Second {
		t.Fatalf("10 MB at 1 MB/s took %v", got)
	}
	var none *Throttler
	none.Observe(1 << 30) // nil: unlimited
	if NewThrottler(0).Slept() != 0 {
		t.Fatal("unlimited throttler slept")
	}
}
