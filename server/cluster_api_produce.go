package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// handleProduceCluster answers Produce v3-9 in cluster mode. A partition
// this broker does not lead is NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_
// PARTITION when the metadata cache does not know it either), before its
// batch is checked. The batch is checked as on a single node (size,
// framing, CRC, records, the topic's codec), then appended through the
// replica as leader, which stamps its leader epoch and, for acks=-1,
// refuses it before the append when the ISR is below the topic's
// min.insync.replicas (NOT_ENOUGH_REPLICAS). acks=0 and 1 answer after the
// append; acks=-1 answers once the high watermark passes every appended
// batch (Partition.Await: the request's own goroutine sleeps on the
// partition's high-watermark notification, nothing spins), or at the
// request's timeout_ms (REQUEST_TIMED_OUT), with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below the minimum
// meanwhile and NOT_LEADER_OR_FOLLOWER when the leadership was lost.
func (s *Server) handleProduceCluster(c *conn, req *kmsg.ProduceRequest) kmsg.Response {
	cl := s.cl
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Default()
	start := time.Now()
	type wait struct {
		ti, pi int
		rp     *replica.Partition
		w      replica.ProduceWait
	}
	var waits []wait
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			p, res, code, msg := cl.produceTo(c, req, rt.Topic, rp, &sp)
			s.noteProduce(rt.Topic, code, rp.Records)
			if code != 0 {
				sp.ErrorCode = code
				if req.Version >= 8 && msg != "" {
					sp.ErrorMessage = &msg
				}
				if msg != "" {
					c.log.Warn("produce rejected", "topic", rt.Topic, "partition", rp.Partition, "code", code, "error", msg)
				}
			} else if req.Acks == -1 {
				waits = append(waits, wait{i, j, p, res.Wait})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	deadline := start.UnixMilli() + int64(max(req.TimeoutMillis, 0))
	if len(waits) > 0 {
		c.parked(true, func() {
			for k := range waits {
				w := &waits[k]
				w.w.Deadline = deadline
				if status := replica.Await(cl.ctx, w.rp, &w.w, nowMs); status != replica.AckCommitted {
					resp.Topics[w.ti].Partitions[w.pi].ErrorCode = status.ErrorCode()
				}
			}
		})
	}
	return resp
}

// produceTo checks and appends one partition's batch as its leader.
func (cl *clusterNode) produceTo(c *conn, req *kmsg.ProduceRequest, topicName string, rp *kmsg.ProduceRequestTopicPartition,
	sp *kmsg.ProduceResponseTopicPartition) (*replica.Partition, replica.AppendResult, int16, string) {
	var none replica.AppendResult
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		return nil, none, kerr.InvalidRequiredAcks.Code, fmt.Sprintf("acks %d", req.Acks)
	case topicName == OffsetsTopic:
		return nil, none, kerr.InvalidTopicException.Code, "the internal topic " + OffsetsTopic + " takes no produce from clients"
	}
	p := cl.rm.Partition(topicName, rp.Partition)
	if p == nil {
		if _, ok := cl.images.load().partition(topicName, rp.Partition); ok {
			return nil, none, kerr.NotLeaderForPartition.Code, ""
		}
		return nil, none, kerr.UnknownTopicOrPartition.Code, ""
	}
	if p.Role() != replica.RoleLeader {
		return nil, none, kerr.NotLeaderForPartition.Code, ""
	}
	recs := rp.Records
	if len(recs) == 0 {
		return nil, none, kerr.InvalidRecord.Code, "no record batch"
	}
	t := cl.topicConfig(topicName)
	if code, msg := cl.s.checkBatchSize(t, len(recs)); code != 0 {
		return nil, none, code, msg
	}
	code, msg := validateProduceBatch(c, req.Version, recs, cl.cfg.ProduceValidation == "full", t.compacted.Load())
	if code != 0 {
		return nil, none, code, msg
	}
	if code, msg := cl.s.verifyTxnProduce(req.TransactionID, topicName, rp.Partition, recs); code != 0 {
		return nil, none, code, msg
	}
	if recs, code, msg = cl.s.applyTopicCodec(c, t, recs); code != 0 {
		return nil, none, code, msg
	}
	if code, msg := cl.s.checkProducerIssued(record.Batch(recs)); code != 0 {
		return nil, none, code, msg
	}
	now := time.Now().UnixMilli()
	if t.logAppendTime.Load() {
		record.Batch(recs).SetLogAppendTime(now)
		sp.LogAppendTime = now
	}
	began := cl.s.metricsStart()
	res, err := p.AppendAsLeader(recs, req.Acks, int(t.effMinISR(cl.cfg)), now)
	cl.s.noteAppend(began)
	switch {
	case err == nil:
	case errors.Is(err, segment.ErrTooLarge): // Kafka's RecordBatchTooLargeException
		return nil, none, kerr.RecordListTooLarge.Code, err.Error()
	case errors.Is(err, segment.ErrClosed): // stopped or deleted meanwhile
		return nil, none, kerr.NotLeaderForPartition.Code, ""
	case errors.Is(err, replica.ErrNotLeader):
		return nil, none, kerr.NotLeaderForPartition.Code, ""
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return nil, none, kerr.NotEnoughReplicas.Code, err.Error()
	default:
		code := replica.ErrorCode(err)
		if code == kerr.KafkaStorageError.Code {
			cl.log.Error("append failed", "topic", topicName, "partition", rp.Partition, "error", err)
			return nil, none, code, "append failed"
		}
		return nil, none, code, err.Error()
	}
	cl.appendedAsLeader()
	sp.BaseOffset = res.Info.FirstOffset
	sp.LogStartOffset = p.Log().LogStartOffset()
	return p, res, 0, ""
}
