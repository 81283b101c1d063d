package server

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client quotas, as Kafka's ClientQuotaManager enforces them with its
// default quota callback.
//
// Three quota kinds, each a config key of a quota entity:
//
//	producer_byte_rate   bytes per second of Produce requests (the request frame's size)
//	consumer_byte_rate   bytes per second of Fetch responses (their record bytes);
//	                     a follower's fetch is exempt
//	request_percentage   percent of one request handler's time: the time the
//	                     connection's goroutine spends serving the client's
//	                     requests (parse, handle, build the response), not
//	                     counting time parked (fetch max wait, acks=all) nor
//	                     writing the response. Kafka counts its request
//	                     handler and network threads' time; strata serves a
//	                     connection on one goroutine, so that goroutine's
//	                     busy time is the equivalent. 100 is one core's worth.
//	                     Exempt: ApiVersions, SASL and the brokers' own
//	                     requests (LeaderAndIsr... and a follower's fetch).
//
// controller_mutation_rate (KIP-599) is accepted and stored as Kafka
// accepts it, but not enforced: strata does not throttle topic mutations.
//
// An entity is a user, a client id, or a user and a client id, each a name
// or the default ("<default>" in ZooKeeper, a null name in the protocol).
// A client's quota of a kind is the first entity in Kafka's order that sets
// that kind's key:
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// The user is the principal's name (User:alice is alice; a PLAINTEXT
// client's is ANONYMOUS). Clients matched by the same entity share its rate
// when the entity names them (all of alice's clients share users/alice's
// quota); a default entity gives each user (or client id, or both) a rate
// of its own, as Kafka's metric tags do.
//
// A rate is measured as Kafka's Rate: quota.window.num samples of
// quota.window.size.seconds each, the sum of the unexpired samples over the
// time they span (at least quota.window.num-1 windows). When a recorded
// value takes the rate over the bound, the throttle time is
// (rate-bound)/bound times that span: the time after which the rate is back
// at the bound. The request quota's throttle is capped at one window, as in
// Kafka. The response carries throttle_time_ms and the connection is muted
// for that time: the next request is not read until it has passed. A
// response version from before KIP-219 (Produce v<6, Fetch v<8...) is
// instead held back for the throttle time, then sent. A fetch over its
// quota is answered with an empty response (no topics) and its bytes are not
// counted; a produce is appended, then throttled.

// Quota config keys.
const (
	quotaProducerByteRate       = "producer_byte_rate"
	quotaConsumerByteRate       = "consumer_byte_rate"
	quotaRequestPercentage      = "request_percentage"
	quotaControllerMutationRate = "controller_mutation_rate"
)

// quotaDefault names a default entity in ZooKeeper paths and the data dir.
const quotaDefault = "<default>"

type quotaKind int

const (
	quotaProduce quotaKind = iota
	quotaFetch
	quotaRequest
	numQuotaKinds
)

var quotaKindKeys = [numQuotaKinds]string{quotaProducerByteRate, quotaConsumerByteRate, quotaRequestPercentage}

// quotaKeyIsLong says whether a quota key is a whole number (Kafka's LONG
// type) rather than a DOUBLE.
func quotaKeyIsLong(k string) bool {
	return k == quotaProducerByteRate || k == quotaConsumerByteRate
}

func isQuotaKey(k string) bool {
	switch k {
	case quotaProducerByteRate, quotaConsumerByteRate, quotaRequestPercentage, quotaControllerMutationRate:
		return true
	}
	return false
}

// quotaEntity is one stored quota entity. A part is absent (has false), a
// name, or quotaDefault.
type quotaEntity struct {
	user, client       string
	hasUser, hasClient bool
}

// path is the entity's path below /config, with names sanitized as Kafka
// writes them: users/U, users/U/clients/C, clients/C.
func (e quotaEntity) path() string {
	var b strings.Builder
	if e.hasUser {
		b.WriteString("users/")
		b.WriteString(sanitizeEntityName(e.user))
		if e.hasClient {
			b.WriteString("/")
		}
	}
	if e.hasClient {
		b.WriteString("clients/")
		b.WriteString(sanitizeEntityName(e.client))
	}
	return b.String()
}

