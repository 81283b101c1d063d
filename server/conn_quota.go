package server

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connQuota is a connection's part in client quotas (quota.go): the
// request being served's start and parked time (request_percentage), and
// its throttle.
type connQuota struct {
	began    time.Time     // when the request's serving began; zero with no quota on
	parked   time.Duration // of that, parked in a purgatory
	throttle time.Duration // the request's throttle time: the response carries it, then the connection is muted
	given    time.Duration // the request's throttle time for its slow-request line (kept after throttle is cleared)
}

// quotaUser is the principal's name as quotas see it (User:alice: alice).
func (c *conn) quotaUser() string {
	u, _ := strings.CutPrefix(c.auth.principal, "User:")
	return u
}

// quotasOn says whether any client quota is configured.
func (c *conn) quotasOn() bool { return c.s.quotas != nil && c.s.quotas.q.on.Load() }

// quotaRecord records v of kind for the client and raises the request's
// throttle; keep false takes a value over the quota back out.
func (c *conn) quotaRecord(kind quotaKind, clientID string, v float64, keep bool) time.Duration {
	t := c.s.quotas.q.record(kind, c.quotaUser(), clientID, v, keep)
	c.quota.throttle = max(c.quota.throttle, t)
	c.quota.given = max(c.quota.given, t)
	return t
}

// requestQuotaExempt: APIs Kafka leaves out of the request quota (version
// negotiation, authentication, the brokers' own requests).
func requestQuotaExempt(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate,
		kmsg.LeaderAndISR, kmsg.UpdateMetadata, kmsg.StopReplica,
		kmsg.ControlledShutdown, kmsg.AlterPartition:
		return true
	}
	return false
}

// recordRequestTime records the request's serving time so far (not
// counting parked time) on the request quota, as Kafka's percentage of a
// thread: 1 s busy is 100.
func (c *conn) recordRequestTime(h *reqHeader) time.Duration {
	if c.quota.began.IsZero() || requestQuotaExempt(h.key) {
		return 0
	}
	busy := time.Since(c.quota.began) - c.quota.parked
	c.quota.began = time.Time{} // recorded once
	return c.quotaRecord(quotaRequest, h.clientID, max(busy, 0).Seconds()*100, true)
}

// setThrottle puts the request's throttle into resp; it returns the time
// to hold the response back, for a version from before KIP-219 (whose
// client does not wait itself: the broker delays the response instead of
// muting the connection after it).
func (c *conn) setThrottle(resp kmsg.Response) time.Duration {
	t := c.quota.throttle
	if t <= 0 {
		return 0
	}
	st, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return 0
	}
	resp.(kmsg.SetThrottleResponse).SetThrottle(int32(t.Milliseconds()))
	if _, after := st.Throttle(); !after {
		c.quota.throttle = 0
		return t
	}
	return 0
}

// quotaParked runs wait (a JoinGroup or SyncGroup parked for its
// rebalance) and leaves its time out of request_percentage, as Kafka's
// purgatory time is not handler thread time.
func (c *conn) quotaParked(wait func()) {
	if c.quota.began.IsZero() {
		wait()
		return
	}
	began := time.Now()
	wait()
	c.quota.parked += time.Since(began)
}

// throttleWait waits d, or until shutdown: the connection reads nothing
// meanwhile.
func (c *conn) throttleWait(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.s.done:
	}
}

// fetchThrottled records a consumer's fetch (bytes: the response's record
// bytes) and its serving time; true when either quota is exceeded, and the
// response is then to be empty. A follower's fetch is exempt.
func (c *conn) fetchThrottled(h *reqHeader, req *kmsg.FetchRequest, bytes int64) bool {
	if !c.quotasOn() || req.ReplicaID >= 0 {
		return false
	}
	tReq := c.recordRequestTime(h)
	tFetch := c.quotaRecord(quotaFetch, h.clientID, float64(bytes), false)
	if tReq > 0 && tFetch == 0 && bytes > 0 {
		c.s.quotas.q.record(quotaFetch, c.quotaUser(), h.clientID, -float64(bytes), true) // answered empty
	}
	return tReq > 0 || tFetch > 0
}
