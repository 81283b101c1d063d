package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetCommit answers OffsetCommit v0-8 as Kafka 2.8's
// doCommitOffsets: generation -1 commits to an unknown or Empty group are
// standalone commits; otherwise the member and generation must match
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) and a group completing a
// rebalance answers REBALANCE_IN_PROGRESS. Unknown partitions are
// UNKNOWN_TOPIC_OR_PARTITION, metadata over offset.metadata.max.bytes
// OFFSET_METADATA_TOO_LARGE. Accepted offsets are appended to the group's
// __consumer_offsets partition as one batch before the response is sent.
func (s *Server) handleOffsetCommit(r *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := make([][]int16, len(r.Topics))
	for i := range r.Topics {
		codes[i] = make([]int16, len(r.Topics[i].Partitions))
	}
	defer func() {
		for i, rt := range r.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for j, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, codes[i][j]
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	}()
	setAll := func(code int16) kmsg.Response {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = code
				}
			}
		}
		return resp
	}
	gen := r.Generation
	if r.Version == 0 {
		gen = -1
	}
	if code := s.groups.groupCheck(r.Group); code != 0 {
		return setAll(code)
	}
	now := time.Now().UnixMilli()
	offs := map[topicPartition]offsetEntry{}
	for i, rt := range r.Topics {
		for j, rp := range rt.Partitions {
			switch {
			case !s.partitionKnown(rt.Topic, rp.Partition):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				continue
			case rp.Metadata != nil && len(*rp.Metadata) > int(s.cfg.OffsetMetadataMaxBytes):
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			e := offsetEntry{offset: rp.Offset, leaderEpoch: -1, commitTs: now, expireTs: -1}
			if rp.Metadata != nil {
				e.metadata = *rp.Metadata
			}
			if r.Version >= 6 {
				e.leaderEpoch = rp.LeaderEpoch
			}
			if r.Version == 1 && rp.Timestamp >= 0 {
				e.commitTs = rp.Timestamp
			}
			if r.Version >= 2 && r.Version <= 4 && r.RetentionTimeMillis > 0 {
				e.expireTs = now + r.RetentionTimeMillis
			}
			offs[topicPartition{rt.Topic, rp.Partition}] = e
		}
	}
	g := s.groups.lockGroup(r.Group, gen < 0)
	if g == nil {
		if s.groups.isClosed() {
			return setAll(kerr.CoordinatorNotAvailable.Code)
		}
		return setAll(kerr.IllegalGeneration.Code)
	}
	defer g.mu.Unlock()
	defer s.groups.dropIfUnused(g)
	if code := g.commitCheck(gen, r.MemberID, r.InstanceID); code != 0 {
		return setAll(code)
	}
	if code := s.groups.storeOffsets(g, offs); code != 0 {
		return setAll(code)
	}
	return resp
}