func sanitizeEntityName(n string) string {
	if n == quotaDefault {
		return n
	}
	return zkUserName(n)
}

// quotaSensorKey names a rate: the quota kind and the metric tags (user and
// client id; empty when the matched entity leaves that part out).
type quotaSensorKey struct {
	kind         quotaKind
	user, client string
}

// quotaManager holds the quota configs and the clients' rates.
type quotaManager struct {
	windowMs int64 // quota.window.size.seconds in ms
	samples  int   // quota.window.num
	now      func() time.Time

	// on is set while any enforced quota is configured: without one the
	// request path checks this flag only.
	on atomic.Bool

	mu      sync.RWMutex
	configs map[quotaEntity]map[string]float64

	smu     sync.Mutex
	sensors map[quotaSensorKey]*rateSensor
}

func newQuotaManager(windowSeconds, samples int) *quotaManager {
	return &quotaManager{
		windowMs: int64(windowSeconds) * 1000,
		samples:  samples,
		now:      time.Now,
		configs:  map[quotaEntity]map[string]float64{},
		sensors:  map[quotaSensorKey]*rateSensor{},
	}
}

// setEntity replaces one entity's quota config (empty: none).
func (q *quotaManager) setEntity(e quotaEntity, cfg map[string]float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(cfg) == 0 {
		delete(q.configs, e)
	} else {
		q.configs[e] = cfg
	}
	q.refreshOn()
}

// replaceAll swaps in a whole set of configs (a load).
func (q *quotaManager) replaceAll(all map[quotaEntity]map[string]float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.configs = all
	q.refreshOn()
}

func (q *quotaManager) refreshOn() {
	on := false
	for _, cfg := range q.configs {
		for _, k := range quotaKindKeys {
			if _, ok := cfg[k]; ok {
				on = true
			}
		}
	}
	q.on.Store(on)
}

// snapshot copies the configs (DescribeClientQuotas).
func (q *quotaManager) snapshot() map[quotaEntity]map[string]float64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	out := make(map[quotaEntity]map[string]float64, len(q.configs))
	for e, cfg := range q.configs {
		c := make(map[string]float64, len(cfg))
		for k, v := range cfg {
			c[k] = v
		}
		out[e] = c
	}
	return out
}

// resolve finds the quota of kind for (user, client) in Kafka's order: the
// bound and the sensor it is measured on; ok is false without one.
func (q *quotaManager) resolve(kind quotaKind, user, client string) (bound float64, key quotaSensorKey, ok bool) {
	k := quotaKindKeys[kind]
	q.mu.RLock()
	defer q.mu.RUnlock()
	try := func(e quotaEntity) bool {
		cfg, found := q.configs[e]
		if !found {
			return false
		}
		bound, ok = cfg[k]
		return ok
	}
	d := quotaDefault
	for _, u := range [2]string{user, d} {
		for _, c := range [2]string{client, d} {
			if try(quotaEntity{user: u, client: c, hasUser: true, hasClient: true}) {
				return bound, quotaSensorKey{kind, user, client}, true
			}
		}
		if try(quotaEntity{user: u, hasUser: true}) {
			return bound, quotaSensorKey{kind, user, ""}, true
		}
	}
	for _, c := range [2]string{client, d} {
		if try(quotaEntity{client: c, hasClient: true}) {
			return bound, quotaSensorKey{kind, "", client}, true
		}
	}
	return 0, quotaSensorKey{}, false
}

// sensor returns the rate of key, made at its first use.
func (q *quotaManager) sensor(key quotaSensorKey, nowMs int64) *rateSensor {
	q.smu.Lock()
	defer q.smu.Unlock()
	r, ok := q.sensors[key]
	if !ok {
		if len(q.sensors) >= maxQuotaSensors {
			q.expireSensors(nowMs)
		}
		r = &rateSensor{samples: make([]rateSample, q.samples), throttles: make([]rateSample, q.samples)}
		q.sensors[key] = r
	}
	r.lastUse = nowMs
	return r
}

