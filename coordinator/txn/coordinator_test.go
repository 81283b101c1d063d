package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is the __transaction_state edge in memory: every record kept
// in order per partition, so a second coordinator can Load them.
type memStore struct {
	mu   sync.Mutex
	recs map[int32][][2][]byte
	fail error
}

func (s *memStore) Append(_ context.Context, p, _ int32, key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.recs == nil {
		s.recs = map[int32][][2][]byte{}
	}
	s.recs[p] = append(s.recs[p], [2][]byte{key, value})
	return nil
}

func (s *memStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.recs {
		n += len(r)
	}
	return n
}

func (s *memStore) reader(p int32) func(func(k, v []byte) bool) error {
	return func(yield func(k, v []byte) bool) error {
		s.mu.Lock()
		recs := append([][2][]byte(nil), s.recs[p]...)
		s.mu.Unlock()
		for _, r := range recs {
			if !yield(r[0], r[1]) {
				break
			}
		}
		return nil
	}
}

// markerLog records the markers written; gate, when set, holds them.
type markerLog struct {
	mu   sync.Mutex
	got  []Markers
	fail int
	gate chan struct{}
}

func (l *markerLog) WriteMarkers(ctx context.Context, m Markers) error {
	if l.gate != nil {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail > 0 {
		l.fail--
		return errors.New("leader not available")
	}
	l.got = append(l.got, m)
	return nil
}

func (l *markerLog) all() []Markers {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Markers(nil), l.got...)
}

type counterIDs struct {
	mu   sync.Mutex
	next int64
}

func (c *counterIDs) Next(context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return c.next + 999, nil
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type rig struct {
	c       *Coordinator
	store   *memStore
	markers *markerLog
	clock   *fakeClock
	ids     *counterIDs
}

func newRig(t *testing.T) *rig {
	r := &rig{store: &memStore{}, markers: &markerLog{}, clock: &fakeClock{t: time.UnixMilli(1_700_000_000_000)}, ids: &counterIDs{}}
	r.c = r.start(t)
	return r
}

// start makes a coordinator over r's edges owning every partition.
func (r *rig) start(t *testing.T) *Coordinator {
	c := New(Config{NumPartitions: 4, Now: r.clock.now, RetryBackoff: time.Millisecond}, r.store, r.markers, r.ids)
	t.Cleanup(c.Close)
	for p := int32(0); p < 4; p++ {
		if err := c.Load(p, 7, r.store.reader(p)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// settle waits until id is neither being written nor being completed.
func settle(t *testing.T, c *Coordinator, id string) Metadata {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		_, _, e, _ := c.lookup(id)
		busy := e != nil && e.pending
		c.mu.Unlock()
		if !busy {
			m, err := c.Describe(id)
			if err != nil {
				t.Fatalf("Describe(%q): %v", id, err)
			}
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still busy", id)
		}
		time.Sleep(time.Millisecond)
	}
}

var ctx = context.Background()

func none() ProducerIDAndEpoch { return ProducerIDAndEpoch{-1, -1} }

func TestEndTxnNeverBegun(t *testing.T) {
	r := newRig(t)
	if err := r.c.EndTxn(ctx, "nobody", 5, 0, true); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("EndTxn of an unknown id: %v, want INVALID_PRODUCER_ID_MAPPING", err)
	}
	pe, err := r.c.InitProducerID(ctx, "t1", 60000, none())
	if err != nil || pe.Epoch != 0 {
		t.Fatalf("InitProducerID = %+v, %v", pe, err)
	}
	written := r.store.count()
	for _, commit := range []bool{true, false} {
		if err := r.c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, commit); !errors.Is(err, kerr.InvalidTxnState) {
			t.Fatalf("EndTxn(commit=%v) with no transaction: %v, want INVALID_TXN_STATE", commit, err)
		}
	}
	if r.store.count() != written || len(r.markers.all()) != 0 {
		t.Fatalf("an EndTxn refused wrote records (%d -> %d) or markers %v", written, r.store.count(), r.markers.all())
	}
	if m := settle(t, r.c, "t1"); m.State != Empty {
		t.Fatalf("state %s, want Empty", m.State)
	}
}

func TestCommitAndReload(t *testing.T) {
	r := newRig(t)
	pe, _ := r.c.InitProducerID(ctx, "t1", 60000, none())
	parts := []Partition{{"out", 1}, {"out", 0}}
	if err := r.c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, parts); err != nil {
		t.Fatal(err)
	}
	if err := r.c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, parts[:1]); err != nil {
		t.Fatal(err)
	}
	if err := r.c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, true); err != nil {
		t.Fatal(err)
	}
	m := settle(t, r.c, "t1")
	if m.State != CompleteCommit || len(m.Partitions) != 0 {
		t.Fatalf("after commit: %+v", m)
	}
	mk := r.markers.all()
	if len(mk) != 1 || !mk[0].Commit || mk[0].ProducerEpoch != pe.Epoch || mk[0].CoordinatorEpoch != 7 || len(mk[0].Partitions) != 2 {
		t.Fatalf("markers %+v", mk)
	}
	// A retried EndTxn is answered again, the other outcome refused.
	if err := r.c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, true); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	if err := r.c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
	// A second coordinator loading the same records sees the same state.
	c2 := r.start(t)
	m2 := settle(t, c2, "t1")
	if m2.State != CompleteCommit || m2.ProducerID != pe.ProducerID || m2.ProducerEpoch != pe.Epoch {
		t.Fatalf("reloaded %+v", m2)
	}
}

