package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultMaxPartitionsPerTopic is the default of strata.max.partitions.per.topic.
const DefaultMaxPartitionsPerTopic = 10000

// checkPartitionCount refuses a partition count above
// strata.max.partitions.per.topic (CreateTopics, CreatePartitions). Kafka
// has no fixed cap but fails such requests (INVALID_PARTITIONS, or
// POLICY_VIOLATION from a create-topic policy) rather than trying to open
// billions of logs; strata refuses before allocating anything, so a request
// asking for 2^31-1 partitions costs nothing.
func (s *Server) checkPartitionCount(n int32) (int16, string) {
	if limit := s.cfg.MaxPartitionsPerTopic; n > limit {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("%d partitions exceed strata.max.partitions.per.topic %d", n, limit)
	}
	return 0, ""
}
