package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/metrics"
)

// slowSpan is the part of a request's time compared with
// strata.request.slow.ms: all of it, except a fetch's remote time. A
// consumer's or follower's fetch parks until data arrives or its max wait
// passes (franz-go waits 5 s, followers replica.fetch.wait.max.ms): that
// wait is the client's choice, not slowness, and counting it would log
// every idle poll.
func slowSpan(key int16, sp *metrics.Span) time.Duration {
	d := sp.RequestQueue + sp.Local + sp.ResponseQueue + sp.Send
	if key != int16(kmsg.Fetch) && key != metrics.FetchFollowerKey {
		d += sp.Remote
	}
	return d
}

// logSlow writes the slow-request line: API, version, client id and
// address, the partitions the request named and the time split of
// RequestMetrics. Only slow requests come here: the allocations of a log
// line are theirs alone.
//
//go:noinline
func (c *conn) logSlow(sp metrics.Span) {
	key := c.mkey
	if key == metrics.FetchFollowerKey {
		key = int16(kmsg.Fetch)
	}
	total := sp.RequestQueue + sp.Local + sp.Remote + sp.ResponseQueue + sp.Send
	c.s.log.LogAttrs(context.Background(), slog.LevelInfo, "slow request",
		slog.String("api", kmsg.NameForKey(key)),
		slog.Int("version", int(c.mver)),
		slog.Int("correlation_id", int(c.corr)),
		slog.String("client_id", c.clientID),
		slog.String("client_address", c.peer),
		slog.Int("partitions", requestPartitions(c.req)),
		slog.Float64("total_ms", ms(total)),
		slog.Float64("queue_ms", ms(sp.RequestQueue)),
		slog.Float64("local_ms", ms(sp.Local)),
		slog.Float64("remote_ms", ms(sp.Remote)),
		slog.Float64("throttle_ms", float64(c.quota.given.Milliseconds())), // the quotas' throttle time, as the response's throttle_time_ms
		slog.Float64("send_ms", ms(sp.Send+sp.ResponseQueue)),
	)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// requestPartitions counts the partitions a request names (0 for APIs
// that name none, or name them all by omission).
func requestPartitions(req kmsg.Request) int {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		return sumOf(r.Topics, func(t *kmsg.ProduceRequestTopic) int { return len(t.Partitions) })
	case *kmsg.FetchRequest:
		return sumOf(r.Topics, func(t *kmsg.FetchRequestTopic) int { return len(t.Partitions) })
	case *kmsg.ListOffsetsRequest:
		return sumOf(r.Topics, func(t *kmsg.ListOffsetsRequestTopic) int { return len(t.Partitions) })
	case *kmsg.OffsetCommitRequest:
		return sumOf(r.Topics, func(t *kmsg.OffsetCommitRequestTopic) int { return len(t.Partitions) })
	case *kmsg.OffsetFetchRequest:
		return sumOf(r.Topics, func(t *kmsg.OffsetFetchRequestTopic) int { return len(t.Partitions) }) +
			sumOf(r.Groups, func(g *kmsg.OffsetFetchRequestGroup) int {
				return sumOf(g.Topics, func(t *kmsg.OffsetFetchRequestGroupTopic) int { return len(t.Partitions) })
			})
	case *kmsg.DeleteRecordsRequest:
		return sumOf(r.Topics, func(t *kmsg.DeleteRecordsRequestTopic) int { return len(t.Partitions) })
	case *kmsg.OffsetForLeaderEpochRequest:
		return sumOf(r.Topics, func(t *kmsg.OffsetForLeaderEpochRequestTopic) int { return len(t.Partitions) })
	case *kmsg.LeaderAndISRRequest:
		return len(r.PartitionStates) + sumOf(r.TopicStates, func(t *kmsg.LeaderAndISRRequestTopicState) int { return len(t.PartitionStates) })
	case *kmsg.StopReplicaRequest:
		return sumOf(r.Topics, func(t *kmsg.StopReplicaRequestTopic) int { return len(t.Partitions) + len(t.PartitionStates) })
	case *kmsg.ElectLeadersRequest:
		return sumOf(r.Topics, func(t *kmsg.ElectLeadersRequestTopic) int { return len(t.Partitions) })
	case *kmsg.OffsetDeleteRequest:
		return sumOf(r.Topics, func(t *kmsg.OffsetDeleteRequestTopic) int { return len(t.Partitions) })
	}
	return 0
}

// sumOf is the sum of n over xs.
func sumOf[T any](xs []T, n func(*T) int) int {
	sum := 0
	for i := range xs {
		sum += n(&xs[i])
	}
	return sum
}
