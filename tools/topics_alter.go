package tools

import (
	"context"

	"github.com/urfave/cli/v2"
)

// growRequest is a checked --alter command line.
type growRequest struct {
	partitions int32
	assignment [][]int32 // --replica-assignment: every partition's replicas, existing ones first; nil if not given
}

func parseAlter(c *cli.Context) (growRequest, error) {
	var g growRequest
	p := c.Int("partitions")
	if p < 1 || p > 1<<31-1 {
		return g, usageErr("The partitions must be greater than 0")
	}
	g.partitions = int32(p)
	if s := c.String("replica-assignment"); s != "" {
		a, err := parseReplicaAssignment(s)
		if err != nil {
			return g, err
		}
		if len(a) != p {
			return g, usageErr("--replica-assignment lists %d partitions and --partitions asks for %d: list the brokers of every partition, the existing ones first", len(a), p)
		}
		g.assignment = a
	}
	return g, nil
}

// planGrowth is what --alter asks of each topic: its new partition count
// and, with --replica-assignment, the replicas of the partitions it does
// not have yet (the assignment lists all of them, the existing ones first,
// as Kafka's alterTopic reads it). current holds each topic's partition
// count; it is only needed with an assignment.
func planGrowth(names []string, g growRequest, current map[string]int) []partitionGrowth {
	out := make([]partitionGrowth, 0, len(names))
	for _, name := range names {
		pg := partitionGrowth{topic: name, total: g.partitions}
		if g.assignment != nil {
			n := min(current[name], len(g.assignment))
			pg.assignment = g.assignment[n:]
		}
		out = append(out, pg)
	}
	return out
}

// alteredTopicJSON is one topic of --alter --json.
type alteredTopicJSON struct {
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions"`
	Altered    bool   `json:"altered"`
	Error      string `json:"error,omitempty"`
}

// alter is --alter --partitions N: CreatePartitions for every matching
// topic. Kafka prints nothing when it succeeds; neither does this (--json
// reports each topic).
func (r *topicsRun) alter(ctx context.Context, g growRequest) error {
	topics, err := r.matchTopics(ctx)
	if err != nil || len(topics) == 0 {
		if err == nil && r.json {
			return writeOut(r.w, []alteredTopicJSON{})
		}
		return err
	}
	names := listingNames(topics)
	current := map[string]int{}
	if g.assignment != nil {
		v, err := r.backend.describe(ctx, names)
		if err != nil {
			return clusterErr("describe topics", err)
		}
		for _, t := range v.topics {
			if t.err != nil {
				return clusterErr("describe topic "+t.name, t.err)
			}
			current[t.name] = len(t.partitions)
		}
	}
	results, err := r.backend.addPartitions(ctx, planGrowth(names, g, current))
	if err != nil {
		return clusterErr("add partitions", err)
	}
	return r.reportTopics(names, results, "add partitions to topic ", "topics were not altered", func(name string, err error) any {
		return alteredTopicJSON{Topic: name, Partitions: g.partitions, Altered: err == nil, Error: errText(err)}
	})
}
