package replica

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/segment"
)

// TopicPartition names a partition.
type TopicPartition = checkpoint.TopicPartition

// Kafka 2.8's defaults for the replication settings.
const (
	DefaultReplicaLagTimeMaxMs          = 30000
	DefaultReplicaFetchMaxBytes         = 1 << 20
	DefaultReplicaFetchResponseMaxBytes = 10 << 20
	DefaultReplicaFetchWaitMaxMs        = 500
	DefaultReplicaFetchMinBytes         = 1
	DefaultReplicaFetchBackoffMs        = 1000
	DefaultNumReplicaFetchers           = 1
	// DefaultAlterPartitionRetryMs is how long the AlterPartition sender
	// waits after a failed request before it sends the pending changes
	// again (Kafka's AlterIsrManager: 50 ms, not configurable).
	DefaultAlterPartitionRetryMs = 50
)

// OpenOptions tell a LogOpener how to open a partition's log.
type OpenOptions struct {
	// IsNew is LeaderAndIsr's is_new: the partition was just created.
	IsNew bool
	// StartAt, when >= 0, asks for an empty log starting at that offset
	// (Kafka's truncateFullyAndStartAt): the follower fell behind the
	// leader's log start offset. The old log has been closed; the opener
	// opens the directory with segment.Options.LogStartOffset = StartAt,
	// which drops the segments that end below it. -1 otherwise.
	StartAt int64
}

// LogOpener opens (creating if needed) a partition's log: it chooses the log
// directory, and applies the topic's configuration and the recovery point.
// The directory's parent is the log dir whose replication-offset-checkpoint
// holds the partition's high watermark. When the broker (or the simulation)
// replaces power, the recovery point it gives segment.Open decides which
// batches are scanned again, and the leader-epoch cache is completed from
// those (Partition's load).
type LogOpener func(tp TopicPartition, o OpenOptions) (*segment.Log, error)

// LogDeleter removes a stopped partition's log for StopReplica(delete=true);
// the log has been closed. The default removes its directory.
type LogDeleter func(tp TopicPartition, l *segment.Log) error

// Config configures a Manager and its partitions. Field names are Kafka's
// broker properties; zero values take Kafka's defaults (EnsureDefaults).
type Config struct {
	// BrokerID is broker.id.
	BrokerID int32
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms: a follower not caught
	// up for this long leaves the ISR (checked every half of it).
	ReplicaLagTimeMaxMs int64
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes, per partition.
	ReplicaFetchMaxBytes int32
	// ReplicaFetchResponseMaxBytes is replica.fetch.response.max.bytes.
	ReplicaFetchResponseMaxBytes int32
	// ReplicaFetchWaitMaxMs is replica.fetch.wait.max.ms, the long poll.
	ReplicaFetchWaitMaxMs int32
	// ReplicaFetchMinBytes is replica.fetch.min.bytes.
	ReplicaFetchMinBytes int32
	// ReplicaFetchBackoffMs is replica.fetch.backoff.ms: the pause after a
	// failed fetch.
	ReplicaFetchBackoffMs int64
	// NumReplicaFetchers is num.replica.fetchers per source broker.
	NumReplicaFetchers int
	// AlterPartitionRetryMs is the pause before a failed AlterPartition
	// request is sent again.
	AlterPartitionRetryMs int64
	// QuotaWindowNum is replication.quota.window.num and
	// QuotaWindowSizeSeconds replication.quota.window.size.seconds: the
	// samples of the replication throttles' rate (Quota).
	QuotaWindowNum         int
	QuotaWindowSizeSeconds int
	// LeaderQuota and FollowerQuota, if set, are the Manager's replication
	// throttles (the broker keeps them, to feed them topic configs from
	// before the Manager exists); nil: new unbounded ones.
	LeaderQuota, FollowerQuota *Quota
	// OpenLog opens partition logs (required).
	OpenLog LogOpener
	// DeleteLog deletes a stopped partition's log (default: remove its
	// directory through the log's filesystem).
	DeleteLog LogDeleter
	// OnTruncate, if set, is called when a follower cut its log (or started
	// it over) and before the epoch cache follows: the DataDir should write
	// the lowered recovery point (the log's FlushedOffset) to its
	// checkpoint now, as Kafka's LogManager.truncateTo does, so that after a
	// power loss the cut tail, which may come back, is scanned again. It runs
	// with the partition's locks held: it must not call the Partition.
	OnTruncate func(tp TopicPartition, l *segment.Log)
	// OnISRChange, if set, is called when the controller accepted this
	// leader's ISR change, with the ISR before and after (Kafka's
	// IsrShrinksPerSec and IsrExpandsPerSec). It runs with the partition's
	// lock held: it must not call the Partition.
	OnISRChange func(before, after []int32)
	// IsrEligible, if set, tells whether a broker may be added to an ISR:
	// a leader proposes a caught-up follower only when it says yes (Kafka
	// 3.3's isReplicaIsrEligible, KIP-841: in ZooKeeper mode, a broker the
	// metadata cache lists as alive). The controller refuses a broker it
	// does not count as online (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED)
	// and every fetch of the follower would propose it again: a healed
	// broker fetching before its new registration reached the controller
	// drew thousands of refused AlterPartitions a second. It runs with the
	// partition's lock held: it must be quick and not call the Partition.
	// nil: every broker is eligible.
	IsrEligible func(brokerID int32) bool
	// Logger receives what replication does (default: discard).
	Logger *slog.Logger
}

