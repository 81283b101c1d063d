package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// Replication throttles (Kafka's ReplicationQuotaManager, fed as Kafka's
// BrokerConfigHandler and TopicConfigHandler feed it). The rates are
// dynamic broker configs in /config/brokers/<id> (over
// /config/brokers/<default>), announced by /config/changes notifications
// naming brokers/<id>; the throttled partitions are the topics'
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas entries naming this broker ("*":
// every partition of the topic).
const (
	leaderThrottledRate     = "leader.replication.throttled.rate"
	followerThrottledRate   = "follower.replication.throttled.rate"
	leaderThrottledReplicas = "leader.replication.throttled.replicas"
	followThrottledReplicas = "follower.replication.throttled.replicas"
	defaultBrokerEntity     = "<default>"
	// alterLogDirsRate throttles the copies of replicas moving between log
	// dirs (logdir_move.go); unset: the static value.
	alterLogDirsRate = "replica.alter.log.dirs.io.max.bytes.per.second"
)

// dynamicBrokerConfigs are the broker configs AlterConfigs and
// IncrementalAlterConfigs may set per broker (or for <default>).
var dynamicBrokerConfigs = []string{leaderThrottledRate, followerThrottledRate, alterLogDirsRate}

// checkDynamicBrokerConfig checks a dynamic broker config's value: a
// number of bytes per second >= 0.
func checkDynamicBrokerConfig(name, v string) error {
	if !slices.Contains(dynamicBrokerConfigs, name) {
		return fmt.Errorf("%w: %s is not a dynamic broker config strata supports (%s)", ErrConfig, name, strings.Join(dynamicBrokerConfigs, ", "))
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || n < 0 {
		return fmt.Errorf("%w: %s=%q: want bytes per second >= 0", ErrConfig, name, v)
	}
	return nil
}

// brokerConfigsChanged reads this broker's dynamic configs again when the
// notification names it or <default> (names nil: at start) and applies the
// rates. A znode that cannot be read leaves the rates as they were; a bad
// value is logged and counts as unset.
func (cl *clusterNode) brokerConfigsChanged(names []string) {
	self := strconv.Itoa(int(cl.id))
	if names != nil && !slices.Contains(names, self) && !slices.Contains(names, defaultBrokerEntity) {
		return
	}
	merged := map[string]string{}
	for _, name := range []string{defaultBrokerEntity, self} {
		cfg, err := cl.admin().EntityConfig(cluster.ConfigTypeBroker, name)
		if err != nil {
			cl.log.Error("cannot read dynamic broker configs from ZooKeeper: rates unchanged", "entity", name, "error", err)
			return
		}
		for k, v := range cfg {
			merged[k] = v
		}
	}
	rate := func(k string) int64 {
		v, ok := merged[k]
		if !ok {
			return -1
		}
		if err := checkDynamicBrokerConfig(k, v); err != nil {
			cl.log.Error("bad dynamic broker config in ZooKeeper: ignored", "error", err)
			return -1
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	cl.leaderQuota.SetRate(rate(leaderThrottledRate))
	cl.followerQuota.SetRate(rate(followerThrottledRate))
	cl.s.topics.moves.setDynamicRate(rate(alterLogDirsRate))
	cl.log.Info("replication throttles", leaderThrottledRate, cl.leaderQuota.Rate(), followerThrottledRate, cl.followerQuota.Rate())
}

// applyTopicThrottles sets the throttled partitions of topic t from its
// configs (loaded or changed).
func (cl *clusterNode) applyTopicThrottles(t *topic) {
	all, parts := throttledPartitions(t.configs[leaderThrottledReplicas], cl.id)
	cl.leaderQuota.SetThrottled(t.name, all, parts)
	all, parts = throttledPartitions(t.configs[followThrottledReplicas], cl.id)
	cl.followerQuota.SetThrottled(t.name, all, parts)
}

// throttledPartitions parses a throttled-replica list for broker id: "*"
// is every partition, otherwise the partitions of the partition:broker
// entries naming id (Kafka's parseThrottledPartitions). Entries that do
// not parse are skipped (the list was checked when it was set).
func throttledPartitions(v string, id int32) (all bool, parts []int32) {
	v = strings.TrimSpace(v)
	if v == "*" {
		return true, nil
	}
	for _, e := range splitList(v) {
		a, b, ok := strings.Cut(e, ":")
		p, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 32)
		broker, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if ok && err1 == nil && err2 == nil && int32(broker) == id && !slices.Contains(parts, int32(p)) {
			parts = append(parts, int32(p))
		}
	}
	return false, parts
}

// brokerEntity is the /config/brokers child of an alter-configs broker
// resource: "" is the cluster default (<default>), else a broker id.
func brokerEntity(resourceName string) (string, error) {
	if resourceName == "" {
		return defaultBrokerEntity, nil
	}
	if _, err := strconv.ParseInt(resourceName, 10, 32); err != nil {
		return "", fmt.Errorf("%w: broker resource %q is not a broker id", ErrConfig, resourceName)
	}
	return resourceName, nil
}

// changeBrokerConfig replaces the dynamic configs of a broker entity
// (Kafka's AdminZkClient.changeBrokerConfig): each checked, then written to
// /config/brokers/<entity> with a notification.
func (cl *clusterNode) changeBrokerConfig(entity string, configs map[string]string, validateOnly bool) error {
	for k, v := range configs {
		if err := checkDynamicBrokerConfig(k, v); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	if err := cl.admin().ChangeEntityConfig(cluster.ConfigTypeBroker, entity, configs); err != nil {
		if errors.Is(err, cluster.ErrClosed) {
			return ErrClosed
		}
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	cl.log.Info("dynamic broker configs written", "broker", entity, "configs", configs)
	return nil
}

// refreshThrottles reads the throttle configs again, before the Manager
// applies a LeaderAndIsr naming partitions being reassigned
// (adding_replicas): strata reassign --throttle writes them just before it
// starts the move, and the config change notifications may reach this
// broker after the controller's request, which would let the first bytes
// of the move through unthrottled. Other requests read nothing.
func (cl *clusterNode) refreshThrottles(req *kmsg.LeaderAndISRRequest) {
	var topics []string
	add := func(topic string, adding []int32) {
		if len(adding) > 0 && !slices.Contains(topics, topic) {
			topics = append(topics, topic)
		}
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		for j := range ts.PartitionStates {
			add(ts.Topic, ts.PartitionStates[j].AddingReplicas)
		}
	}
	for i := range req.PartitionStates {
		add(req.PartitionStates[i].Topic, req.PartitionStates[i].AddingReplicas)
	}
	if len(topics) == 0 {
		return
	}
	cl.brokerConfigsChanged(nil)
	for _, t := range topics {
		cl.loadTopicConfig(t)
	}
}

// wholeBatches cuts a follower's read to its whole batches: the read ends
// at the fetch's max bytes, most often inside a batch, and the follower
// drops that partial batch and fetches it again. Sent and counted by the
// throttles each time, it kept a move of 1 MB batches in 1 MiB fetches
// 5-15% under the throttle, and unthrottled it is ~5% of a catch-up's
// bytes sent, read and dropped for nothing. The read starts with a whole
// batch (Log.Read; one larger than the fetch's max bytes is sent whole,
// KIP-74); a region whose headers cannot be read, or whose first entry is
// not whole, is left as it is.
func wholeBatches(r *segment.Region) {
	var hdr [replica.BatchHeaderBytes]byte
	var n int64
	for n+replica.BatchHeaderBytes <= r.Len {
		if _, err := r.File.ReadAt(hdr[:], r.Pos+n); err != nil {
			break
		}
		size := int64(replica.BatchHeaderBytes) + int64(int32(binary.BigEndian.Uint32(hdr[8:])))
		if size <= replica.BatchHeaderBytes || n+size > r.Len {
			break
		}
		n += size
	}
	if n > 0 {
		r.Len = n
	}
}
