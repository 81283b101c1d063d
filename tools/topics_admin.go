package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminBackend is the topicsBackend of --bootstrap-server: Kafka's admin
// requests through franz-go (kadm where it covers the request, kmsg where
// kadm has no replica assignments), so it works against strata and any
// other Kafka-compatible broker. CreateTopics, CreatePartitions and
// DeleteTopics go to the controller (kgo routes them and follows
// NOT_CONTROLLER).
type adminBackend struct {
	cl      *kgo.Client
	adm     *kadm.Client
	apis    map[int16]bool // the API keys the broker advertises
	timeout time.Duration
}

// Kafka API keys the backend sends.
const (
	keyMetadata                   = 3
	keyCreateTopics               = 19
	keyDeleteTopics               = 20
	keyDescribeConfigs            = 32
	keyCreatePartitions           = 37
	keyListPartitionReassignments = 46
)

// topicsAPIs are the requests each action needs; a broker without one is
// refused up front (exit 2) with the request's name.
var topicsAPIs = map[string][]int16{
	"list":     {keyMetadata},
	"describe": {keyMetadata, keyDescribeConfigs},
	"create":   {keyCreateTopics},
	"alter":    {keyMetadata, keyCreatePartitions},
	"delete":   {keyMetadata, keyDeleteTopics},
}

// dialAdmin connects to the brokers and checks that they answer and serve
// the action's requests.
func dialAdmin(ctx context.Context, cfg *clientConfig, action string, timeout time.Duration) (*adminBackend, error) {
	// A broker that accepts connections but never answers (stopped) costs
	// one request at most 10 s, then the request is retried elsewhere.
	cl, err := kgo.NewClient(append(cfg.kgoOpts(),
		kgo.DialTimeout(min(timeout, 10*time.Second)), kgo.RetryTimeout(timeout), kgo.RequestTimeoutOverhead(min(timeout, 10*time.Second)))...)
	if err != nil {
		return nil, usageErr("--bootstrap-server: %v", err)
	}
	b := &adminBackend{cl: cl, adm: kadm.NewClient(cl), timeout: timeout}
	b.adm.SetTimeoutMillis(int32(min(timeout.Milliseconds(), 1<<31-1)))
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, failErr(fmt.Errorf("cannot reach a broker at %s: %w", strings.Join(cfg.bootstrap, ","), err))
	}
	if b.apis, err = apiKeys(ctx, cl); err != nil {
		cl.Close()
		return nil, err
	}
	var missing []string
	for _, k := range topicsAPIs[action] {
		if !b.apis[k] {
			missing = append(missing, fmt.Sprintf("%s (key %d)", kmsg.NameForKey(k), k))
		}
	}
	if len(missing) > 0 {
		cl.Close()
		return nil, failErr(fmt.Errorf("the broker does not support %s (absent from its ApiVersions)", strings.Join(missing, ", ")))
	}
	return b, nil
}

// apiKeys asks a broker which API keys it serves.
func apiKeys(ctx context.Context, cl *kgo.Client) (map[int16]bool, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, clusterErr("ApiVersions", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, clusterErr("ApiVersions", err)
	}
	have := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = true
	}
	return have, nil
}

func (b *adminBackend) close() { b.cl.Close() }

// list is a Metadata request for every topic.
func (b *adminBackend) list(ctx context.Context) ([]topicListing, error) {
	md, err := b.adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]topicListing, 0, len(md.Topics))
	for _, td := range md.Topics.Sorted() {
		if td.Topic == "" {
			continue
		}
		out = append(out, topicListing{name: td.Topic, internal: td.IsInternal || internalTopics[td.Topic]})
	}
	return out, nil
}

// describe is Metadata for the topics, DescribeConfigs for their configs
// and, where the broker has it, ListPartitionReassignments (Kafka's
// TopicCommand ignores a broker without it, as here).
func (b *adminBackend) describe(ctx context.Context, names []string) (*clusterView, error) {
	if len(names) == 0 {
		return &clusterView{liveBrokers: map[int32]bool{}}, nil // Metadata without topics would mean all
	}
	md, err := b.adm.Metadata(ctx, names...)
	if err != nil {
		return nil, err
	}
	configs, cfgErr := b.adm.DescribeTopicConfigs(ctx, names...)
	if cfgErr != nil && !isShardErr(cfgErr) {
		return nil, cfgErr
	}
	var reassigning kadm.ListPartitionReassignmentsResponses
	if b.apis[keyListPartitionReassignments] {
		var set kadm.TopicsSet
		md.Topics.EachPartition(func(p kadm.PartitionDetail) { set.Add(p.Topic, p.Partition) })
		reassigning, err = b.adm.ListPartitionReassignments(ctx, set)
		if err != nil && !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.UnsupportedVersion) {
			return nil, err
		}
	}
	v := viewFromMetadata(md, configs, reassigning)
	// A topic DescribeConfigs did not answer for (its shard failed) says so.
	for i := range v.topics {
		t := &v.topics[i]
		if t.err == nil && t.configs == nil {
			t.err = fmt.Errorf("describe the configs of topic %s: no answer for it from the broker", t.name)
			if cfgErr != nil {
				t.err = fmt.Errorf("describe the configs of topic %s: %w", t.name, cfgErr)
			}
		}
	}
	return v, nil
}

