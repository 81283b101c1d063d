package txn

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDAndEpoch is an InitProducerId answer.
type ProducerIDAndEpoch struct {
	ProducerID int64
	Epoch      int16
}

// InitProducerID serves InitProducerId for transactional id id (Kafka's
// handleInitProducerId): a new id gets a producer id and epoch 0; a known
// one has its epoch bumped, which fences every producer of an older epoch
// (a new producer id once the epoch is exhausted). A transaction left
// Ongoing by the previous producer is aborted first, with the epoch bumped,
// and the caller told CONCURRENT_TRANSACTIONS (it retries). expected is the
// producer id and epoch the client had (-1, -1 when none, KIP-360): a
// producer whose id and epoch are neither the current nor the previous ones
// is fenced (PRODUCER_FENCED).
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expected ProducerIDAndEpoch) (ProducerIDAndEpoch, error) {
	none := ProducerIDAndEpoch{-1, -1}
	switch {
	case id == "":
		return none, kerr.InvalidRequest
	case timeoutMs <= 0 || timeoutMs > c.cfg.MaxTimeoutMs:
		return none, kerr.InvalidTransactionTimeout
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ps, e, err := c.lookup(id)
	if err != nil {
		return none, err
	}
	if e == nil {
		c.mu.Unlock()
		pid, err := c.ids.Next(ctx)
		c.mu.Lock()
		if err != nil {
			c.cfg.Log.Warn("allocating a producer id", "error", err)
			return none, kerr.CoordinatorNotAvailable
		}
		if p, ps, e, err = c.lookup(id); err != nil {
			return none, err
		}
		if e == nil {
			now := c.now()
			e = &entry{m: &Metadata{TransactionalID: id, ProducerID: pid, ProducerEpoch: -1,
				LastProducerID: -1, LastProducerEpoch: -1, TimeoutMs: timeoutMs, State: Empty, StartMs: -1, UpdateMs: now}}
			ps.txns[id] = e
		}
	}
	if e.pending {
		return none, kerr.ConcurrentTransactions
	}
	m := e.m
	if expected.ProducerID >= 0 {
		cur := expected.ProducerID == m.ProducerID && expected.Epoch == m.ProducerEpoch
		last := expected.ProducerID == m.LastProducerID && expected.Epoch == m.LastProducerEpoch
		switch {
		case last && m.State.complete():
			// A retry of the InitProducerId that bumped the epoch: answer it again.
			return ProducerIDAndEpoch{m.ProducerID, m.ProducerEpoch}, nil
		case !cur && !last:
			return none, kerr.ProducerFenced
		}
	}
	switch m.State {
	case PrepareCommit, PrepareAbort, PrepareEpochFence, Dead:
		return none, kerr.ConcurrentTransactions
	case Ongoing:
		if err := c.fenceAndAbort(ctx, p, ps, e); err != nil {
			return none, err
		}
		return none, kerr.ConcurrentTransactions
	}
	next := m.clone()
	next.TimeoutMs = timeoutMs
	next.State, next.Partitions, next.StartMs, next.UpdateMs = Empty, nil, -1, c.now()
	if m.ProducerEpoch >= 0 {
		next.LastProducerID, next.LastProducerEpoch = m.ProducerID, m.ProducerEpoch
	}
	if m.epochExhausted() {
		c.mu.Unlock()
		pid, err := c.ids.Next(ctx)
		c.mu.Lock()
		if err != nil {
			return none, kerr.CoordinatorNotAvailable
		}
		if e.pending || e.m != m {
			return none, kerr.ConcurrentTransactions
		}
		next.ProducerID, next.ProducerEpoch = pid, 0
	} else {
		next.ProducerEpoch = m.ProducerEpoch + 1
	}
	if err := c.write(ctx, p, ps, e, next); err != nil {
		return none, err
	}
	return ProducerIDAndEpoch{next.ProducerID, next.ProducerEpoch}, nil
}

// checkProducer answers a request naming producer id pid and epoch epoch
// for e: Kafka's INVALID_PRODUCER_ID_MAPPING for an unknown id or another
// producer id, PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS
// while a change is being written.
func checkProducer(e *entry, pid int64, epoch int16) error {
	switch {
	case e == nil || e.m.ProducerID != pid:
		return kerr.InvalidProducerIDMapping
	case e.m.ProducerEpoch != epoch:
		return kerr.ProducerFenced
	case e.pending:
		return kerr.ConcurrentTransactions
	}
	return nil
}

// AddPartitions serves AddPartitionsToTxn (and AddOffsetsToTxn, whose one
// partition is the group's __consumer_offsets partition): the transaction
// becomes Ongoing with ps added.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, add []Partition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ps, e, err := c.lookup(id)
	if err != nil {
		return err
	}
	if err := checkProducer(e, pid, epoch); err != nil {
		return err
	}
	m := e.m
	switch m.State {
	case PrepareCommit, PrepareAbort, PrepareEpochFence, Dead:
		return kerr.ConcurrentTransactions
	case Ongoing:
		if m.hasAll(add) {
			return nil
		}
	}
	next := m.clone()
	now := c.now()
	if m.State != Ongoing {
		next.StartMs = now
		next.Partitions = nil
	}
	next.State, next.UpdateMs = Ongoing, now
	next.addPartitions(add)
	return c.write(ctx, p, ps, e, next)
}