// TestFencedByNewProducer: a second producer with the same transactional
// id aborts the first one's transaction and fences it; the first one
// writes nothing more.
func TestFencedByNewProducer(t *testing.T) {
	r := newRig(t)
	a, _ := r.c.InitProducerID(ctx, "t1", 60000, none())
	if err := r.c.AddPartitions(ctx, "t1", a.ProducerID, a.Epoch, []Partition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.InitProducerID(ctx, "t1", 60000, none()); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("InitProducerID over an open transaction: %v, want CONCURRENT_TRANSACTIONS", err)
	}
	settle(t, r.c, "t1")
	b, err := r.c.InitProducerID(ctx, "t1", 60000, none())
	if err != nil || b.ProducerID != a.ProducerID || b.Epoch != a.Epoch+2 {
		t.Fatalf("new producer %+v, %v; old %+v", b, err, a)
	}
	mk := r.markers.all()
	if len(mk) != 1 || mk[0].Commit || mk[0].ProducerEpoch != a.Epoch+1 {
		t.Fatalf("markers %+v, want one abort at epoch %d", mk, a.Epoch+1)
	}
	written := r.store.count()
	if err := r.c.AddPartitions(ctx, "t1", a.ProducerID, a.Epoch, []Partition{{"out", 1}}); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("old producer's AddPartitions: %v, want PRODUCER_FENCED", err)
	}
	if err := r.c.EndTxn(ctx, "t1", a.ProducerID, a.Epoch, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("old producer's EndTxn: %v, want PRODUCER_FENCED", err)
	}
	if _, err := r.c.InitProducerID(ctx, "t1", 60000, a); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("old producer's InitProducerID (KIP-360): %v, want PRODUCER_FENCED", err)
	}
	if r.store.count() != written {
		t.Fatalf("the fenced producer wrote %d records", r.store.count()-written)
	}
	// The new producer's own retry of InitProducerID with its epoch bumps it.
	c, err := r.c.InitProducerID(ctx, "t1", 60000, b)
	if err != nil || c.Epoch != b.Epoch+1 {
		t.Fatalf("KIP-360 bump: %+v, %v", c, err)
	}
}

// TestTimedOutAborted: a transaction left open by a producer that died is
// aborted once its timeout passed, and its producer fenced.
func TestTimedOutAborted(t *testing.T) {
	r := newRig(t)
	a, _ := r.c.InitProducerID(ctx, "t1", 1000, none())
	if err := r.c.AddPartitions(ctx, "t1", a.ProducerID, a.Epoch, []Partition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	r.clock.add(999 * time.Millisecond)
	if n := r.c.AbortTimedOut(ctx); n != 0 {
		t.Fatalf("aborted %d before the timeout", n)
	}
	r.clock.add(time.Millisecond)
	if n := r.c.AbortTimedOut(ctx); n != 1 {
		t.Fatalf("aborted %d, want 1", n)
	}
	m := settle(t, r.c, "t1")
	if m.State != CompleteAbort || m.ProducerEpoch != a.Epoch+1 {
		t.Fatalf("after the timeout: %+v", m)
	}
	if mk := r.markers.all(); len(mk) != 1 || mk[0].Commit || mk[0].ProducerEpoch != a.Epoch+1 {
		t.Fatalf("markers %+v", mk)
	}
	if err := r.c.EndTxn(ctx, "t1", a.ProducerID, a.Epoch, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the dead producer's commit: %v, want PRODUCER_FENCED", err)
	}
}

// TestPreparedCompletedAfterFailover: a coordinator that wrote
// PrepareCommit but no markers (it died) leaves the transaction to the
// next one, which completes it on load.
func TestPreparedCompletedAfterFailover(t *testing.T) {
	r := newRig(t)
	r.markers.gate = make(chan struct{})
	pe, _ := r.c.InitProducerID(ctx, "t1", 60000, none())
	_ = r.c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, []Partition{{"out", 0}})
	if err := r.c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, true); err != nil {
		t.Fatal(err)
	}
	if err := r.c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, []Partition{{"out", 0}}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("AddPartitions while committing: %v, want CONCURRENT_TRANSACTIONS", err)
	}
	r.c.Close() // the old coordinator dies with its markers unsent
	r.markers.gate = nil
	r.markers.fail = 2 // and the partition leaders are not reachable at first
	c2 := r.start(t)
	m := settle(t, c2, "t1")
	if m.State != CompleteCommit {
		t.Fatalf("after failover: %s, want CompleteCommit", m.State)
	}
	if mk := r.markers.all(); len(mk) != 1 || !mk[0].Commit {
		t.Fatalf("markers %+v", mk)
	}
}