// viewFromMetadata turns kadm's answers into the backend-neutral view:
// topics sorted by name, partitions by number, the brokers Metadata lists as
// the live ones (Kafka's describeCluster). A topic whose configs the broker
// refused carries that error.
func viewFromMetadata(md kadm.Metadata, configs kadm.ResourceConfigs, ra kadm.ListPartitionReassignmentsResponses) *clusterView {
	v := &clusterView{liveBrokers: map[int32]bool{}}
	for _, br := range md.Brokers {
		v.liveBrokers[br.NodeID] = true
	}
	for _, td := range md.Topics.Sorted() {
		t := topicView{name: td.Topic, id: td.ID, internal: td.IsInternal || internalTopics[td.Topic], err: td.Err}
		for _, pd := range td.Partitions.Sorted() {
			p := partitionView{partition: pd.Partition, leader: pd.Leader, leaderEpoch: pd.LeaderEpoch,
				replicas: pd.Replicas, isr: pd.ISR, offline: pd.OfflineReplicas, err: pd.Err}
			if r, ok := ra[td.Topic][pd.Partition]; ok {
				p.reassignment = &reassignment{replicas: r.Replicas, adding: r.AddingReplicas, removing: r.RemovingReplicas}
			}
			t.partitions = append(t.partitions, p)
		}
		if rc, err := configs.On(td.Topic, nil); err == nil {
			if rc.Err != nil && t.err == nil {
				t.err = &topicErr{err: rc.Err, msg: rc.ErrMessage}
			}
			t.configs = []configEntry{}
			for _, c := range rc.Configs {
				value := "null" // as Kafka prints a config without a value (a sensitive one)
				if c.Value != nil {
					value = *c.Value
				}
				t.configs = append(t.configs, configEntry{name: c.Key, value: value,
					isDefault: c.Source == kmsg.ConfigSourceDefaultConfig})
			}
			sort.Slice(t.configs, func(i, j int) bool { return t.configs[i].name < t.configs[j].name })
		}
		v.topics = append(v.topics, t)
	}
	return v
}

// create sends CreateTopics for one topic. kadm's CreateTopic has no replica
// assignments, so the request is built here.
func (b *adminBackend) create(ctx context.Context, t newTopic) (createdTopic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(min(b.timeout.Milliseconds(), 1<<31-1))
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.name, t.partitions, t.replicationFactor
	for i, rs := range t.assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for _, k := range sortedKeys(t.configs) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(t.configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return createdTopic{}, err
	}
	for _, st := range resp.Topics {
		if st.Topic != t.name {
			continue
		}
		if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
			return createdTopic{}, &topicErr{err: err, msg: deref(st.ErrorMessage)}
		}
		return createdTopic{id: st.TopicID, partitions: st.NumPartitions, replicationFactor: st.ReplicationFactor}, nil
	}
	return createdTopic{}, fmt.Errorf("the broker's CreateTopics answer does not name topic %s", t.name)
}

// addPartitions sends one CreatePartitions for every topic.
func (b *adminBackend) addPartitions(ctx context.Context, grow []partitionGrowth) (map[string]error, error) {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(min(b.timeout.Milliseconds(), 1<<31-1))
	for _, g := range grow {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = g.topic, g.total
		if g.assignment != nil {
			// Non-nil even when empty: an empty list is the broker's to
			// refuse, where null would let it place the replicas.
			rt.Assignment = make([]kmsg.CreatePartitionsRequestTopicAssignment, 0, len(g.assignment))
		}
		for _, rs := range g.assignment {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = rs
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return nil, err
	}
	out := map[string]error{}
	for _, st := range resp.Topics {
		out[st.Topic] = nil
		if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
			out[st.Topic] = &topicErr{err: err, msg: deref(st.ErrorMessage)}
		}
	}
	return out, nil
}

// delete sends DeleteTopics for the topics, by name.
func (b *adminBackend) delete(ctx context.Context, names []string) (map[string]error, error) {
	resps, err := b.adm.DeleteTopics(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := map[string]error{}
	for name, r := range resps {
		out[name] = nil
		if r.Err != nil {
			out[name] = &topicErr{err: r.Err, msg: r.ErrMessage}
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
