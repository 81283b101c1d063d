package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/coordinator/txn"
)

// codeOf is the Kafka error code of a coordinator answer.
func codeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// handleInitProducerIDTxn answers InitProducerId v0-4 with a
// transactional id: the transaction coordinator (epoch bump, fencing).
func (s *Server) handleInitProducerIDTxn(r *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	ctx := context.Background()
	if err := s.txns.ensureTopic(); err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	pe, err := s.txns.c.InitProducerID(ctx, *r.TransactionalID, r.TransactionTimeoutMillis,
		txn.ProducerIDAndEpoch{ProducerID: r.ProducerID, Epoch: r.ProducerEpoch})
	if code := codeOf(err); code != 0 {
		if code == kerr.ProducerFenced.Code && r.Version < 4 {
			code = kerr.InvalidProducerEpoch.Code // clients before KIP-588
		}
		resp.ErrorCode = code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = pe.ProducerID, pe.Epoch
	return resp
}

// fencedCode maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request
// versions older than KIP-588's (Kafka's own mapping).
func fencedCode(code int16, old bool) int16 {
	if code == kerr.ProducerFenced.Code && old {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// handleAddPartitionsToTxn answers AddPartitionsToTxn v0-3 (a client's).
func (s *Server) handleAddPartitionsToTxn(r *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var parts []txn.Partition
	code := int16(0)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, txn.Partition{Topic: t.Topic, Partition: p})
			if !s.partitionKnown(t.Topic, p) && code == 0 {
				code = kerr.UnknownTopicOrPartition.Code
			}
		}
	}
	perPart := func(tp txn.Partition) int16 {
		if code == 0 {
			return 0
		}
		if !s.partitionKnown(tp.Topic, tp.Partition) {
			return code
		}
		return kerr.OperationNotAttempted.Code
	}
	if code == 0 {
		err := s.txnCall(func() error {
			return s.txns.c.AddPartitions(context.Background(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, parts)
		})
		code = fencedCode(codeOf(err), r.Version < 2)
		perPart = func(txn.Partition) int16 { return code }
	}
	for _, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, perPart(txn.Partition{Topic: t.Topic, Partition: p})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// txnCall runs a coordinator call.
func (s *Server) txnCall(f func() error) error { return f() }

// handleAddOffsetsToTxn answers AddOffsetsToTxn v0-3: the group's
// __consumer_offsets partition joins the transaction.
func (s *Server) handleAddOffsetsToTxn(r *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	err := s.txnCall(func() error {
		if s.cl != nil {
			if err := s.cl.ensureOffsetsTopic(); err != nil {
				return kerr.CoordinatorNotAvailable
			}
		} else if _, err := s.groups.ensureTopic(); err != nil {
			return kerr.CoordinatorNotAvailable
		}
		p := offsetsPartition(r.Group, int32(len(s.groups.loading)))
		return s.txns.c.AddPartitions(context.Background(), r.TransactionalID, r.ProducerID, r.ProducerEpoch,
			[]txn.Partition{{Topic: OffsetsTopic, Partition: p}})
	})
	resp.ErrorCode = fencedCode(codeOf(err), r.Version < 2)
	return resp
}

// handleEndTxn answers EndTxn v0-3.
func (s *Server) handleEndTxn(r *kmsg.EndTxnRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	err := s.txnCall(func() error {
		return s.txns.c.EndTxn(context.Background(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
	})
	resp.ErrorCode = fencedCode(codeOf(err), r.Version < 2)
	return resp
}

// handleTxnOffsetCommit answers TxnOffsetCommit v0-3: the offsets are
// written to the group's partition in a transactional batch and become
// visible when the COMMIT marker reaches it (dropped on ABORT). From v3
// the member and generation are checked as OffsetCommit does.
func (s *Server) handleTxnOffsetCommit(r *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	code := s.groups.groupCheck(r.Group)
	offs := map[topicPartition]offsetEntry{}
	perPart := map[topicPartition]int16{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			switch {
			case !s.partitionKnown(t.Topic, p.Partition):
				perPart[tp] = kerr.UnknownTopicOrPartition.Code
				continue
			case p.Metadata != nil && len(*p.Metadata) > int(s.cfg.OffsetMetadataMaxBytes):
				perPart[tp] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			e := offsetEntry{offset: p.Offset, leaderEpoch: -1, commitTs: time.Now().UnixMilli(), expireTs: -1}
			if p.Metadata != nil {
				e.metadata = *p.Metadata
			}
			if r.Version >= 2 {
				e.leaderEpoch = p.LeaderEpoch
			}
			offs[tp] = e
		}
	}
	if code == 0 {
		code = s.commitTxnOffsets(r, offs)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if c, ok := perPart[topicPartition{t.Topic, p.Partition}]; ok {
				rp.ErrorCode = c
			} else {
				rp.ErrorCode = fencedCode(code, r.Version < 2)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// commitTxnOffsets checks the member (v3+) and stores offs pending.
func (s *Server) commitTxnOffsets(r *kmsg.TxnOffsetCommitRequest, offs map[topicPartition]offsetEntry) int16 {
	gen := int32(-1)
	if r.Version >= 3 {
		gen = r.Generation
	}
	g := s.groups.lockGroup(r.Group, gen < 0)
	if g == nil {
		if s.groups.isClosed() {
			return kerr.CoordinatorNotAvailable.Code
		}
		return kerr.IllegalGeneration.Code
	}
	defer g.mu.Unlock()
	defer s.groups.dropIfUnused(g)
	if gen >= 0 {
		if code := g.commitCheck(gen, r.MemberID, r.InstanceID); code != 0 {
			return code
		}
	}
	return s.groups.storeTxnOffsets(g, r.ProducerID, r.ProducerEpoch, offs)
}

// handleWriteTxnMarkers answers WriteTxnMarkers v0-1 (a coordinator's
// request to this partition leader): each marker is appended as a control
// batch.
func (s *Server) handleWriteTxnMarkers(r *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	return txnMarkersResponse(r, func(m *kmsg.WriteTxnMarkersRequestMarker, topic string, p int32) int16 {
		return s.writeTxnMarker(m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, topic, p)
	})
}

// txnMarkersResponse is r's response, each partition of each marker given
// the error code code returns for it (called in the request's order).
func txnMarkersResponse(r *kmsg.WriteTxnMarkersRequest, code func(m *kmsg.WriteTxnMarkersRequestMarker, topic string, p int32) int16) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for i := range r.Markers {
		m := &r.Markers[i]
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(m, t.Topic, p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// handleDescribeTransactions answers DescribeTransactions v0.
func (s *Server) handleDescribeTransactions(r *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		var m txn.Metadata
		err := s.txnCall(func() (err error) { m, err = s.txns.c.Describe(id); return err })
		if st.ErrorCode = codeOf(err); st.ErrorCode == 0 {
			st.State, st.TimeoutMillis, st.StartTimestamp = m.State.String(), m.TimeoutMs, m.StartMs
			st.ProducerID, st.ProducerEpoch = m.ProducerID, m.ProducerEpoch
			for i := 0; i < len(m.Partitions); {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = m.Partitions[i].Topic
				for ; i < len(m.Partitions) && m.Partitions[i].Topic == t.Topic; i++ {
					t.Partitions = append(t.Partitions, m.Partitions[i].Partition)
				}
				st.Topics = append(st.Topics, t)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// handleListTransactions answers ListTransactions v0: the transactions of
// the partitions this broker coordinates, filtered by state names (an
// unknown name is listed in UnknownStateFilters) and producer ids.
func (s *Server) handleListTransactions(r *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []txn.State
	for _, name := range r.StateFilters {
		if st, ok := txn.ParseState(name); ok {
			states = append(states, st)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(r.StateFilters) > 0 && len(states) == 0 {
		return resp
	}
	for _, m := range s.txns.c.List(states, r.ProducerIDFilters) {
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = m.TransactionalID, m.ProducerID, m.State.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}
