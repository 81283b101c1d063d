package metrics

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Latency buckets: durations in microseconds, subBuckets buckets per power
// of two (relative error under 1/subBuckets), from below 1µs up to 2^maxPow
// µs (about 2.3 hours), the last bucket open-ended.
const (
	subBits    = 2
	subBuckets = 1 << subBits
	maxPow     = 33
	numBuckets = (maxPow + 1) * subBuckets
)

// windowTicks is how many rotations a quantile window spans: quantiles are
// over the observations of the last windowTicks..windowTicks+1 ticks
// (Kafka's histograms decay over a few minutes; ours forget at once, which
// a dashboard's p99 panel reads the same way).
const windowTicks = 4

// Latency is a histogram of durations that Observe updates with atomic adds
// only: no lock, no allocation. Its count and sum are cumulative; its
// quantiles are over a sliding window, moved on by Tick (Registry's ticker).
type Latency struct {
	count   atomic.Uint64
	sumNs   atomic.Uint64
	buckets [numBuckets]atomic.Uint64

	mu   sync.Mutex // snapshots: Tick and Quantiles only, never Observe
	ring [windowTicks][numBuckets]uint64
	next int
}

// bucketOf maps microseconds to a bucket index.
func bucketOf(us uint64) int {
	if us < subBuckets {
		return int(us)
	}
	pow := bits.Len64(us) - 1 // us >= 2^pow
	sub := int(us>>(pow-subBits)) & (subBuckets - 1)
	i := (pow-subBits+1)*subBuckets + sub
	if i >= numBuckets {
		return numBuckets - 1
	}
	return i
}

// bucketUpper is the upper bound of bucket i in microseconds.
func bucketUpper(i int) float64 {
	if i < subBuckets {
		return float64(i + 1)
	}
	pow := i/subBuckets + subBits - 1
	sub := i % subBuckets
	return float64(uint64(subBuckets+sub+1) << (pow - subBits))
}

// Observe records one duration (negative counts as zero).
func (l *Latency) Observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	l.buckets[bucketOf(uint64(d/time.Microsecond))].Add(1)
	l.sumNs.Add(uint64(d))
	l.count.Add(1)
}

// Count and Sum are the cumulative number and total of observations.
func (l *Latency) Count() uint64      { return l.count.Load() }
func (l *Latency) Sum() time.Duration { return time.Duration(l.sumNs.Load()) }

// Tick moves the quantile window on: the oldest snapshot is replaced by the
// current cumulative counts.
func (l *Latency) Tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.buckets {
		l.ring[l.next][i] = l.buckets[i].Load()
	}
	l.next = (l.next + 1) % windowTicks
}

// Quantiles fills out[i] with the qs[i] quantile in milliseconds of the
// observations in the window (the bucket's upper bound, at most 1/4 above
// the true value); NaN when the window saw none, as Prometheus' summaries.
func (l *Latency) Quantiles(qs []float64, out []float64) {
	var win [numBuckets]uint64
	var total uint64
	l.mu.Lock()
	old := &l.ring[l.next] // the oldest snapshot
	for i := range l.buckets {
		win[i] = l.buckets[i].Load() - old[i]
		total += win[i]
	}
	l.mu.Unlock()
	for k, q := range qs {
		if total == 0 {
			out[k] = math.NaN()
			continue
		}
		rank := uint64(math.Ceil(q * float64(total)))
		rank = max(rank, 1)
		var seen uint64
		for i := range win {
			seen += win[i]
			if seen >= rank {
				out[k] = bucketUpper(i) / 1000
				break
			}
		}
	}
}

// add adds o's counts into l, whose window becomes the sum of both windows
// (l must be fresh and unshared: scrape-time merges only).
func (l *Latency) add(o *Latency) {
	l.count.Add(o.count.Load())
	l.sumNs.Add(o.sumNs.Load())
	for i := range o.buckets {
		l.buckets[i].Add(o.buckets[i].Load())
	}
	o.mu.Lock()
	for i := range l.ring[0] {
		l.ring[0][i] += o.ring[o.next][i]
	}
	o.mu.Unlock()
}
