package producer

import (
	"fmt"
	"sort"

	"github.com/stratalog/strata/record"
)

// BatchesKept is how many of a producer's latest batches a partition
// remembers to answer retries (Kafka's NUM_BATCHES_TO_RETAIN; a producer
// has at most five requests in flight).
const BatchesKept = 5

// BatchMeta is one remembered batch of a producer.
type BatchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64
}

// Entry is one producer's state in a partition (Kafka's
// ProducerStateEntry).
type Entry struct {
	ID               int64
	Epoch            int16
	CoordinatorEpoch int32
	TxnFirstOffset   int64 // first offset of its ongoing transaction, -1: none
	LastTimestamp    int64
	batches          [BatchesKept]BatchMeta // oldest first
	n                int
}

// Batches returns the remembered batches, oldest first.
func (e *Entry) Batches() []BatchMeta { return e.batches[:e.n] }

// LastSeq is the last sequence appended, NoSequence when none.
func (e *Entry) LastSeq() int32 {
	if e.n == 0 {
		return NoSequence
	}
	return e.batches[e.n-1].LastSeq
}

func (e *Entry) addBatch(m BatchMeta) {
	if e.n == BatchesKept {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

func (e *Entry) findDuplicate(b *Batch) (BatchMeta, bool) {
	if b.Epoch != e.Epoch {
		return BatchMeta{}, false
	}
	for _, m := range e.batches[:e.n] {
		if m.FirstSeq == b.FirstSeq && m.LastSeq == b.LastSeq {
			return m, true
		}
	}
	return BatchMeta{}, false
}

// bumpEpoch moves the entry to epoch, forgetting the older epoch's batches.
func (e *Entry) bumpEpoch(epoch int16) {
	if epoch != e.Epoch {
		e.Epoch = epoch
		e.n = 0
	}
}

// CompletedTxn is a transaction a marker ended.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the marker's offset
	Aborted     bool
}

// State is a partition's producer state (Kafka's ProducerStateManager):
// every producer's entry and the ongoing transactions, as of End (the
// batches below it have been applied). Not safe for concurrent use: the
// log calls it under its writer lock.
type State struct {
	producers map[int64]*Entry
	ongoing   map[int64]int64 // producer id -> first offset of its open transaction
	End       int64
	// ExpirationMs is producer.id.expiration.ms: a producer with no open
	// transaction whose last batch is older is forgotten.
	ExpirationMs int64

	scratch []Entry // Check's staged entries, reused
}

// NewState returns an empty state at offset end.
func NewState(end, expirationMs int64) *State {
	return &State{producers: map[int64]*Entry{}, ongoing: map[int64]int64{}, End: end, ExpirationMs: expirationMs}
}

// Len is the number of producers known.
func (s *State) Len() int { return len(s.producers) }

// Entry returns producer id's entry (nil when unknown). The caller must
// not keep it across changes of the state.
func (s *State) Entry(id int64) *Entry { return s.producers[id] }

// Entries returns the entries sorted by producer id.
func (s *State) Entries() []Entry {
	out := make([]Entry, 0, len(s.producers))
	for _, e := range s.producers {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FirstUnstableOffset is the first offset of the oldest open
// transaction, and false when none is open.
func (s *State) FirstUnstableOffset() (int64, bool) {
	first, ok := int64(0), false
	for _, off := range s.ongoing {
		if !ok || off < first {
			first, ok = off, true
		}
	}
	return first, ok
}

// expired reports whether e is past producer.id.expiration.ms at now.
func (s *State) expired(e *Entry, now int64) bool {
	return s.ExpirationMs > 0 && e.TxnFirstOffset < 0 && now-e.LastTimestamp >= s.ExpirationMs
}

// Expire forgets the producers expired at now.
func (s *State) Expire(now int64) int {
	n := 0
	for id, e := range s.producers {
		if s.expired(e, now) {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// Check validates bs, the batches of one leader append in order (their
// offsets already assigned), as Kafka's ProducerAppendInfo does for a
// client's batches, and changes nothing. A data batch with a sequence is a
// client's: its epoch must not be older than the producer's, and its first
// sequence must follow the producer's last (0 for a new epoch or a new
// producer); a batch equal to one of the producer's last five is a retry:
// isDup with that batch's meta (bs must then hold that batch alone). A
// data batch without a sequence is a coordinator's (offsets committed in a
// transaction) and a control batch is a transaction marker: only their
// epoch is checked. now expires producers as Expire does.
func (s *State) Check(bs []Batch, now int64) (dup BatchMeta, isDup bool, err error) {
	s.scratch = s.scratch[:0]
	for i := range bs {
		b := &bs[i]
		e := s.staged(b.ProducerID, now)
		switch {
		case b.Control:
			if e != nil && b.Epoch < e.Epoch {
				return dup, false, fmt.Errorf("%w: marker epoch %d, producer %d is at %d", ErrInvalidEpoch, b.Epoch, b.ProducerID, e.Epoch)
			}
			if e != nil && b.IsMarker() && b.CoordinatorEpoch < e.CoordinatorEpoch {
				return dup, false, fmt.Errorf("%w: coordinator epoch %d, producer %d's is %d", ErrCoordinatorFenced, b.CoordinatorEpoch, b.ProducerID, e.CoordinatorEpoch)
			}
		case b.FirstSeq == NoSequence:
			if e != nil && b.Epoch < e.Epoch {
				return dup, false, fmt.Errorf("%w: epoch %d, producer %d is at %d", ErrInvalidEpoch, b.Epoch, b.ProducerID, e.Epoch)
			}
		case e == nil:
			if b.FirstSeq != 0 {
				return dup, false, fmt.Errorf("%w: producer %d unknown to the partition (expired or never issued), batch sequence %d", ErrUnknownProducer, b.ProducerID, b.FirstSeq)
			}
		default:
			if m, ok := e.findDuplicate(b); ok {
				if len(bs) != 1 {
					return dup, false, fmt.Errorf("%w: producer %d sequences %d-%d appended before, among other batches", ErrDuplicate, b.ProducerID, b.FirstSeq, b.LastSeq)
				}
				return m, true, nil
			}
			switch {
			case b.Epoch < e.Epoch:
				return dup, false, fmt.Errorf("%w: epoch %d, producer %d is at %d", ErrInvalidEpoch, b.Epoch, b.ProducerID, e.Epoch)
			case b.Epoch > e.Epoch:
				if b.FirstSeq != 0 {
					return dup, false, fmt.Errorf("%w: producer %d's new epoch %d starts at sequence %d, not 0", ErrOutOfOrderSequence, b.ProducerID, b.Epoch, b.FirstSeq)
				}
			case e.n == 0:
				// The epoch's batches are gone (only markers, or a snapshot
				// of a producer whose data was removed): any sequence.
			case !inSequence(e.LastSeq(), b.FirstSeq):
				return dup, false, fmt.Errorf("%w: producer %d epoch %d: sequence %d after %d", ErrOutOfOrderSequence, b.ProducerID, b.Epoch, b.FirstSeq, e.LastSeq())
			}
			if !b.Transactional && e.TxnFirstOffset >= 0 {
				return dup, false, fmt.Errorf("%w: producer %d sent a non-transactional batch inside its open transaction", ErrInvalidTxnState, b.ProducerID)
			}
		}
		s.stage(b, now)
	}
	return dup, false, nil
}

// staged returns producer id's entry as Check's earlier batches left it
// (nil when unknown or expired).
func (s *State) staged(id int64, now int64) *Entry {
	for i := range s.scratch {
		if s.scratch[i].ID == id {
			return &s.scratch[i]
		}
	}
	e := s.producers[id]
	if e == nil || s.expired(e, now) {
		return nil
	}
	return e
}

// stage applies b to a scratch copy of its producer's entry, for the
// checks of later batches of the same append.
func (s *State) stage(b *Batch, now int64) {
	var e *Entry
	for i := range s.scratch {
		if s.scratch[i].ID == b.ProducerID {
			e = &s.scratch[i]
		}
	}
	if e == nil {
		if cur := s.staged(b.ProducerID, now); cur != nil {
			s.scratch = append(s.scratch, *cur)
		} else {
			s.scratch = append(s.scratch, Entry{ID: b.ProducerID, Epoch: NoEpoch, TxnFirstOffset: -1, CoordinatorEpoch: -1})
		}
		e = &s.scratch[len(s.scratch)-1]
	}
	update(e, b)
}

// Apply records b, appended at its offsets, in the state: whatever its
// origin (a leader's append, replication, recovery), without checks. It
// returns the transaction a commit or abort marker ended.
func (s *State) Apply(b *Batch) (CompletedTxn, bool) {
	if b.LastOffset >= s.End {
		s.End = b.LastOffset + 1
	}
	e := s.producers[b.ProducerID]
	if e == nil {
		e = &Entry{ID: b.ProducerID, Epoch: NoEpoch, TxnFirstOffset: -1, CoordinatorEpoch: -1}
		s.producers[b.ProducerID] = e
	}
	txn, ended := update(e, b)
	switch {
	case ended:
		delete(s.ongoing, b.ProducerID)
	case e.TxnFirstOffset >= 0:
		if _, ok := s.ongoing[b.ProducerID]; !ok {
			s.ongoing[b.ProducerID] = e.TxnFirstOffset
		}
	}
	return txn, ended
}

// update applies b to e; it reports the transaction a marker ended.
func update(e *Entry, b *Batch) (CompletedTxn, bool) {
	if b.Epoch > e.Epoch || e.Epoch == NoEpoch {
		e.bumpEpoch(b.Epoch)
	}
	e.LastTimestamp = b.MaxTimestamp
	if b.Control {
		if !b.IsMarker() {
			return CompletedTxn{}, false
		}
		txn := CompletedTxn{ProducerID: e.ID, FirstOffset: e.TxnFirstOffset, LastOffset: b.FirstOffset,
			Aborted: b.Marker == record.ControlAbort}
		if txn.FirstOffset < 0 {
			txn.FirstOffset = b.FirstOffset
		}
		e.CoordinatorEpoch = b.CoordinatorEpoch
		e.TxnFirstOffset = -1
		return txn, true
	}
	if b.FirstSeq != NoSequence {
		e.addBatch(BatchMeta{FirstSeq: b.FirstSeq, LastSeq: b.LastSeq, FirstOffset: b.FirstOffset,
			LastOffset: b.LastOffset, Timestamp: b.MaxTimestamp})
	}
	if b.Transactional && e.TxnFirstOffset < 0 {
		e.TxnFirstOffset = b.FirstOffset
	}
	return CompletedTxn{}, false
}

// LastStableOffset of a completed transaction, for its aborted-transaction
// index entry: the first offset of the oldest transaction still open, else
// the offset after the marker.
func (s *State) LastStableOffset(txn CompletedTxn) int64 {
	if first, ok := s.FirstUnstableOffset(); ok {
		return first
	}
	return txn.LastOffset + 1
}