// EnsureDefaults returns a copy of c with zero fields set to Kafka's defaults.
func (c Config) EnsureDefaults() Config {
	if c.ReplicaLagTimeMaxMs == 0 {
		c.ReplicaLagTimeMaxMs = DefaultReplicaLagTimeMaxMs
	}
	if c.ReplicaFetchMaxBytes == 0 {
		c.ReplicaFetchMaxBytes = DefaultReplicaFetchMaxBytes
	}
	if c.ReplicaFetchResponseMaxBytes == 0 {
		c.ReplicaFetchResponseMaxBytes = DefaultReplicaFetchResponseMaxBytes
	}
	if c.ReplicaFetchWaitMaxMs == 0 {
		c.ReplicaFetchWaitMaxMs = DefaultReplicaFetchWaitMaxMs
	}
	if c.ReplicaFetchMinBytes == 0 {
		c.ReplicaFetchMinBytes = DefaultReplicaFetchMinBytes
	}
	if c.ReplicaFetchBackoffMs == 0 {
		c.ReplicaFetchBackoffMs = DefaultReplicaFetchBackoffMs
	}
	if c.NumReplicaFetchers == 0 {
		c.NumReplicaFetchers = DefaultNumReplicaFetchers
	}
	if c.AlterPartitionRetryMs == 0 {
		c.AlterPartitionRetryMs = DefaultAlterPartitionRetryMs
	}
	if c.QuotaWindowNum == 0 {
		c.QuotaWindowNum = DefaultQuotaWindowNum
	}
	if c.QuotaWindowSizeSeconds == 0 {
		c.QuotaWindowSizeSeconds = DefaultQuotaWindowSizeSeconds
	}
	if c.LeaderQuota == nil {
		c.LeaderQuota = NewQuota(c.QuotaWindowNum, c.QuotaWindowSizeSeconds)
	}
	if c.FollowerQuota == nil {
		c.FollowerQuota = NewQuota(c.QuotaWindowNum, c.QuotaWindowSizeSeconds)
	}
	if c.DeleteLog == nil {
		c.DeleteLog = removeLogDir
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	switch {
	case c.BrokerID < 0:
		return fmt.Errorf("%w: broker.id %d", ErrInvalidRequest, c.BrokerID)
	case c.ReplicaLagTimeMaxMs < 1:
		return fmt.Errorf("%w: replica.lag.time.max.ms %d must be positive", ErrInvalidRequest, c.ReplicaLagTimeMaxMs)
	case c.ReplicaFetchMaxBytes < 1 || c.ReplicaFetchResponseMaxBytes < 1:
		return fmt.Errorf("%w: replica.fetch.max.bytes and replica.fetch.response.max.bytes must be positive", ErrInvalidRequest)
	case c.ReplicaFetchWaitMaxMs < 0 || c.ReplicaFetchMinBytes < 0 || c.ReplicaFetchBackoffMs < 0:
		return fmt.Errorf("%w: replica.fetch.wait.max.ms, replica.fetch.min.bytes and replica.fetch.backoff.ms must not be negative", ErrInvalidRequest)
	case c.NumReplicaFetchers < 1:
		return fmt.Errorf("%w: num.replica.fetchers %d must be positive", ErrInvalidRequest, c.NumReplicaFetchers)
	case c.QuotaWindowNum < 1 || c.QuotaWindowSizeSeconds < 1:
		return fmt.Errorf("%w: replication.quota.window.num and replication.quota.window.size.seconds must be positive", ErrInvalidRequest)
	case c.OpenLog == nil:
		return fmt.Errorf("%w: no log opener", ErrInvalidRequest)
	}
	return nil
}

func removeLogDir(_ TopicPartition, l *segment.Log) error {
	o := l.Options()
	if err := o.FS.RemoveAll(l.Dir()); err != nil {
		return err
	}
	return o.FS.SyncDir(parentDir(l.Dir()))
}
