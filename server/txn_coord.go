package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/coordinator/txn"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// TxnStateTopic is Kafka's internal topic of transaction state.
const TxnStateTopic = "__transaction_state"

// txnCoord wires the transaction coordinator (coordinator/txn) to this
// broker: its Store appends to __transaction_state, its MarkerWriter
// appends the control batches to the partitions (all local on a single
// node), its producer ids come from the broker's allocator. On a single
// node it owns every partition of __transaction_state at coordinator
// epoch 0, loaded at start; the topic is created on the first
// FindCoordinator for a transactional id, as Kafka does.
type txnCoord struct {
	s       *Server
	c       *txn.Coordinator
	topicMu sync.Mutex
	// created is set once the topic exists and every partition is loaded
	// (or being loaded at start), creating while it is created.
	created, creating bool
}

// newTxnCoord makes the coordinator; single node: loads an existing
// __transaction_state in the background.
func newTxnCoord(s *Server, ids producer.IDAllocator) *txnCoord {
	tc := &txnCoord{s: s}
	tc.c = txn.New(txn.Config{
		NumPartitions:  s.cfg.TxnStateNumPartitions,
		MaxTimeoutMs:   s.cfg.TxnMaxTimeoutMs,
		IDExpirationMs: s.cfg.TxnIDExpirationMs,
		Log:            s.log.With("coordinator", "transaction"),
	}, txnStore{tc}, txnMarkers{s}, ids)
	return tc
}

// topicConfigs are the topic overrides Kafka gives __transaction_state.
func (tc *txnCoord) topicConfigs() map[string]string {
	c := map[string]string{
		"cleanup.policy":   "compact",
		"segment.bytes":    strconv.FormatInt(tc.s.cfg.TxnStateSegmentBytes, 10),
		"compression.type": "uncompressed",
	}
	if tc.s.cl != nil {
		c["min.insync.replicas"] = strconv.Itoa(int(tc.s.cfg.TxnStateMinISR))
	}
	return c
}

// startLoading loads an existing __transaction_state (single node).
func (tc *txnCoord) startLoading() {
	t := tc.s.topics.get(TxnStateTopic)
	if t == nil {
		return
	}
	parts := tc.s.topics.parts(t)
	tc.c.SetNumPartitions(int32(len(parts)))
	tc.topicMu.Lock()
	tc.created = true
	tc.topicMu.Unlock()
	for _, p := range parts {
		tc.c.MarkLoading(p.index, 0)
	}
	tc.s.bgWG.Add(1)
	go func() {
		defer tc.s.bgWG.Done()
		for _, p := range parts {
			select {
			case <-tc.s.done:
				return
			default:
			}
			if err := tc.c.Load(p.index, 0, readerOf(p)); err != nil {
				tc.s.log.Error("loading transaction state", "partition", p.index, "error", err)
			}
		}
	}()
}