// maxQuotaSensors is how many rates are kept before those idle for
// quotaSensorExpiry are dropped (Kafka expires idle quota sensors after an
// hour).
const (
	maxQuotaSensors   = 10000
	quotaSensorExpiry = time.Hour
)

func (q *quotaManager) expireSensors(nowMs int64) {
	for k, r := range q.sensors {
		if nowMs-r.lastUse > quotaSensorExpiry.Milliseconds() {
			delete(q.sensors, k)
		}
	}
}

// record adds v to the client's rate of kind and returns the throttle time
// (0 within the quota or without one). With keep false a value that takes
// the rate over the bound is taken back out (a fetch answered empty).
func (q *quotaManager) record(kind quotaKind, user, client string, v float64, keep bool) time.Duration {
	if !q.on.Load() {
		return 0
	}
	bound, key, ok := q.resolve(kind, user, client)
	if !ok {
		return 0
	}
	now := q.now().UnixMilli()
	r := q.sensor(key, now)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(v, now, q.windowMs)
	rate, span := r.rate(now, q.windowMs)
	if rate <= bound {
		return 0
	}
	if !keep {
		r.record(-v, now, q.windowMs)
	}
	var ms float64
	if bound <= 0 {
		ms = float64(span)
	} else {
		ms = (rate - bound) / bound * float64(span)
	}
	if kind == quotaRequest {
		ms = min(ms, float64(q.windowMs))
	}
	ms = min(math.Round(ms), math.MaxInt32)
	r.recordThrottle(ms, now, q.windowMs)
	return time.Duration(ms) * time.Millisecond
}

// rateSensor is Kafka's Rate over a SampledStat: a ring of samples, each
// open for one window from its first value.
type rateSensor struct {
	mu      sync.Mutex
	samples []rateSample
	cur     int
	lastUse int64 // ms; guarded by quotaManager.smu
	// throttles are the throttle times given, for the throttle-time
	// metric (their average over the same window, as Kafka's Avg).
	throttles []rateSample
	tcur      int
}

type rateSample struct {
	start int64 // ms of the sample's first value
	value float64
	count int
	used  bool
}

// advance returns the sample of ring at *cur to record into at now.
func advance(ring []rateSample, cur *int, now, windowMs int64) *rateSample {
	s := &ring[*cur]
	switch {
	case !s.used:
		*s = rateSample{start: now, used: true}
	case now >= s.start+windowMs:
		*cur = (*cur + 1) % len(ring)
		s = &ring[*cur]
		*s = rateSample{start: now, used: true}
	}
	return s
}

func (r *rateSensor) recordThrottle(ms float64, now, windowMs int64) {
	s := advance(r.throttles, &r.tcur, now, windowMs)
	s.value += ms
	s.count++
}

// avgThrottle is the average throttle time (ms) given in the unexpired
// samples, 0 without one.
func (r *rateSensor) avgThrottle(now, windowMs int64) float64 {
	var sum float64
	var n int
	for i := range r.throttles {
		s := &r.throttles[i]
		if s.used && now-s.start < int64(len(r.throttles))*windowMs {
			sum += s.value
			n += s.count
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func (r *rateSensor) record(v float64, now, windowMs int64) {
	advance(r.samples, &r.cur, now, windowMs).value += v
}

// rate is the sum of the unexpired samples per second of the time they
// span, and that span in ms: from the oldest sample's start, at least
// samples-1 windows (Kafka's Rate.windowSize).
func (r *rateSensor) rate(now, windowMs int64) (perSecond float64, spanMs int64) {
	n := int64(len(r.samples))
	var total float64
	oldest := now
	for i := range r.samples {
		s := &r.samples[i]
		if !s.used {
			continue
		}
		if now-s.start >= n*windowMs {
			*s = rateSample{}
			continue
		}
		total += s.value
		oldest = min(oldest, s.start)
	}
	span := now - oldest
	if full := span / windowMs; full < n-1 {
		span += (n - 1 - full) * windowMs
	}
	span = max(span, 1)
	return total * 1000 / float64(span), span
}
