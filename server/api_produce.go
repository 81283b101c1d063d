package server

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// handleProduce answers Produce v3-9: one magic-2 batch per partition,
// checked as Kafka does (size, framing, CRC, then decompressed to check the
// records), stamped with leader epoch 0 and appended; the log patches the
// base offset in place. acks=-1 equals acks=1 on a single node. The caller
// sends nothing back for acks=0.
func (s *Server) handleProduce(c *conn, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Default()
	autoCreate := s.cfg.AutoCreateTopics
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		t := s.topics.get(rt.Topic)
		// The coordinator's log takes no produce from clients (Kafka:
		// INVALID_TOPIC_EXCEPTION), and is never auto-created here.
		internal := rt.Topic == OffsetsTopic
		if t == nil && autoCreate && !internal && validateTopicName(rt.Topic) == nil {
			t, _ = s.autoCreate(rt.Topic)
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var p *partition
			if t != nil {
				p = s.topics.partition(t.name, rp.Partition)
			}
			code, msg := kerr.InvalidTopicException.Code, "the internal topic "+OffsetsTopic+" takes no produce from clients"
			if !internal {
				code, msg = s.produceTo(c, req, t, p, rp.Records, &sp)
			}
			s.noteProduce(rt.Topic, code, rp.Records)
			if code != 0 {
				sp.ErrorCode = code
				if req.Version >= 8 && msg != "" {
					m := msg
					sp.ErrorMessage = &m
				}
				if msg != "" {
					c.log.Warn("produce rejected", "topic", rt.Topic, "partition", rp.Partition, "code", code, "error", msg)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// produceTo validates and appends one partition's records, filling sp.
func (s *Server) produceTo(c *conn, req *kmsg.ProduceRequest, t *topic, p *partition, recs []byte, sp *kmsg.ProduceResponseTopicPartition) (int16, string) {
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		return kerr.InvalidRequiredAcks.Code, fmt.Sprintf("acks %d", req.Acks)
	case p == nil:
		return kerr.UnknownTopicOrPartition.Code, ""
	case len(recs) == 0:
		return kerr.InvalidRecord.Code, "no record batch"
	}
	if code, msg := s.checkBatchSize(t, len(recs)); code != 0 {
		return code, msg
	}
	code, msg := validateProduceBatch(c, req.Version, recs, s.cfg.ProduceValidation == "full", t.compacted.Load())
	if code != 0 {
		return code, msg
	}
	if code, msg := s.verifyTxnProduce(req.TransactionID, p.topic, p.index, recs); code != 0 {
		return code, msg
	}
	if recs, code, msg = s.applyTopicCodec(c, t, recs); code != 0 {
		return code, msg
	}
	b := record.Batch(recs)
	if code, msg := s.checkProducerIssued(b); code != 0 {
		return code, msg
	}
	b.SetLeaderEpoch(0)
	if t.logAppendTime.Load() {
		now := time.Now().UnixMilli()
		b.SetLogAppendTime(now)
		sp.LogAppendTime = now
	}
	began := s.metricsStart()
	info, err := p.log.Append(recs)
	s.noteAppend(began)
	if errors.Is(err, segment.ErrClosed) { // the topic was deleted meanwhile
		return kerr.UnknownTopicOrPartition.Code, "partition deleted"
	}
	if errors.Is(err, segment.ErrTooLarge) { // Kafka's RecordBatchTooLargeException
		return kerr.RecordListTooLarge.Code, err.Error()
	}
	if code := producerErrorCode(err); code != 0 {
		return code, err.Error()
	}
	if errors.Is(err, segment.ErrOffline) { // logged once when the dir failed
		return kerr.KafkaStorageError.Code, "the partition's log dir is offline after an I/O error"
	}
	if err != nil {
		c.s.log.Error("append failed", "topic", p.topic, "partition", p.index, "error", err)
		return kerr.KafkaStorageError.Code, "append failed"
	}
	sp.BaseOffset = info.FirstOffset
	sp.LogStartOffset = p.log.LogStartOffset()
	return 0, ""
}

// validateProduceBatch applies Kafka's produce-time checks to recs, which
// must be exactly one v2 batch, and maps failures to Kafka error codes.
// With deep unset (strata.produce.validation=header) the records of
// compressed batches are trusted after the header checks. On compacted
// topics every record must have a key. Compressed records are checked as a
// stream (validateStream).
func validateProduceBatch(c *conn, version int16, recs []byte, deep, compacted bool) (int16, string) {
	h, err := record.ParseEntryHeader(recs, 0)
	if err != nil {
		if errors.Is(err, record.ErrBadMagic) {
			return kerr.InvalidRecord.Code, "Produce v3+ takes magic 2 record batches only: " + err.Error()
		}
		return kerr.CorruptMessage.Code, err.Error()
	}
	if h.Magic != 2 {
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce v3+ takes magic 2 record batches only, got magic %d", h.Magic)
	}
	switch n := h.TotalSize(); {
	case n < int64(len(recs)):
		return kerr.InvalidRecord.Code, "Produce takes exactly one record batch per partition"
	case n > int64(len(recs)):
		return kerr.CorruptMessage.Code, fmt.Sprintf("batch of %d bytes, have %d", n, len(recs))
	}
	b := record.Batch(recs)
	if err := b.Validate(0); err != nil {
		return kerr.CorruptMessage.Code, err.Error()
	}
	if b.Codec() == record.CodecZstd && version < 7 {
		return kerr.UnsupportedCompressionType.Code, "zstd needs Produce v7+"
	}
	if b.IsControl() {
		return kerr.InvalidRecord.Code, "control batches are written by the transaction coordinator, not produced by clients"
	}
	// The header-only checks run whatever strata.produce.validation says:
	// a count that disagrees with lastOffsetDelta would let one small batch
	// claim up to 2^31 offsets.
	if err := b.CheckProduceHeader(0); err != nil {
		return kerr.InvalidRecord.Code, err.Error()
	}
	if !deep && b.Codec() != record.CodecNone && !compacted {
		return 0, ""
	}
	if b.Codec() != record.CodecNone {
		return c.validateStream(b, compacted)
	}
	if err := b.ValidateRecordsWith(0, &c.rr, true); err != nil { // Validate ran above
		return recordErrorCode(err)
	}
	if compacted {
		c.rr.Reset(b, 0)
		for rec, ok := c.rr.Next(); ok; rec, ok = c.rr.Next() {
			if rec.Key == nil {
				return kerr.InvalidRecord.Code, "compacted topic: a record has no key"
			}
		}
		if err := c.rr.Err(); err != nil {
			return kerr.CorruptMessage.Code, err.Error()
		}
	}
	return 0, ""
}

// recordErrorCode maps a record validation error to Kafka's code:
// CORRUPT_MESSAGE for bytes that do not decompress or check out,
// INVALID_RECORD for records that break the format's or the topic's rules.
func recordErrorCode(err error) (int16, string) {
	switch {
	case errors.Is(err, record.ErrNullKey):
		return kerr.InvalidRecord.Code, "compacted topic: a record has no key"
	case errors.Is(err, record.ErrCompression), errors.Is(err, record.ErrUnknownCodec), errors.Is(err, record.ErrCRC):
		return kerr.CorruptMessage.Code, err.Error()
	default:
		return kerr.InvalidRecord.Code, err.Error()
	}
}

// streamValidators are the produce path's streaming validators (a 32 KiB
// window each), shared by all connections.
var streamValidators = sync.Pool{New: func() any { return new(record.StreamValidator) }}

// validateStream checks the records of b, a compressed batch, as they
// decompress (record.StreamValidator: memory bounded by the stream's
// headers, not by what the batch expands to), holding the broker's
// decompression budget for what the stream needs (produce_memory.go).
func (c *conn) validateStream(b record.Batch, compacted bool) (int16, string) {
	if c.s != nil {
		release := c.s.decompression.acquire(record.StreamMemory(b.Codec(), b.RecordsBytes()))
		defer release()
	}
	sv := streamValidators.Get().(*record.StreamValidator)
	defer streamValidators.Put(sv)
	var maxOut int64
	if c.s != nil {
		maxOut = c.s.maxDecompressed.Load()
	}
	if err := sv.Validate(b, 0, record.StreamOptions{Produce: true, RequireKeys: compacted, MaxDecompressed: maxOut}); err != nil {
		return recordErrorCode(err)
	}
	return 0, ""
}

// firstProduceError is the first partition error code in resp, or 0.
func firstProduceError(resp *kmsg.ProduceResponse) int16 {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	return 0
}