// readerOf replays partition p for txn.Coordinator.Load.
func readerOf(p *partition) func(func(k, v []byte) bool) error {
	return func(yield func(k, v []byte) bool) error {
		errStop := errors.New("stop")
		err := readLog(p, func(k, v []byte) error {
			if !yield(k, v) {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			return nil
		}
		return err
	}
}

// ensureTopic creates __transaction_state unless it exists; the new
// partitions are owned (empty) at once.
func (tc *txnCoord) ensureTopic() error {
	if tc.s.cl != nil {
		return nil // cluster mode: FindCoordinator creates it (ensureTxnTopic)
	}
	tc.topicMu.Lock()
	defer tc.topicMu.Unlock()
	if tc.created {
		return nil
	}
	if !tc.creating {
		tc.creating = true
		tc.s.bgWG.Add(1)
		go func() {
			defer tc.s.bgWG.Done()
			err := tc.create()
			tc.topicMu.Lock()
			defer tc.topicMu.Unlock()
			tc.creating = false
			if err == nil {
				tc.created = true
			}
		}()
	}
	return errTxnTopicCreating
}

// errTxnTopicCreating: __transaction_state is being created (answered
// COORDINATOR_NOT_AVAILABLE, as Kafka does while it creates the topic).
var errTxnTopicCreating = errors.New("server: the transaction state topic is being created")

// create creates __transaction_state unless it exists and loads its
// (empty) partitions.
func (tc *txnCoord) create() error {
	if tc.s.topics.get(TxnStateTopic) == nil {
		n := tc.s.cfg.TxnStateNumPartitions
		_, err := tc.s.topics.create(TxnStateTopic, n, tc.topicConfigs(), false)
		if err != nil && !errors.Is(err, errTopicExists) {
			tc.s.log.Error("creating the transaction state topic", "error", err)
			return err
		}
		tc.s.log.Info("transaction state topic created", "partitions", n)
	}
	t := tc.s.topics.get(TxnStateTopic)
	if t == nil {
		return fmt.Errorf("%w: %s missing after creation", ErrDataDir, TxnStateTopic)
	}
	parts := tc.s.topics.parts(t)
	tc.c.SetNumPartitions(int32(len(parts)))
	for _, p := range parts {
		if err := tc.c.Load(p.index, 0, readerOf(p)); err != nil {
			return err
		}
	}
	return nil
}

// expiryLoop aborts timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms and removes
// expired transactional ids every
// transaction.remove.expired.transaction.cleanup.interval.ms.
func (tc *txnCoord) expiryLoop() {
	defer tc.s.bgWG.Done()
	abort := time.NewTicker(time.Duration(tc.s.cfg.TxnAbortIntervalMs) * time.Millisecond)
	defer abort.Stop()
	remove := time.NewTicker(time.Duration(tc.s.cfg.TxnRemoveIntervalMs) * time.Millisecond)
	defer remove.Stop()
	for {
		select {
		case <-tc.s.done:
			return
		case <-abort.C:
			tc.c.AbortTimedOut(context.Background())
		case <-remove.C:
			tc.c.ExpireIDs(context.Background())
		}
	}
}

// txnStore is the coordinator's Store: one record per batch appended to a
// partition of __transaction_state.
type txnStore struct{ tc *txnCoord }

func (st txnStore) Append(_ context.Context, p, epoch int32, key, value []byte) error {
	s := st.tc.s
	if s.cl != nil {
		opts := record.DefaultBatchOptions()
		buf, err := record.AppendBatch(nil, opts, []record.Record{{Timestamp: time.Now().UnixMilli(), Key: key, Value: value}})
		if err != nil {
			return err
		}
		return s.cl.appendTxnState(p, epoch, buf)
	}
	part := s.topics.partition(TxnStateTopic, p)
	if part == nil {
		return fmt.Errorf("%w: %s partition %d", txn.ErrNotOwned, TxnStateTopic, p)
	}
	opts := record.DefaultBatchOptions()
	opts.LeaderEpoch = 0
	buf, err := record.AppendBatch(nil, opts, []record.Record{{Timestamp: time.Now().UnixMilli(), Key: key, Value: value}})
	if err != nil {
		return err
	}
	if _, err := part.log.Append(buf); err != nil {
		if errors.Is(err, segment.ErrClosed) {
			return fmt.Errorf("%w: %w", txn.ErrNotOwned, err)
		}
		return err
	}
	return nil
}

// txnMarkersHook, when set (tests), runs before a coordinator sends
// markers; an error fails that attempt.
var txnMarkersHook func(ctx context.Context, s *Server) error

// txnMarkers is the coordinator's MarkerWriter on a single node: every
// partition is local.
type txnMarkers struct{ s *Server }

// Local reports that a single node writes every marker itself (appends to
// its own partitions): the coordinator completes a transaction before it
// answers EndTxn.
func (w txnMarkers) Local(txn.Markers) bool { return w.s.cl == nil }

func (w txnMarkers) WriteMarkers(ctx context.Context, m txn.Markers) error {
	if hook := txnMarkersHook; hook != nil {
		if err := hook(ctx, w.s); err != nil {
			return err
		}
	}
	if w.s.cl != nil {
		return w.s.cl.writeMarkers(ctx, m)
	}
	for _, tp := range m.Partitions {
		if code := w.s.writeTxnMarker(m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, tp.Topic, tp.Partition); code != 0 {
			return fmt.Errorf("marker to %s-%d: %w", tp.Topic, tp.Partition, kerr.ErrorForCode(code))
		}
	}
	return nil
}

// writeTxnMarker appends a COMMIT or ABORT control batch of producer
// pid/epoch to a local partition (the WriteTxnMarkers handler's work, and
// the coordinator's own on a single node) through the log's append path,
// and, for __consumer_offsets, makes the transaction's offset commits
// visible or drops them. A partition that no longer exists is done.
func (s *Server) writeTxnMarker(pid int64, epoch int16, commit bool, coordEpoch int32, topic string, partition int32) int16 {
	if s.cl != nil {
		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch = pid, epoch
		buf, err := record.AppendEndTxnBatch(nil, opts, commit, coordEpoch, time.Now().UnixMilli())
		if err != nil {
			return kerr.UnknownServerError.Code
		}
		code := s.cl.appendMarker(buf, topic, partition)
		if code == 0 && topic == OffsetsTopic && s.groups != nil {
			s.groups.endTxnOffsets(pid, commit, partition)
		}
		return code
	}
	p := s.topics.partition(topic, partition)
	if p == nil {
		if s.topics.get(topic) == nil {
			return 0 // deleted: nothing to end
		}
		return kerr.UnknownTopicOrPartition.Code
	}
	opts := record.DefaultBatchOptions()
	opts.LeaderEpoch = 0
	opts.ProducerID, opts.ProducerEpoch = pid, epoch
	buf, err := record.AppendEndTxnBatch(nil, opts, commit, coordEpoch, time.Now().UnixMilli())
	if err != nil {
		return kerr.UnknownServerError.Code
	}
	if _, err := p.log.Append(buf); err != nil {
		if errors.Is(err, segment.ErrClosed) {
			return kerr.UnknownTopicOrPartition.Code
		}
		s.log.Error("appending a transaction marker", "topic", topic, "partition", partition, "error", err)
		return kerr.KafkaStorageError.Code
	}
	if topic == OffsetsTopic && s.groups != nil {
		s.groups.endTxnOffsets(pid, commit, partition)
	}
	return 0
}

// startTxns makes the producer id allocator and the transaction
// coordinator (single node: loads __transaction_state if it exists).
func (s *Server) startTxns() {
	s.txns = newTxnCoord(s, s.ProducerIDs())
	if s.cl == nil {
		s.txns.startLoading()
	} else {
		s.txns.c.SetNumPartitions(s.cl.txnPartitionCount())
	}
	s.bgWG.Add(1)
	go s.txns.expiryLoop()
}

// close stops the coordinator's background completions.
func (tc *txnCoord) close() { tc.c.Close() }

// findCoordinator is FindCoordinator's answer for transactional id key:
// this node once __transaction_state exists and the id's partition is
// loaded.
func (tc *txnCoord) findCoordinator(key string) (int16, string) {
	switch {
	case key == "":
		return kerr.InvalidRequest.Code, "empty transactional id"
	}
	if err := tc.ensureTopic(); err != nil {
		return kerr.CoordinatorNotAvailable.Code, "the transaction state topic cannot be created"
	}
	if code := codeOf(tc.c.Owns(key)); code != 0 {
		return code, ""
	}
	return 0, ""
}

// verifyTxnProduce checks a transactional batch with its coordinator
// before it is appended, as KIP-890 (Kafka 3.6+) does: its producer id and
// epoch must be the transactional id's current ones and the partition part
// of its ongoing transaction. A producer fenced by a newer one
// (INVALID_PRODUCER_EPOCH) or writing outside a transaction
// (INVALID_TXN_STATE) could otherwise leave records no marker ever ends.
// Checked when the id's coordinator is this broker (always on a single
// node); in a cluster a batch whose coordinator is elsewhere is not
// verified (Kafka asks it with AddPartitionsToTxn v4; not done here).
func (s *Server) verifyTxnProduce(txnID *string, topic string, partition int32, recs []byte) (int16, string) {
	b := record.Batch(recs)
	if !b.IsTransactional() {
		return 0, ""
	}
	if txnID == nil || *txnID == "" {
		return kerr.InvalidRecord.Code, "a transactional batch without a transactional id"
	}
	if s.txns == nil || s.txns.c.Owns(*txnID) != nil {
		return 0, ""
	}
	err := s.txns.c.VerifyPartition(*txnID, b.ProducerID(), b.ProducerEpoch(), txn.Partition{Topic: topic, Partition: partition})
	switch code := codeOf(err); code {
	case 0:
		return 0, ""
	case kerr.ProducerFenced.Code, kerr.InvalidProducerIDMapping.Code:
		return kerr.InvalidProducerEpoch.Code, "the producer was fenced by a newer one with the same transactional id"
	default:
		return code, "the partition is not in an ongoing transaction of this producer"
	}
}