// VerifyPartition reports whether id's transaction of producer pid/epoch
// is Ongoing with partition tp in it (KIP-890's produce check, offered to
// the partition side).
func (c *Coordinator) VerifyPartition(id string, pid int64, epoch int16, tp Partition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, e, err := c.lookup(id)
	if err != nil {
		return err
	}
	if err := checkProducer(e, pid, epoch); err != nil && err != kerr.ConcurrentTransactions {
		return err
	}
	if e.m.State != Ongoing || !e.m.hasAll([]Partition{tp}) {
		return kerr.InvalidTxnState
	}
	return nil
}

// EndTxn serves EndTxn: an Ongoing transaction moves to PrepareCommit or
// PrepareAbort, is answered once that is written, and is completed in the
// background (markers to every partition, then CompleteCommit or
// CompleteAbort). A retried EndTxn of a completed transaction is answered
// again; one that does not match the state (a transaction never begun,
// commit after abort) is INVALID_TXN_STATE.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ps, e, err := c.lookup(id)
	if err != nil {
		return err
	}
	if err := checkProducer(e, pid, epoch); err != nil {
		return err
	}
	m := e.m
	switch {
	case m.State == Ongoing:
	case m.State == CompleteCommit && commit, m.State == CompleteAbort && !commit:
		return nil
	case m.State == PrepareCommit && commit, m.State == PrepareAbort && !commit:
		return kerr.ConcurrentTransactions
	case m.State == PrepareEpochFence:
		return kerr.ConcurrentTransactions
	default:
		return kerr.InvalidTxnState
	}
	next := m.clone()
	next.State, next.UpdateMs = PrepareAbort, c.now()
	if commit {
		next.State = PrepareCommit
	}
	if err := c.write(ctx, p, ps, e, next); err != nil {
		return err
	}
	mk := markersOf(ps, next)
	if lw, ok := c.markers.(LocalMarkerWriter); ok && lw.Local(mk) {
		c.completeNow(p, ps, e, next, mk)
		return nil
	}
	c.startCompletion(p, ps, e, next, mk, false)
	return nil
}

