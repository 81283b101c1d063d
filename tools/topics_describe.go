package tools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// describeOpts are --describe's report flags.
type describeOpts struct {
	underReplicated bool // --under-replicated-partitions
	unavailable     bool // --unavailable-partitions
	underMinISR     bool // --under-min-isr-partitions
	atMinISR        bool // --at-min-isr-partitions
	withOverrides   bool // --topics-with-overrides
}

// showTopicLines: without a partition report flag every topic gets its
// "Topic: ... Configs:" line (Kafka's describeConfigs).
func (o describeOpts) showTopicLines() bool {
	return !o.underReplicated && !o.unavailable && !o.underMinISR && !o.atMinISR
}

// showPartitions: partition lines are printed unless
// --topics-with-overrides (Kafka's describePartitions).
func (o describeOpts) showPartitions() bool { return !o.withOverrides }

// describedTopic is one topic of the describe plan: its "Topic:" line (nil
// when not printed) and the partition lines to print.
type describedTopic struct {
	header     *topicHeader
	partitions []describedPartition
}

// topicHeader is the values of a topic's "Topic:" line.
type topicHeader struct {
	Topic             string            `json:"topic"`
	TopicID           string            `json:"topic_id,omitempty"`
	Internal          bool              `json:"internal"`
	PartitionCount    int               `json:"partition_count"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"` // the configs not at their default
	MinInsyncReplicas *int              `json:"min_insync_replicas,omitempty"`
	MarkedForDeletion bool              `json:"marked_for_deletion,omitempty"`
	configOrder       []string
}

// describedPartition is one partition line, with what the report flags
// look at.
type describedPartition struct {
	Topic             string  `json:"-"`
	Partition         int32   `json:"partition"`
	Leader            int32   `json:"leader"` // -1: none
	LeaderEpoch       int32   `json:"leader_epoch"`
	Replicas          []int32 `json:"replicas"`
	ISR               []int32 `json:"isr"`
	OfflineReplicas   []int32 `json:"offline_replicas"`
	AddingReplicas    []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas  []int32 `json:"removing_replicas,omitempty"`
	UnderReplicated   bool    `json:"under_replicated"`
	Unavailable       bool    `json:"unavailable"`
	UnderMinISR       bool    `json:"under_min_isr"`
	AtMinISR          bool    `json:"at_min_isr"`
	Error             string  `json:"error,omitempty"`
	reassigning       bool
	markedForDeletion bool
}

