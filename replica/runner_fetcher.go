package replica

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// fetcher is one replica fetcher (Kafka's ReplicaFetcherThread): a source
// broker and fetcher id, its own connection, one Fetch in flight. It lives
// while the Manager sends it work and ends after replica.socket.timeout.ms
// without any (its leader moved away), closing its connection.
type fetcher struct {
	tgt  FetchTarget
	jobs chan FetchRequest // capacity 1: the Manager has one in flight per target
	conn *kwire.Conn
	bad  bool // the last exchange failed: log the next success
	// bufs are the read buffers of fetches sent ahead (FetchAhead), used in
	// turn: one holds the answer being appended while the next is read
	// into the other. last is the one read last (-1: the connection's own).
	bufs [2][]byte
	last int
}

// ahead is a fetch sent ahead of the answer before it: its answer is read
// (into one of the fetcher's buffers) while the one before is appended.
type ahead struct {
	job    FetchRequest
	done   chan struct{}
	resp   *kmsg.FetchResponse
	err    error
	ctx    context.Context
	cancel func()
	// sent is the request's, once written. next is the fetch sent early,
	// while this one's answer arrived (earlyView): its answer is
	// read after this one's, and this answer's last records are cut to
	// the cut bytes the next fetch starts after.
	sent   kwire.Sent
	before atomic.Bool // the answer before is handed back
	next   *ahead
	cut    int
}

// sendFetch queues a fetch for its target's fetcher, starting one if
// needed. Lookup and send hold r.mu together, as retire does, so a fetch
// never lands in the queue of a fetcher that has just retired. The queue
// never holds more than one: the fetcher hands each outcome back before it
// takes the next, and the Manager asks no new fetch for the target before
// the outcome.
func (r *Runner) sendFetch(req FetchRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fetchers[req.Target]
	if f == nil {
		f = &fetcher{tgt: req.Target, jobs: make(chan FetchRequest, 1)}
		r.fetchers[req.Target] = f
		r.wg.Add(1)
		go r.runFetcher(f)
	}
	select {
	case f.jobs <- req:
	default:
		// Cannot happen (see above); the queued fetch's outcome will let
		// the Manager ask again.
		r.log.Error("replica fetcher busy: fetch dropped", "leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher)
	}
}

// retire removes an idle fetcher unless work came meanwhile.
func (r *Runner) retire(f *fetcher) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(f.jobs) > 0 {
		return false
	}
	delete(r.fetchers, f.tgt)
	return true
}

func (r *Runner) runFetcher(f *fetcher) {
	defer r.wg.Done()
	defer func() {
		if f.conn != nil {
			f.conn.Close()
		}
	}()
	idle := time.Duration(r.o.SocketTimeoutMs) * time.Millisecond
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return // Close's sweep hands back a queued fetch
		case job := <-f.jobs:
			r.fetch(f, job)
		case <-t.C:
			if r.retire(f) {
				r.log.Debug("replica fetcher idle: stopping", "leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher)
				return
			}
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(idle)
	}
}

