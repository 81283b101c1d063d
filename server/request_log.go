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
	n := 0
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.FetchRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.ListOffsetsRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.OffsetCommitRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.OffsetFetchRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
		for i := range r.Groups {
			for j := range r.Groups[i].Topics {
				n += len(r.Groups[i].Topics[j].Partitions)
			}
		}
	case *kmsg.DeleteRecordsRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.LeaderAndISRRequest:
		n = len(r.PartitionStates)
		for i := range r.TopicStates {
			n += len(r.TopicStates[i].PartitionStates)
		}
	case *kmsg.StopReplicaRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions) + len(r.Topics[i].PartitionStates)
		}
	case *kmsg.ElectLeadersRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	case *kmsg.OffsetDeleteRequest:
		for i := range r.Topics {
			n += len(r.Topics[i].Partitions)
		}
	}
	return n
}