// planDescribe decides, as Kafka's TopicCommand.describeTopic does, what
// --describe prints for each topic of the view. A partition is
// under-replicated when it has fewer in-sync replicas than its replication
// factor; unavailable when it has no leader or its leader is not a live
// broker; under min ISR when it has no leader or fewer in-sync replicas
// than min.insync.replicas; at min ISR when exactly that many. Where the
// cluster does not report min.insync.replicas (Kafka's ZooKeeper path) only
// the leaderless partitions are under min ISR and none is at it. Topics the
// view could not describe are skipped (their errors are the caller's).
func planDescribe(v *clusterView, o describeOpts) []describedTopic {
	var out []describedTopic
	for i := range v.topics {
		t := &v.topics[i]
		if t.err != nil {
			continue
		}
		var d describedTopic
		minISR := minInsyncReplicas(t.configs)
		if o.showTopicLines() {
			h := topicLine(t, minISR)
			if !o.withOverrides || len(h.Configs) > 0 {
				d.header = h
			}
		}
		if o.showPartitions() {
			for _, p := range t.partitions {
				dp := partitionLine(t, &p, minISR, v.liveBrokers)
				if o.showTopicLines() ||
					o.underReplicated && dp.UnderReplicated || o.unavailable && dp.Unavailable ||
					o.underMinISR && dp.UnderMinISR || o.atMinISR && dp.AtMinISR {
					d.partitions = append(d.partitions, dp)
				}
			}
		}
		if d.header != nil || len(d.partitions) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// topicLine is the "Topic:" line of t. The replication factor is the
// first partition's, counted without the replicas a reassignment in
// progress is adding (Kafka's getReplicationFactor).
func topicLine(t *topicView, minISR *int) *topicHeader {
	h := &topicHeader{Topic: t.name, TopicID: topicIDString(t.id), Internal: t.internal,
		PartitionCount: len(t.partitions), Configs: map[string]string{}, MinInsyncReplicas: minISR,
		MarkedForDeletion: t.markedForDeletion}
	if len(t.partitions) > 0 {
		h.ReplicationFactor = replicationFactor(&t.partitions[0])
	}
	for _, c := range t.configs {
		if c.isDefault {
			continue
		}
		h.Configs[c.name] = c.value
		h.configOrder = append(h.configOrder, c.name)
	}
	return h
}

// replicationFactor is the partition's replica count; during a reassignment
// (some replica is being added or removed) the target count less the
// replicas being added.
func replicationFactor(p *partitionView) int {
	if ra := p.reassignment; ra != nil {
		changing := map[int32]bool{}
		for _, b := range ra.adding {
			changing[b] = true
		}
		for _, b := range ra.removing {
			changing[b] = true
		}
		for _, b := range p.replicas {
			if changing[b] {
				return len(ra.replicas) - len(ra.adding)
			}
		}
	}
	return len(p.replicas)
}

func partitionLine(t *topicView, p *partitionView, minISR *int, live map[int32]bool) describedPartition {
	dp := describedPartition{Topic: t.name, Partition: p.partition, Leader: p.leader, LeaderEpoch: p.leaderEpoch,
		Replicas: orEmpty(p.replicas), ISR: orEmpty(p.isr), OfflineReplicas: orEmpty(p.offline),
		markedForDeletion: t.markedForDeletion}
	if p.leader < 0 {
		dp.Leader = -1
	}
	if ra := p.reassignment; ra != nil {
		dp.reassigning = true
		dp.AddingReplicas, dp.RemovingReplicas = orEmpty(ra.adding), orEmpty(ra.removing)
	}
	if p.err != nil {
		dp.Error = p.err.Error()
	}
	hasLeader := dp.Leader >= 0
	dp.UnderReplicated = replicationFactor(p)-len(p.isr) > 0
	dp.Unavailable = !hasLeader || !live[dp.Leader]
	dp.UnderMinISR = !hasLeader || minISR != nil && len(p.isr) < *minISR
	dp.AtMinISR = minISR != nil && len(p.isr) == *minISR
	return dp
}

// minInsyncReplicas is the topic's min.insync.replicas, nil when the
// cluster does not report it or it is not a number.
func minInsyncReplicas(cs []configEntry) *int {
	for _, c := range cs {
		if c.name == "min.insync.replicas" {
			if n, err := strconv.Atoi(strings.TrimSpace(c.value)); err == nil {
				return &n
			}
		}
	}
	return nil
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// formatDescribe prints the plan as Kafka does: for each topic its
// "Topic:" line, then one tab-led line per partition.
func formatDescribe(plan []describedTopic) string {
	var b strings.Builder
	for _, d := range plan {
		if h := d.header; h != nil {
			b.WriteString("Topic: " + h.Topic)
			if h.TopicID != "" {
				b.WriteString("\tTopicId: " + h.TopicID)
			}
			fmt.Fprintf(&b, "\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: ", h.PartitionCount, h.ReplicationFactor)
			for i, k := range h.configOrder {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(k + "=" + h.Configs[k])
			}
			if h.MarkedForDeletion {
				b.WriteString("\tMarkedForDeletion: true")
			}
			b.WriteByte('\n')
		}
		for _, p := range d.partitions {
			leader := "none"
			if p.Leader >= 0 {
				leader = strconv.Itoa(int(p.Leader))
			}
			fmt.Fprintf(&b, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s",
				p.Topic, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
			if p.reassigning {
				fmt.Fprintf(&b, "\tAdding Replicas: %s\tRemoving Replicas: %s", joinIDs(p.AddingReplicas), joinIDs(p.RemovingReplicas))
			}
			if p.markedForDeletion {
				b.WriteString("\tMarkedForDeletion: true")
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// describedTopicJSON is one topic of --describe --json: the topic line's
// values and the partitions the flags keep.
type describedTopicJSON struct {
	topicHeader
	Partitions []describedPartition `json:"partitions"`
}

func describeJSONOut(plan []describedTopic, v *clusterView) []describedTopicJSON {
	byName := map[string]*topicView{}
	for i := range v.topics {
		byName[v.topics[i].name] = &v.topics[i]
	}
	out := make([]describedTopicJSON, 0, len(plan))
	for _, d := range plan {
		h := d.header
		if h == nil { // report flags: the topic's values all the same
			name := d.partitions[0].Topic
			t := byName[name]
			h = topicLine(t, minInsyncReplicas(t.configs))
		}
		ps := d.partitions
		if ps == nil {
			ps = []describedPartition{}
		}
		out = append(out, describedTopicJSON{topicHeader: *h, Partitions: ps})
	}
	return out
}

// describe is --describe: the matching topics as the flags ask. A topic
// the cluster could not describe is reported on stderr and makes the exit
// status 1; the others are still printed.
func (r *topicsRun) describe(ctx context.Context) error {
	topics, err := r.matchTopics(ctx)
	if err != nil {
		return err
	}
	v, err := r.backend.describe(ctx, listingNames(topics))
	if err != nil {
		return clusterErr("describe topics", err)
	}
	marked := map[string]bool{}
	for _, t := range topics {
		marked[t.name] = t.markedForDeletion
	}
	var problems []error
	for i := range v.topics {
		t := &v.topics[i]
		t.markedForDeletion = t.markedForDeletion || marked[t.name]
		if t.err != nil {
			problems = append(problems, clusterErr("describe topic "+t.name, t.err))
		}
	}
	o := describeOpts{underReplicated: r.c.Bool("under-replicated-partitions"), unavailable: r.c.Bool("unavailable-partitions"),
		underMinISR: r.c.Bool("under-min-isr-partitions"), atMinISR: r.c.Bool("at-min-isr-partitions"),
		withOverrides: r.c.Bool("topics-with-overrides")}
	plan := planDescribe(v, o)
	if r.json {
		err = writeOut(r.w, describeJSONOut(plan, v))
	} else {
		err = writeText(r.w, formatDescribe(plan))
	}
	if err != nil {
		return err
	}
	return firstProblem(r.errw, problems, len(v.topics), "topics could not be described")
}