func TestStoreFailure(t *testing.T) {
	r := newRig(t)
	pe, _ := r.c.InitProducerID(ctx, "t1", 60000, none())
	r.store.mu.Lock()
	r.store.fail = errors.New("disk gone")
	r.store.mu.Unlock()
	if err := r.c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, []Partition{{"out", 0}}); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("AddPartitions with a failing log: %v", err)
	}
	if m := settle(t, r.c, "t1"); m.State != Empty {
		t.Fatalf("state %s after a failed write, want Empty", m.State)
	}
	if _, err := r.c.InitProducerID(ctx, "t1", 0, none()); !errors.Is(err, kerr.InvalidTransactionTimeout) {
		t.Fatalf("timeout 0: %v", err)
	}
	if _, err := r.c.InitProducerID(ctx, "t1", DefaultMaxTimeoutMs+1, none()); !errors.Is(err, kerr.InvalidTransactionTimeout) {
		t.Fatalf("timeout over the max: %v", err)
	}
}

func TestNotOwned(t *testing.T) {
	r := newRig(t)
	r.c.Resign(r.c.PartitionFor("t1"), 7)
	if _, err := r.c.InitProducerID(ctx, "t1", 60000, none()); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("after resigning: %v, want NOT_COORDINATOR", err)
	}
}

// TestExpireIDs: an id idle past transactional.id.expiration.ms is
// removed with a tombstone, which a reload honours; an id with a
// transaction open is kept.
func TestExpireIDs(t *testing.T) {
	r := newRig(t)
	idle, _ := r.c.InitProducerID(ctx, "idle", 60000, none())
	busy, _ := r.c.InitProducerID(ctx, "busy", 60000, none())
	_ = idle
	if err := r.c.AddPartitions(ctx, "busy", busy.ProducerID, busy.Epoch, []Partition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	r.clock.add(time.Duration(DefaultIDExpirationMs) * time.Millisecond)
	if n := r.c.ExpireIDs(ctx); n != 1 {
		t.Fatalf("expired %d ids, want 1", n)
	}
	if _, err := r.c.Describe("idle"); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Fatalf("idle id after expiry: %v", err)
	}
	c2 := r.start(t)
	if _, err := c2.Describe("idle"); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Fatalf("idle id after reload: %v, want the tombstone honoured", err)
	}
	if m := settle(t, c2, "busy"); m.State != Ongoing {
		t.Fatalf("busy id after reload: %s", m.State)
	}
}

// TestLoadSkipsBadRecords: a record that does not decode is skipped and
// the id keeps its last good state.
func TestLoadSkipsBadRecords(t *testing.T) {
	r := newRig(t)
	pe, _ := r.c.InitProducerID(ctx, "t1", 60000, none())
	p := r.c.PartitionFor("t1")
	r.store.mu.Lock()
	r.store.recs[p] = append(r.store.recs[p], [2][]byte{EncodeKey("t1"), {0, 0, 1}}, [2][]byte{{0xff}, {0}})
	r.store.mu.Unlock()
	c2 := r.start(t)
	m := settle(t, c2, "t1")
	if m.ProducerID != pe.ProducerID || m.ProducerEpoch != pe.Epoch || m.State != Empty {
		t.Fatalf("after a bad record: %+v", m)
	}
}
