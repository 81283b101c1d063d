package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// localMarkers is a markerLog whose partitions are all led here: a
// LocalMarkerWriter.
type localMarkers struct{ *markerLog }

func (localMarkers) Local(Markers) bool { return true }

// flakyStore fails its appends number failAt, failAt+1, ... failAt+n-1
// (counting from 1).
type flakyStore struct {
	*memStore
	mu                       sync.Mutex
	n, failAt, failN, failed int
}

func (s *flakyStore) Append(ctx context.Context, p, epoch int32, key, value []byte) error {
	s.mu.Lock()
	s.n++
	fail := s.n >= s.failAt && s.n < s.failAt+s.failN
	if fail {
		s.failed++
	}
	s.mu.Unlock()
	if fail {
		return errors.New("disk busy")
	}
	return s.memStore.Append(ctx, p, epoch, key, value)
}

// newLocalRig is a coordinator over local markers and store (a memStore
// when nil); with held, background completions are appended to it
// instead of run (those left are run before the coordinator closes, which
// waits for them).
func newLocalRig(t *testing.T, store Store, markers *markerLog, held *[]func()) *Coordinator {
	t.Helper()
	mem := &memStore{}
	if store == nil {
		store = mem
	}
	var goRun func(func())
	if held != nil {
		goRun = func(f func()) { *held = append(*held, f) }
	}
	c := New(Config{NumPartitions: 1, RetryBackoff: time.Millisecond, Go: goRun}, store, localMarkers{markers}, &counterIDs{})
	t.Cleanup(c.Close)
	if held != nil {
		t.Cleanup(func() {
			for _, f := range *held {
				f()
			}
		})
	}
	if err := c.Load(0, 3, mem.reader(0)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLocalCompletedBeforeEndTxnAnswered: with every partition local, EndTxn
// is answered once the markers and CompleteCommit are written, so the
// producer's next AddPartitionsToTxn right after it is not refused
// CONCURRENT_TRANSACTIONS (clients back off tens of milliseconds on it).
// Background completions are held here: before the change EndTxn left the
// transaction in PrepareCommit for them.
func TestLocalCompletedBeforeEndTxnAnswered(t *testing.T) {
	var held []func()
	markers := &markerLog{}
	c := newLocalRig(t, nil, markers, &held)
	pe, err := c.InitProducerID(ctx, "t1", 60000, none())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		parts := []Partition{{"out", 0}, {"out", 1}}
		if err := c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, parts); err != nil {
			t.Fatalf("transaction %d: AddPartitions right after the last EndTxn: %v", i, err)
		}
		commit := i != 1
		if err := c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, commit); err != nil {
			t.Fatal(err)
		}
		m, err := c.Describe("t1")
		want := CompleteCommit
		if !commit {
			want = CompleteAbort
		}
		if err != nil || m.State != want || len(m.Partitions) != 0 {
			t.Fatalf("transaction %d: state %s (%v) when EndTxn was answered, want %s", i, m.State, err, want)
		}
		mk := markers.all()
		if len(mk) != i+1 || mk[i].Commit != commit || mk[i].CoordinatorEpoch != 3 || len(mk[i].Partitions) != 2 {
			t.Fatalf("transaction %d: markers %+v", i, mk)
		}
	}
	if len(held) != 0 {
		t.Fatalf("%d completions left to the background", len(held))
	}
}

// TestLocalMarkersFailRetried: when the markers cannot be written before
// the answer, EndTxn still succeeds (the transaction is prepared), the id
// stays busy, and the background completion writes them.
func TestLocalMarkersFailRetried(t *testing.T) {
	var held []func()
	markers := &markerLog{fail: 1}
	c := newLocalRig(t, nil, markers, &held)
	checkHeldCompletion(t, c, markers, &held)
}

// TestLocalCompletionWriteFailRetried: when the markers are written but
// CompleteCommit is not, the background completion retries the record
// only: the markers are not written a second time.
func TestLocalCompletionWriteFailRetried(t *testing.T) {
	var held []func()
	markers := &markerLog{}
	// Appends: 1 InitProducerId, 2 AddPartitions, 3 PrepareCommit, 4
	// CompleteCommit (failing).
	store := &flakyStore{memStore: &memStore{}, failAt: 4, failN: 1}
	c := newLocalRig(t, store, markers, &held)
	checkHeldCompletion(t, c, markers, &held)
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.failed != 1 {
		t.Fatalf("%d failed appends, want 1", store.failed)
	}
}

// checkHeldCompletion commits a transaction whose completion before the
// answer fails, and checks that it is left to one background completion
// (held) which completes it with one marker written in all.
func checkHeldCompletion(t *testing.T, c *Coordinator, markers *markerLog, held *[]func()) {
	t.Helper()
	pe, _ := c.InitProducerID(ctx, "t1", 60000, none())
	if err := c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, []Partition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx, "t1", pe.ProducerID, pe.Epoch, true); err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	if err := c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, []Partition{{"out", 0}}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("AddPartitions while the commit is not complete: %v, want CONCURRENT_TRANSACTIONS", err)
	}
	if m, _ := c.Describe("t1"); m.State != PrepareCommit || len(*held) != 1 {
		t.Fatalf("state %s with %d background completions, want PrepareCommit and 1", m.State, len(*held))
	}
	f := (*held)[0]
	*held = (*held)[1:]
	f()
	if m := settle(t, c, "t1"); m.State != CompleteCommit {
		t.Fatalf("state %s, want CompleteCommit", m.State)
	}
	if mk := markers.all(); len(mk) != 1 || !mk[0].Commit {
		t.Fatalf("markers %+v, want exactly one commit", mk)
	}
	if err := c.AddPartitions(ctx, "t1", pe.ProducerID, pe.Epoch, []Partition{{"out", 0}}); err != nil {
		t.Fatalf("AddPartitions once complete: %v", err)
	}
}
