package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

// parseCreate checks the values of --create's flags as Kafka's
// TopicCommand does before it sends anything: a replication factor in
// [1, 32767], a positive partition count, k=v configs, a well-formed
// --replica-assignment.
func parseCreate(c *cli.Context) (newTopic, error) {
	t := newTopic{name: c.String("topic"), partitions: -1, replicationFactor: -1}
	if c.IsSet("replication-factor") {
		rf := c.Int("replication-factor")
		if rf < 1 || rf > math.MaxInt16 {
			return t, usageErr("The replication factor must be between 1 and %d inclusive", math.MaxInt16)
		}
		t.replicationFactor = int16(rf)
	}
	if c.IsSet("partitions") {
		p := c.Int("partitions")
		if p < 1 || p > math.MaxInt32 {
			return t, usageErr("The partitions must be greater than 0")
		}
		t.partitions = int32(p)
	}
	var err error
	if t.configs, err = parseTopicConfigs(c.Generic("config").(*multiString).vals); err != nil {
		return t, err
	}
	if s := c.String("replica-assignment"); s != "" {
		if t.assignment, err = parseReplicaAssignment(s); err != nil {
			return t, err
		}
	}
	return t, nil
}

// parseTopicConfigs reads --config k=v values: exactly one '=' with a
// name and a value around it (blanks around them trimmed), as Kafka's
// parseTopicConfigsToBeAdded. Whether the name and value are valid is
// the broker's to say (INVALID_CONFIG).
func parseTopicConfigs(vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" || strings.Contains(v, "=") {
			return nil, usageErr("--config %q: Invalid topic config: all configs to be added must be in the format \"key=val\".", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseReplicaAssignment reads --replica-assignment as Kafka does: partitions
// separated by ',', each partition's broker ids by ':', every partition with
// as many replicas as the first and none twice.
func parseReplicaAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		var brokers []int32
		seen := map[int32]bool{}
		var dups []string
		for _, id := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
			if err != nil {
				return nil, usageErr("--replica-assignment %q: partition %d: %q is not a broker id", s, i, strings.TrimSpace(id))
			}
			if seen[int32(n)] {
				dups = append(dups, strconv.FormatInt(n, 10))
			}
			seen[int32(n)] = true
			brokers = append(brokers, int32(n))
		}
		if len(dups) > 0 {
			return nil, usageErr("--replica-assignment %q: Partition replica lists may not contain duplicate entries: %s", s, strings.Join(dups, ","))
		}
		if i > 0 && len(brokers) != len(out[0]) {
			return nil, usageErr("--replica-assignment %q: Partition %d has different replication factor: [%s]", s, i, joinIDsSpaced(brokers))
		}
		out = append(out, brokers)
	}
	return out, nil
}

// joinIDsSpaced is ids as Java prints a list's elements: "1, 2".
func joinIDsSpaced(ids []int32) string {
	return strings.ReplaceAll(joinIDs(ids), ",", ", ")
}

// createdTopicJSON is --create --json.
type createdTopicJSON struct {
	Topic             string `json:"topic"`
	Created           bool   `json:"created"`
	TopicID           string `json:"topic_id,omitempty"`
	Partitions        int32  `json:"partitions,omitempty"`
	ReplicationFactor int16  `json:"replication_factor,omitempty"`
	Error             string `json:"error,omitempty"`
}

// create is --create: "Created topic T." With --if-not-exists a topic that
// exists is no error and nothing is printed, as in Kafka.
func (r *topicsRun) create(ctx context.Context, t newTopic) error {
	if strings.ContainsAny(t.name, "._") {
		fmt.Fprintln(r.errw, "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.")
	}
	res, err := r.backend.create(ctx, t)
	out := createdTopicJSON{Topic: t.name, Created: err == nil}
	switch {
	case err == nil:
		out.TopicID, out.Partitions, out.ReplicationFactor = topicIDString(res.id), res.partitions, res.replicationFactor
	case errors.Is(err, kerr.TopicAlreadyExists) && r.c.Bool("if-not-exists"):
		err = nil
	default:
		err = clusterErr("create topic "+t.name, err)
		out.Error = err.Error()
	}
	if r.json {
		if werr := writeOut(r.w, out); werr != nil {
			return werr
		}
	} else if out.Created {
		if werr := writeText(r.w, "Created topic "+t.name+".\n"); werr != nil {
			return werr
		}
	}
	return err
}
