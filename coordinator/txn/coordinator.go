package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Store writes to __transaction_state: the coordinator's output edge.
type Store interface {
	// Append writes key/value (value nil: a tombstone) to partition p as
	// the coordinator of epoch epoch, returning once it is as durable as the
	// log promises (in a cluster: the whole ISR has it). An error that
	// wraps ErrNotOwned means the partition moved.
	Append(ctx context.Context, p, epoch int32, key, value []byte) error
}

// Markers is one WriteTxnMarkers job: the end of a transaction to write to
// each partition of it.
type Markers struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []Partition
}

// MarkerWriter sends markers to the partitions' leaders: the other output
// edge. It returns nil once every partition holds the marker (or no longer
// exists), an error to be retried otherwise.
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, m Markers) error
}

// LocalMarkerWriter is a MarkerWriter that knows when it writes a job's
// markers without a network round trip (every partition is led by this
// broker: a single node). The coordinator then writes the markers and the
// completion before it answers EndTxn, so the producer's next transaction
// does not find the id still completing (CONCURRENT_TRANSACTIONS, which
// clients answer with a backoff of tens of milliseconds).
type LocalMarkerWriter interface {
	MarkerWriter
	Local(m Markers) bool
}

// IDAllocator hands out producer ids (the partition side's allocator).
type IDAllocator interface {
	Next(ctx context.Context) (int64, error)
}

// Config is the coordinator's configuration, with Kafka's property names.
type Config struct {
	// NumPartitions is the partition count of __transaction_state
	// (transaction.state.log.num.partitions).
	NumPartitions int32
	// MaxTimeoutMs is transaction.max.timeout.ms.
	MaxTimeoutMs int32
	// IDExpirationMs is transactional.id.expiration.ms.
	IDExpirationMs int64
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Go runs a background task (the completion of a transaction); a plain
	// goroutine when nil.
	Go func(func())
	// RetryBackoff is the wait between two attempts to write markers or
	// the completion record (100 ms when 0).
	RetryBackoff time.Duration
	Log          *slog.Logger
}

// Defaults of Kafka.
const (
	DefaultNumPartitions  = 50
	DefaultMaxTimeoutMs   = 900000
	DefaultIDExpirationMs = 604800000
	DefaultTimeoutMs      = 60000
)

