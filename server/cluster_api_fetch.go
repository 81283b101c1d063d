package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// handleFetchCluster answers Fetch v4-12 in cluster mode. A fetch with a
// replica id >= 0 is a follower's: each partition is read through
// Partition.FetchFromFollower (KIP-320's epoch check, the diverging-epoch
// check against the last fetched epoch, records up to the log end), which
// records the follower's progress, may move the high watermark and may
// grow the ISR; a divergence is answered at once with diverging_epoch
// (v12). A consumer's fetch reads below the high watermark from the leader
// only (NOT_LEADER_OR_FOLLOWER elsewhere), after KIP-320's check of
// current_leader_epoch (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH). As on a
// single node, too few bytes park the request until max_wait_ms, woken by
// the leader's appends (followers) or the high watermark moving
// (consumers), and the response is framed around the file regions with
// sendfile (fetch_write.go).
func (s *Server) handleFetchCluster(c *conn, h *reqHeader, req *kmsg.FetchRequest) error {
	cl := s.cl
	follower := req.ReplicaID >= 0
	var wake <-chan struct{}
	return s.fetchLoop(c, h, req, func() ([]fetchTopic, int64, bool, time.Duration) {
		wake = cl.fetchWait(follower)
		// throttled: read again when the leader throttle lets the
		// partitions it held back through, not only at max wait.
		return cl.readFetch(req, follower)
	}, func(timer <-chan time.Time) {
		select {
		case <-wake:
		case <-timer:
		case <-s.done:
		}
	})
}

// fetchWait is what a parked fetch wakes on, taken before the read so no
// change between the read and the wait is missed: a follower on the
// broker's appends as leader (and role changes), a consumer on its high
// watermarks moving (cluster_wake.go).
func (cl *clusterNode) fetchWait(follower bool) <-chan struct{} {
	if follower {
		return cl.appended.wait()
	}
	return cl.hwMoved.wait()
}

// readFetch reads every requested partition within the partition and
// response byte limits (the smaller of max_bytes and fetch.max.bytes; the
// first partition with data gets one whole batch, KIP-74). failed reports
// a partition error or a divergence, which answer at once; throttled, when
// the leader throttle held data back, how long until it lets it through.
func (cl *clusterNode) readFetch(req *kmsg.FetchRequest, follower bool) (topics []fetchTopic, total int64, failed bool, throttled time.Duration) {
	remaining := max(min(int64(req.MaxBytes), int64(cl.cfg.FetchMaxBytes)), 0)
	now := time.Now().UnixMilli()
	im := cl.images.load()
	for i := range req.Topics {
		rt := &req.Topics[i]
		ft := fetchTopic{name: rt.Topic, parts: make([]fetchPart, 0, len(rt.Partitions))}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			fp := fetchPart{partition: rp.Partition, hw: -1, lso: -1, logStart: -1}
			p := cl.rm.Partition(rt.Topic, rp.Partition)
			if p == nil {
				fp.code = kerr.UnknownTopicOrPartition.Code
				if _, ok := im.partition(rt.Topic, rp.Partition); ok {
					fp.code = kerr.NotLeaderForPartition.Code
				}
				failed = true
				ft.parts = append(ft.parts, fp)
				continue
			}
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			current := rp.CurrentLeaderEpoch
			if req.Version < 9 {
				current = -1
			}
			var r segment.Region
			if follower {
				last := rp.LastFetchedEpoch
				if req.Version < 12 {
					last = -1
				}
				res := p.FetchFromFollower(replica.FollowerFetch{ReplicaID: req.ReplicaID, FetchOffset: rp.FetchOffset,
					LogStartOffset: rp.LogStartOffset, CurrentLeaderEpoch: current, LastFetchedEpoch: last, MaxBytes: max(limit, 0)}, now)
				fp.hw, fp.logStart = res.HighWatermark, res.LogStartOffset
				fp.code = replica.ErrorCode(res.Err)
				if res.DivergingEndOffset >= 0 {
					fp.diverging, fp.divEpoch, fp.divEnd = true, res.DivergingEpoch, res.DivergingEndOffset
					failed = true
				}
				r = res.Records
				if fp.code == 0 && r.Len > 0 {
					if cl.leaderThrottles(p, req.ReplicaID) && cl.leaderQuota.Exceeded(now) {
						r.Release() // left out while over the leader throttle (Kafka's shouldLeaderThrottle)
						r = segment.Region{}
						throttled = time.Duration(max(cl.leaderQuota.WaitMs(now), 1)) * time.Millisecond
					} else {
						// what the follower keeps is what crosses the network
						// and what the throttle counts
						wholeBatches(&r)
					}
				}
			} else {
				fp.code, r = cl.readCommitted(p, rt.Topic, rp, current, limit, req.Version, req.IsolationLevel == 1)
				fp.hw, fp.lso, fp.logStart = p.HighWatermark(), p.LastStableOffset(), p.Log().LogStartOffset()
				if req.IsolationLevel == 1 && r.Len > 0 {
					fp.aborted = p.Log().AbortedTxns(rp.FetchOffset, fp.lso, nil)
				}
			}
			switch {
			case fp.code != 0:
				r.Release()
				failed = true
			case r.Len > limit && total > 0:
				r.Release() // only the first partition may exceed the limits
			default:
				fp.region = r
				total += r.Len
				remaining -= r.Len
				if follower && r.Len > 0 && cl.rm.LeaderQuota().IsThrottled(p.TopicPartition()) {
					cl.rm.LeaderQuota().Record(r.Len, now)
				}
			}
			ft.parts = append(ft.parts, fp)
		}
		topics = append(topics, ft)
	}
	if follower {
		cl.hwMoved.signal() // the follower's progress may have moved high watermarks
	}
	return topics, total, failed, throttled
}

// leaderThrottles tells whether the leader throttle applies to follower's
// fetch of p: p is one of its partitions, it has a rate, and the follower
// is not in p's ISR. Over the rate the data is left out of the response.
func (cl *clusterNode) leaderThrottles(p *replica.Partition, follower int32) bool {
	q := cl.leaderQuota
	return q.Rate() != replica.Unthrottled && q.IsThrottled(p.TopicPartition()) && !p.InSync(follower)
}

// readCommitted is a consumer's read of one partition: the leader only,
// KIP-320's epoch check, the topic's codec rule for old fetch versions,
// then the records below the high watermark.
func (cl *clusterNode) readCommitted(p *replica.Partition, topic string, rp *kmsg.FetchRequestTopicPartition, current int32, limit int64, version int16, stable bool) (int16, segment.Region) {
	if err := p.CheckLeaderEpoch(current, true); err != nil {
		return replica.ErrorCode(err), segment.Region{}
	}
	if version < 10 {
		if t := cl.cachedTopicConfig(topic); t != nil {
			if ps := t.produceSettings(cl.cfg); ps.recompress && ps.codec == record.CodecZstd {
				return kerr.UnsupportedCompressionType.Code, segment.Region{}
			}
		}
	}
	r, err := p.ReadConsumer(rp.FetchOffset, max(limit, 0), stable)
	switch {
	case err == nil:
		return 0, r
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code, r
	case errors.Is(err, segment.ErrClosed): // stopped or deleted meanwhile
		return kerr.NotLeaderForPartition.Code, r
	}
	cl.log.Error("fetch read failed", "topic", topic, "partition", rp.Partition, "offset", rp.FetchOffset, "error", err)
	return kerr.KafkaStorageError.Code, r
}
