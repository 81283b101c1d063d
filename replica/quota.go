package replica

import (
	"encoding/binary"
	"math"
	"sync"
)

// Kafka's defaults for the replication quota window
// (replication.quota.window.num, replication.quota.window.size.seconds).
const (
	DefaultQuotaWindowNum         = 11
	DefaultQuotaWindowSizeSeconds = 1
)

// Unthrottled is the rate of a quota with no bound (Kafka's
// QUOTA_BYTES_PER_SECOND_DEFAULT, Long.MaxValue).
const Unthrottled = math.MaxInt64

// Quota is a replication throttle, Kafka's ReplicationQuotaManager: a bound
// in bytes per second (leader.replication.throttled.rate or
// follower.replication.throttled.rate), the bytes of throttled partitions
// recorded in samples of windowMs each, and the set of throttled
// partitions (a topic's leader.replication.throttled.replicas or
// follower.replication.throttled.replicas, the entries naming this broker).
//
// The rate is Kafka's Rate over a SampledStat: the bytes of the last num
// samples divided by the time since the oldest began, that time counted as
// at least num-1 whole windows (so a quota does not trip on the first
// bytes after a quiet spell). Exceeded tells whether the rate is above the
// bound; the caller then leaves throttled partitions out of the fetch (or
// out of the fetch response): they are not delayed, the rest of the
// request goes on. WaitMs tells when the rate falls back to the bound, so
// the caller fetches again then, neither later nor sooner. Callers record
// only whole batches (WholeBatchBytes): a partial last batch, cut by the
// fetch's max bytes, is fetched again next time, and counting it each
// time (as Kafka does) kept a move of 1 MB batches in 1 MiB fetches 5-15%
// under its throttle. Times are Unix milliseconds given by the caller.
// Safe for concurrent use.
type Quota struct {
	mu       sync.Mutex
	rate     int64 // bytes/s bound; Unthrottled for none
	num      int
	windowMs int64
	samples  []quotaSample // ring of num samples
	cur      int
	// throttled: per topic, all partitions (nil map value, all true) or
	// the listed ones.
	throttled map[string]throttledSet
}

type quotaSample struct {
	start int64 // window start (ms); 0: unused
	bytes int64
}

type throttledSet struct {
	all   bool
	parts map[int32]bool
}

// NewQuota returns an unbounded quota over num samples of windowSeconds
// each (Kafka's defaults when zero).
func NewQuota(num int, windowSeconds int) *Quota {
	if num <= 0 {
		num = DefaultQuotaWindowNum
	}
	if windowSeconds <= 0 {
		windowSeconds = DefaultQuotaWindowSizeSeconds
	}
	return &Quota{rate: Unthrottled, num: num, windowMs: int64(windowSeconds) * 1000,
		samples: make([]quotaSample, num), throttled: map[string]throttledSet{}}
}

// SetRate sets the bound in bytes per second; < 0 or Unthrottled removes it.
func (q *Quota) SetRate(bytesPerSec int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if bytesPerSec < 0 {
		bytesPerSec = Unthrottled
	}
	q.rate = bytesPerSec
}

// Rate is the bound in bytes per second (Unthrottled for none).
func (q *Quota) Rate() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rate
}

// SetThrottled replaces the throttled partitions of topic: all of them
// (Kafka's "*"), the listed ones, or none (all false, no partitions).
func (q *Quota) SetThrottled(topic string, all bool, partitions []int32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !all && len(partitions) == 0 {
		delete(q.throttled, topic)
		return
	}
	s := throttledSet{all: all}
	if !all {
		s.parts = make(map[int32]bool, len(partitions))
		for _, p := range partitions {
			s.parts[p] = true
		}
	}
	q.throttled[topic] = s
}

// IsThrottled tells whether tp is one of the throttled partitions.
func (q *Quota) IsThrottled(tp TopicPartition) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.throttled[tp.Topic]
	return ok && (s.all || s.parts[tp.Partition])
}

// Record counts n bytes of throttled partitions at now.
func (q *Quota) Record(n int64, now int64) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	s := &q.samples[q.cur]
	if s.start == 0 || now >= s.start+q.windowMs {
		q.cur = (q.cur + 1) % q.num
		s = &q.samples[q.cur]
		*s = quotaSample{start: now}
	}
	s.bytes += n
}

// Exceeded tells whether the recorded rate is above the bound at now.
func (q *Quota) Exceeded(now int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate == Unthrottled {
		return false
	}
	total, elapsed := q.measure(now)
	return q.over(total, elapsed)
}

// WaitMs is how long from now until the rate falls to the bound with
// nothing more recorded (0 when it is not above it): until the time since
// the oldest sample began has grown enough for its bytes, or until that
// sample expires, whichever comes first; at most one window. (The time is
// the real one: counting the minimum of num-1 windows here woke the
// caller too soon, to find the rate still over.)
func (q *Quota) WaitMs(now int64) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate == Unthrottled {
		return 0
	}
	total, elapsed := q.measure(now)
	if !q.over(total, elapsed) {
		return 0
	}
	wait := q.windowMs
	oldest, ok := q.oldest()
	if ok {
		wait = min(wait, oldest+int64(q.num)*q.windowMs-now) // the oldest sample expires
		if q.rate > 0 {
			wait = min(wait, int64(math.Ceil(float64(total)*1000/float64(q.rate)))-(now-oldest))
		}
	}
	return max(wait, 1)
}

// over tells whether total bytes over elapsedMs are above the bound.
func (q *Quota) over(total, elapsedMs int64) bool {
	return float64(total)*1000 > float64(q.rate)*float64(elapsedMs)
}

// measure sums the live samples and the time they cover (mu held): samples
// older than num windows are dropped, and the time counts at least num-1
// whole windows (Kafka's Rate.windowSize).
func (q *Quota) measure(now int64) (total, elapsedMs int64) {
	for i := range q.samples {
		s := &q.samples[i]
		if s.start != 0 && now-s.start >= int64(q.num)*q.windowMs {
			*s = quotaSample{}
		}
		total += s.bytes
	}
	elapsedMs = int64(q.num-1) * q.windowMs
	if oldest, ok := q.oldest(); ok {
		elapsedMs = max(elapsedMs, now-oldest)
	}
	return total, max(elapsedMs, 1)
}

// oldest is the start of the oldest live sample (mu held).
func (q *Quota) oldest() (int64, bool) {
	var oldest int64
	for i := range q.samples {
		if s := q.samples[i].start; s != 0 && (oldest == 0 || s < oldest) {
			oldest = s
		}
	}
	return oldest, oldest != 0
}

// WholeBatchBytes is the length of the whole batches at the start of b, a
// fetch response's records: each entry (of any magic) is its base offset
// (8 bytes), its length n (4 bytes) and n bytes. A partial last entry, cut
// by the fetch's max bytes, is not counted; nor is anything after a length
// that cannot be one.
func WholeBatchBytes(b []byte) int64 {
	var n int64
	for len(b) >= BatchHeaderBytes {
		size := int64(BatchHeaderBytes) + int64(int32(binary.BigEndian.Uint32(b[8:12])))
		if size <= BatchHeaderBytes || size > int64(len(b)) {
			break
		}
		n += size
		b = b[size:]
	}
	return n
}

// BatchHeaderBytes is what precedes every entry's body in a log: the base
// offset and the length (Kafka's LOG_OVERHEAD).
const BatchHeaderBytes = 12
