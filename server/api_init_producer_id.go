package server

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

// producerIDTimeout bounds the reservation of a new block of producer ids
// (a file write, or ZooKeeper round trips).
const producerIDTimeout = 10 * time.Second

// ProducerIDs is the broker's producer id allocator: blocks reserved in
// the first log dir's producer_id_block file on a single node, in
// /latest_producer_id_block in a cluster.
func (s *Server) ProducerIDs() *producer.Blocks {
	s.pidOnce.Do(func() {
		var src producer.BlockSource
		if s.cl != nil {
			src = cluster.ProducerIDBlocks{ZK: s.cl.zk, Broker: s.cl.id}
		} else {
			src = producer.NewFileBlocks(s.topics.fs, s.cfg.LogDirs[0], s.NodeID())
		}
		s.pids = producer.NewBlocks(src)
	})
	return s.pids
}

// handleInitProducerID answers InitProducerId v0-4 for an idempotent
// producer (no transactional id): a new producer id at epoch 0, as Kafka
// does whatever id and epoch the request names (a producer that lost its
// sequence state starts over). A transactional id goes to the transaction
// coordinator.
func (s *Server) handleInitProducerID(c *conn, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Default()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		return s.handleInitProducerIDTxn(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), producerIDTimeout)
	defer cancel()
	id, err := s.ProducerIDs().Next(ctx)
	if err != nil {
		c.log.Error("allocating a producer id failed", "error", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// producerErrorCode maps a producer state refusal (segment.ErrProducer
// wrapping a producer error) to Kafka's code, 0 when err is none.
func producerErrorCode(err error) int16 { return producer.ErrorCode(err) }

// checkProducerIssued refuses, as UNKNOWN_PRODUCER_ID, a batch starting a
// producer's sequence (sequence 0) under a producer id that no broker
// handed out: above the newest reserved block. Later sequences of a
// producer the partition does not know are refused by the log itself.
func (s *Server) checkProducerIssued(b record.Batch) (int16, string) {
	pid := b.ProducerID()
	if pid < 0 || b.BaseSequence() != 0 {
		return 0, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), producerIDTimeout)
	defer cancel()
	ok, err := s.ProducerIDs().MayBeIssued(ctx, pid)
	if err != nil {
		s.log.Warn("checking a producer id failed", "producer_id", pid, "error", err)
		return kerr.CoordinatorNotAvailable.Code, "checking the producer id: " + err.Error()
	}
	if !ok {
		return kerr.UnknownProducerID.Code, fmt.Sprintf("producer id %d was never issued", pid)
	}
	return 0, ""
}