// completeNow writes prepared's markers and then its completion before
// EndTxn is answered (c.mu held on entry and on return; released
// meanwhile). What fails is left to the background completion, which
// retries from the step that failed: the transaction is prepared, so it
// completes whatever the answer.
func (c *Coordinator) completeNow(p int32, ps *partState, e *entry, prepared *Metadata, mk Markers) {
	e.pending = true // nothing else happens to the id until it is complete
	if len(mk.Partitions) > 0 {
		c.mu.Unlock()
		err := c.markers.WriteMarkers(c.ctx, mk)
		c.mu.Lock()
		if err != nil {
			c.cfg.Log.Warn("writing transaction markers", "transactional_id", mk.TransactionalID, "attempt", 0, "error", err)
			if c.stillOwned(p, ps) && e.m == prepared {
				c.startCompletion(p, ps, e, prepared, mk, false)
			}
			return
		}
	}
	if !c.stillOwned(p, ps) || e.m != prepared {
		return
	}
	if err := c.write(c.ctx, p, ps, e, completed(prepared, mk.Commit, c.now())); err != nil && err != kerr.NotCoordinator {
		c.startCompletion(p, ps, e, prepared, mk, true)
	}
}

// markersOf is the markers job of prepared (PrepareCommit or
// PrepareAbort) at ps's coordinator epoch.
func markersOf(ps *partState, prepared *Metadata) Markers {
	return Markers{TransactionalID: prepared.TransactionalID, ProducerID: prepared.ProducerID,
		ProducerEpoch: prepared.ProducerEpoch, Commit: prepared.State == PrepareCommit,
		CoordinatorEpoch: ps.epoch, Partitions: prepared.Partitions}
}

// completed is the CompleteCommit or CompleteAbort state that follows
// prepared.
func completed(prepared *Metadata, commit bool, now int64) *Metadata {
	next := prepared.clone()
	next.State, next.Partitions, next.UpdateMs = CompleteAbort, nil, now
	if commit {
		next.State = CompleteCommit
	}
	return next
}

// fenceAndAbort aborts e's Ongoing transaction on the coordinator's own
// account (a timeout, or a new producer of the id): the epoch is bumped
// so the producer that began it is fenced, PrepareAbort written with the
// new epoch, and the markers sent in the background (Kafka's
// prepareFenceProducerEpoch then an abort not from the client).
func (c *Coordinator) fenceAndAbort(ctx context.Context, p int32, ps *partState, e *entry) error {
	m := e.m
	next := m.clone()
	if !m.epochExhausted() {
		next.ProducerEpoch++
		next.LastProducerID, next.LastProducerEpoch = m.ProducerID, m.ProducerEpoch
	}
	next.State, next.UpdateMs = PrepareAbort, c.now()
	if err := c.write(ctx, p, ps, e, next); err != nil {
		return err
	}
	c.startCompletion(p, ps, e, next, markersOf(ps, next), false)
	return nil
}

// startCompletion writes the markers mk of prepared (PrepareCommit or
// PrepareAbort; unless markersDone) and then its completion, in the
// background, retrying until done or the partition moves (c.mu held).
func (c *Coordinator) startCompletion(p int32, ps *partState, e *entry, prepared *Metadata, mk Markers, markersDone bool) {
	e.pending = true // nothing else happens to the id until it is complete
	c.wg.Add(1)
	run := func() {
		defer c.wg.Done()
		c.complete(p, ps, e, prepared, mk, markersDone)
	}
	if c.cfg.Go != nil {
		c.cfg.Go(run)
	} else {
		go run()
	}
}

// stillOwned reports whether ps is still partition p's state (c.mu held).
func (c *Coordinator) stillOwned(p int32, ps *partState) bool {
	return !c.closed && c.parts[p] == ps
}

// complete is the background half of a commit or abort.
func (c *Coordinator) complete(p int32, ps *partState, e *entry, prepared *Metadata, mk Markers, markersDone bool) {
	ctx := c.ctx
	for attempt := 0; !markersDone; attempt++ {
		if len(mk.Partitions) == 0 {
			break
		}
		err := c.markers.WriteMarkers(ctx, mk)
		if err == nil {
			break
		}
		c.cfg.Log.Warn("writing transaction markers", "transactional_id", mk.TransactionalID, "attempt", attempt, "error", err)
		if !c.wait() {
			return
		}
		c.mu.Lock()
		owned := c.stillOwned(p, ps)
		c.mu.Unlock()
		if !owned {
			return
		}
	}
	for {
		c.mu.Lock()
		if !c.stillOwned(p, ps) || e.m != prepared {
			c.mu.Unlock()
			return
		}
		err := c.write(ctx, p, ps, e, completed(prepared, mk.Commit, c.now()))
		if err != nil {
			// write cleared pending; keep the id blocked while retrying.
			e.pending = true
		}
		c.mu.Unlock()
		if err == nil {
			return
		}
		if err == kerr.NotCoordinator || !c.wait() {
			return
		}
	}
}