// Coordinator is the transaction coordinator of the __transaction_state
// partitions this broker leads.
type Coordinator struct {
	cfg     Config
	store   Store
	markers MarkerWriter
	ids     IDAllocator

	numParts atomic.Int32

	mu     sync.Mutex
	parts  map[int32]*partState
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// partState is one owned partition of __transaction_state.
type partState struct {
	epoch   int32
	loading bool
	txns    map[string]*entry
}

// entry is one transactional id: its state as written, and whether a
// change of it is being written (then other requests get
// CONCURRENT_TRANSACTIONS).
type entry struct {
	m       *Metadata
	pending bool
}

// New returns a coordinator owning no partition yet.
func New(cfg Config, store Store, markers MarkerWriter, ids IDAllocator) *Coordinator {
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = DefaultNumPartitions
	}
	if cfg.MaxTimeoutMs <= 0 {
		cfg.MaxTimeoutMs = DefaultMaxTimeoutMs
	}
	if cfg.IDExpirationMs <= 0 {
		cfg.IDExpirationMs = DefaultIDExpirationMs
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg, store: store, markers: markers, ids: ids, parts: map[int32]*partState{}}
	c.numParts.Store(cfg.NumPartitions)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// Close stops background completions and waits for them.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// PartitionFor is Kafka's partitionFor: abs(id.hashCode) % n, with Java's
// String.hashCode over UTF-16 code units and Kafka's Utils.abs.
func PartitionFor(id string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// PartitionFor returns the __transaction_state partition of id.
func (c *Coordinator) PartitionFor(id string) int32 { return PartitionFor(id, c.numParts.Load()) }

// SetNumPartitions sets the partition count of __transaction_state: the
// topic's as it exists wins over transaction.state.log.num.partitions, as
// in Kafka.
func (c *Coordinator) SetNumPartitions(n int32) {
	if n > 0 {
		c.numParts.Store(n)
	}
}

// now is the clock in milliseconds.
func (c *Coordinator) now() int64 { return c.cfg.Now().UnixMilli() }

// lookup returns id's partition state and entry (nil when unknown), or the
// coordinator error (c.mu held).
func (c *Coordinator) lookup(id string) (int32, *partState, *entry, error) {
	if c.closed {
		return 0, nil, nil, kerr.NotCoordinator
	}
	p := c.PartitionFor(id)
	ps := c.parts[p]
	switch {
	case ps == nil:
		return p, nil, nil, kerr.NotCoordinator
	case ps.loading:
		return p, nil, nil, kerr.CoordinatorLoadInProgress
	}
	return p, ps, ps.txns[id], nil
}

// Owns reports whether id's partition is led here and loaded: the
// FindCoordinator answer (the load error when not).
func (c *Coordinator) Owns(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, _, err := c.lookup(id)
	return err
}

// write stores next as id's state: e is marked pending while the record is
// written (c.mu held on entry and on return; released meanwhile). On
// success e.m becomes next, unless the partition moved meanwhile.
func (c *Coordinator) write(ctx context.Context, p int32, ps *partState, e *entry, next *Metadata) error {
	if !canMove(e.m.State, next.State) {
		// A bug, not an input: Kafka throws IllegalStateException here.
		c.cfg.Log.Error("illegal transaction state transition", "transactional_id", next.TransactionalID, "from", e.m.State, "to", next.State)
		return kerr.UnknownServerError
	}
	e.pending = true
	epoch := ps.epoch
	key, value := EncodeKey(next.TransactionalID), EncodeValue(next)
	if next.State == Dead {
		value = nil
	}
	c.mu.Unlock()
	err := c.store.Append(ctx, p, epoch, key, value)
	c.mu.Lock()
	e.pending = false
	if cur := c.parts[p]; cur != ps || cur.epoch != epoch || c.closed {
		return kerr.NotCoordinator
	}
	if err != nil {
		c.cfg.Log.Warn("writing transaction state", "transactional_id", next.TransactionalID, "state", next.State, "error", err)
		if errors.Is(err, ErrNotOwned) {
			return kerr.NotCoordinator
		}
		return kerr.CoordinatorNotAvailable
	}
	if next.State == Dead {
		delete(ps.txns, next.TransactionalID)
		return nil
	}
	e.m = next
	return nil
}

// Load makes the coordinator own partition p at coordinator epoch epoch
// (the partition's leader epoch): its ids answer
// COORDINATOR_LOAD_IN_PROGRESS while read replays the partition's records
// (key, value; value nil for a tombstone), and the transactions found in
// PrepareCommit or PrepareAbort are then completed. A record that does not
// decode is logged and skipped.
func (c *Coordinator) Load(p, epoch int32, read func(yield func(key, value []byte) bool) error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if cur := c.parts[p]; cur != nil && cur.epoch > epoch {
		c.mu.Unlock()
		return fmt.Errorf("%w: partition %d at epoch %d, asked to load epoch %d", ErrNotOwned, p, cur.epoch, epoch)
	}
	ps := &partState{epoch: epoch, loading: true, txns: map[string]*entry{}}
	c.parts[p] = ps
	c.mu.Unlock()

	loaded := map[string]*Metadata{}
	bad := 0
	err := read(func(key, value []byte) bool {
		id, err := DecodeKey(key)
		if err != nil {
			bad++
			return true
		}
		if value == nil {
			delete(loaded, id)
			return true
		}
		m, err := DecodeValue(id, value)
		if err != nil {
			bad++
			c.cfg.Log.Warn("skipping a transaction log record", "partition", p, "error", err)
			return true
		}
		if prev := loaded[id]; prev != nil && prev.ProducerID != m.ProducerID {
			m.LastProducerID = prev.ProducerID
		}
		loaded[id] = m
		return true
	})

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts[p] != ps {
		return fmt.Errorf("%w: partition %d moved while loading", ErrNotOwned, p)
	}
	if err != nil {
		delete(c.parts, p)
		return fmt.Errorf("txn: loading partition %d: %w", p, err)
	}
	var prepared []*entry
	for id, m := range loaded {
		e := &entry{m: m}
		ps.txns[id] = e
		if m.State == PrepareCommit || m.State == PrepareAbort {
			prepared = append(prepared, e)
		}
	}
	ps.loading = false
	c.cfg.Log.Info("transaction state loaded", "partition", p, "epoch", epoch, "transactional_ids", len(loaded), "bad_records", bad, "to_complete", len(prepared))
	for _, e := range prepared {
		c.startCompletion(p, ps, e, e.m, markersOf(ps, e.m), false)
	}
	return nil
}

// Resign drops partition p (its leadership moved), unless a later epoch
// owns it already.
func (c *Coordinator) Resign(p, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.parts[p]; ps != nil && (epoch < 0 || ps.epoch <= epoch) {
		delete(c.parts, p)
	}
}

// Owned returns the partitions owned, with their coordinator epochs.
func (c *Coordinator) Owned() map[int32]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]int32, len(c.parts))
	for p, ps := range c.parts {
		out[p] = ps.epoch
	}
	return out
}

// NumPartitions is the partition count of __transaction_state in use.
func (c *Coordinator) NumPartitions() int32 { return c.numParts.Load() }

// MarkLoading makes partition p answer COORDINATOR_LOAD_IN_PROGRESS until
// Load of it (at epoch or later) completes: a broker that will load it
// soon says so rather than NOT_COORDINATOR.
func (c *Coordinator) MarkLoading(p, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.parts[p]; cur == nil || cur.epoch < epoch {
		c.parts[p] = &partState{epoch: epoch, loading: true, txns: map[string]*entry{}}
	}
}