// fetch sends one Fetch and hands its outcome back, then, while the
// Manager has the next fetch to the same target due at once (ReadyFetch),
// sends that one too: a follower keeping up with its leader fetches again
// straight from this goroutine, without waking the Runner's loop and
// waiting for it to hand the request over. The response's record batches
// alias a read buffer: the Manager appends them (FetchResponse returns)
// before that buffer is read into again, so they are never copied. When
// the Manager lets the next fetch go before an answer is appended
// (FetchAhead: the partitions are far below the leader's high watermark),
// it is sent first and its answer read into the fetcher's other buffer
// meanwhile; its outcome is handed back after the answer's.
func (r *Runner) fetch(f *fetcher, job FetchRequest) {
	f.last = -1
	resp, err := r.exchangeFetch(f, job.Req)
	var early *ahead // sent while the answer before arrived
	for {
		if err != nil && r.ctx.Err() == nil {
			if errors.Is(err, kwire.ErrAuthentication) {
				// a configuration error, not a passing fault: said loudly each time
				r.log.Error("fetch from leader: inter-broker authentication failed: check the inter-broker listener's TLS and SASL settings",
					"leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher, "err", err)
			} else if !f.bad {
				r.log.Warn("fetch from leader failed: backing off", "leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher, "err", err)
			} else {
				r.log.Debug("fetch from leader failed again", "leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher, "err", err)
			}
			f.bad = true
		} else if err == nil && f.bad {
			r.log.Info("fetching from leader again", "leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher)
			f.bad = false
		}
		now := r.o.Now()
		var a *ahead
		switch {
		case early != nil:
			a, early = early, nil
			if err == nil {
				r.readAhead(f, a)
			} else {
				a.err = err // its connection failed with the answer before
				close(a.done)
			}
		case err == nil && r.ctx.Err() == nil && r.sameLeaderConn(f):
			if next, ok := r.m.FetchAhead(job, resp, now); ok {
				a = r.sendAhead(f, next)
			}
		}
		r.m.FetchResponse(job.Target, job.Req, resp, err, now)
		if a != nil {
			a.before.Store(true)
			<-a.done
			a.cancel()
			job, resp, err, early = a.job, a.resp, a.err, a.next
			if err != nil {
				f.closeConn()
			}
			continue
		}
		if err != nil || r.ctx.Err() != nil {
			return
		}
		next, ok := r.m.ReadyFetch(f.tgt, now)
		if !ok {
			return
		}
		job = next
		f.last = -1
		resp, err = r.exchangeFetch(f, job.Req)
	}
}

// sameLeaderConn tells whether the fetcher's connection is open to its
// leader's current address (a fetch ahead goes on it, or not at all).
func (r *Runner) sameLeaderConn(f *fetcher) bool {
	addr, ok := r.o.Resolve(f.tgt.Broker)
	return ok && f.conn != nil && f.conn.Addr() == addr
}

// sendAhead writes job's Fetch on the fetcher's connection and reads its
// answer (readAhead).
func (r *Runner) sendAhead(f *fetcher, job FetchRequest) *ahead {
	a := r.newAhead(job)
	s, err := f.conn.Send(a.ctx, job.Req)
	if err != nil {
		a.err = err
		close(a.done)
		return a
	}
	a.sent = s
	r.readAhead(f, a)
	return a
}

// newAhead is a fetch to send ahead, bounded by replica.socket.timeout.ms.
func (r *Runner) newAhead(job FetchRequest) *ahead {
	ctx, cancel := r.requestCtx()
	return &ahead{job: job, done: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// readAhead reads the answer to a, sent, in a goroutine of its own, into
// the buffer the last answer does not alias; done closes once resp or err
// is set. While the answer arrives, the fetch after it is sent as soon as
// FetchAhead allows it on what has arrived (earlyView): the leader
// then serves it without waiting for the follower to read this answer to
// its end and ask again.
func (r *Runner) readAhead(f *fetcher, a *ahead) {
	i := 0
	if f.last == 0 {
		i = 1
	}
	f.last = i
	c, buf := f.conn, &f.bufs[i]
	var e earlyView
	asked := false
	hook := func(frame []byte, size int) kmsg.Request {
		// FetchAhead is asked once, after the answer before is handed
		// back (until then it refuses: a fetch is in flight besides this
		// one) and once the view is known
		if asked || !a.before.Load() || r.ctx.Err() != nil {
			return nil
		}
		view, cut, ok := e.update(frame, size)
		if !ok {
			return nil
		}
		asked = true
		next, ok := r.m.FetchAhead(a.job, view, r.o.Now())
		if !ok {
			return nil
		}
		a.next, a.cut = r.newAhead(next), cut
		r.early.Add(1)
		return next.Req
	}
	go func() {
		defer close(a.done)
		// a.next is set only when its fetch goes: written (sent), or the
		// write failed and so does this read
		resp, s, _, err := c.ReceiveEarly(a.ctx, a.sent, buf, hook)
		if a.next != nil {
			a.next.sent = s
		}
		if err != nil {
			a.err = err
			return
		}
		fr, ok := resp.(*kmsg.FetchResponse)
		if !ok {
			a.err = fmt.Errorf("%w: Fetch answered by another response kind", kwire.ErrBadFrame)
			return
		}
		if a.next != nil {
			cutLast(fr, a.cut)
		}
		a.resp = fr
	}()
	// The reader runs first, on this thread: it reads until the socket is
	// empty and parks in the netpoller, and this goroutine goes on to
	// append the answer before. Left in this P's run queue, the reader
	// waited for another thread to wake and steal it while the append
	// held the P: 120-140 µs of the 0.6 ms a 1 MiB answer took in bench
	// cluster's catch-up (the fetch chain's critical path), 1334-1571 MB/s
	// against 1620-1710 with the yield.
	runtime.Gosched()
}

// cutLast keeps the first cut bytes of resp's last partition's records:
// the whole batches the fetch sent early starts after.
func cutLast(resp *kmsg.FetchResponse, cut int) {
	if len(resp.Topics) == 0 {
		return
	}
	t := &resp.Topics[len(resp.Topics)-1]
	if len(t.Partitions) == 0 {
		return
	}
	p := &t.Partitions[len(t.Partitions)-1]
	if cut < len(p.RecordBatches) {
		p.RecordBatches = p.RecordBatches[:cut]
	}
}

// exchangeFetch sends req on the fetcher's connection, dialling the
// leader's current address first when there is none or the leader moved.
// Any error closes the connection; the next fetch dials again (after the
// Manager's replica.fetch.backoff.ms). A request that failed on a
// connection opened for an earlier fetch is sent once more on a new one
// first: the connection may have died while the fetcher idled (the
// broker's previous process closed it when it stopped), which says
// nothing of the leader now, and backing off for it stalled acks=all
// produces for replica.fetch.backoff.ms after a leader moved to a
// restarted broker. A fetch is safe to send twice.
func (r *Runner) exchangeFetch(f *fetcher, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	addr, ok := r.o.Resolve(f.tgt.Broker)
	if !ok {
		f.closeConn()
		return nil, fmt.Errorf("%w %d", ErrNoEndpoint, f.tgt.Broker)
	}
	if f.conn != nil && f.conn.Addr() != addr {
		r.log.Info("leader address changed: reconnecting", "leader", f.tgt.Broker, "from", f.conn.Addr(), "to", addr)
		f.closeConn()
	}
	ctx, cancel := r.requestCtx()
	defer cancel()
	reused := f.conn != nil
	var resp kmsg.Response
	for {
		if f.conn == nil {
			c, err := r.dial(ctx, addr, r.clientID(fmt.Sprintf("-fetcher-%d", f.tgt.Fetcher)), true)
			if err != nil {
				return nil, err
			}
			f.conn = c
		}
		var err error
		resp, err = f.conn.Request(ctx, req)
		if err == nil {
			break
		}
		f.closeConn()
		if !reused || ctx.Err() != nil {
			return nil, err
		}
		r.log.Debug("fetch on an idle connection failed: dialling again", "leader", f.tgt.Broker, "fetcher", f.tgt.Fetcher, "err", err)
		reused = false
	}
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		f.closeConn()
		return nil, fmt.Errorf("%w: Fetch answered by another response kind", kwire.ErrBadFrame)
	}
	return fr, nil
}

func (f *fetcher) closeConn() {
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}