// wait sleeps one retry backoff; false when the coordinator closed.
func (c *Coordinator) wait() bool {
	t := time.NewTimer(c.cfg.RetryBackoff)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// AbortTimedOut aborts every Ongoing transaction older than its timeout
// (Kafka's abortTimedOutTransactions, run every
// transaction.abort.timed.out.transaction.cleanup.interval.ms): the
// producer is fenced by an epoch bump. It returns how many it began to
// abort.
func (c *Coordinator) AbortTimedOut(ctx context.Context) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	type job struct {
		p  int32
		ps *partState
		e  *entry
	}
	var jobs []job
	for p, ps := range c.parts {
		if ps.loading {
			continue
		}
		for _, e := range ps.txns {
			if !e.pending && e.m.State == Ongoing && e.m.StartMs+int64(e.m.TimeoutMs) <= now {
				jobs = append(jobs, job{p, ps, e})
			}
		}
	}
	n := 0
	for _, j := range jobs {
		if !c.stillOwned(j.p, j.ps) || j.e.pending || j.e.m.State != Ongoing {
			continue
		}
		c.cfg.Log.Info("aborting a timed out transaction", "transactional_id", j.e.m.TransactionalID,
			"producer_id", j.e.m.ProducerID, "epoch", j.e.m.ProducerEpoch)
		if err := c.fenceAndAbort(ctx, j.p, j.ps, j.e); err == nil {
			n++
		}
	}
	return n
}

// ExpireIDs removes transactional ids idle (Empty or completed) for longer
// than transactional.id.expiration.ms, writing a tombstone for each. It
// returns how many it removed.
func (c *Coordinator) ExpireIDs(ctx context.Context) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	n := 0
	for p, ps := range c.parts {
		if ps.loading {
			continue
		}
		var idle []*entry
		for _, e := range ps.txns {
			if !e.pending && e.m.State.complete() && e.m.UpdateMs+c.cfg.IDExpirationMs <= now {
				idle = append(idle, e)
			}
		}
		for _, e := range idle {
			if !c.stillOwned(p, ps) || e.pending || !e.m.State.complete() {
				continue
			}
			next := e.m.clone()
			next.State, next.UpdateMs = Dead, now
			if c.write(ctx, p, ps, e, next) == nil {
				n++
			}
		}
	}
	return n
}

// Describe returns a copy of id's state (DescribeTransactions), or the
// error to answer: TRANSACTIONAL_ID_NOT_FOUND when unknown.
func (c *Coordinator) Describe(id string) (Metadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, e, err := c.lookup(id)
	switch {
	case err != nil:
		return Metadata{}, err
	case e == nil || e.m.ProducerEpoch < 0:
		return Metadata{}, kerr.TransactionalIDNotFound
	}
	return *e.m.clone(), nil
}

// List returns the transactions of the owned partitions, those in one of
// states and of one of pids when these are not empty (ListTransactions).
func (c *Coordinator) List(states []State, pids []int64) []Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Metadata
	for _, ps := range c.parts {
		if ps.loading {
			continue
		}
		for _, e := range ps.txns {
			m := e.m
			if m.ProducerEpoch < 0 || (len(states) > 0 && !containsState(states, m.State)) ||
				(len(pids) > 0 && !containsPID(pids, m.ProducerID)) {
				continue
			}
			out = append(out, *m.clone())
		}
	}
	return out
}

func containsState(ss []State, s State) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func containsPID(ps []int64, p int64) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}
