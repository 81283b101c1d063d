package tools

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// planPartition is one entry of Kafka's reassignment JSON:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}
type planPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

func (p planPartition) name() string { return p.Topic + "-" + strconv.Itoa(int(p.Partition)) }

// readPlan reads and checks a --reassignment-json-file: version 1, at
// least one partition, each with a topic, a partition, a non-empty
// replica list without repeats or negative ids, log_dirs (if given) one
// per replica, each "any" or an absolute path, no partition twice.
func readPlan(path string) ([]planPartition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("--reassignment-json-file: %v", err)
	}
	var raw struct {
		Version    *int `json:"version"`
		Partitions []struct {
			Topic     *string  `json:"topic"`
			Partition *int32   `json:"partition"`
			Replicas  []int32  `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		} `json:"partitions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, usageErr("%s: malformed reassignment JSON: %v", path, err)
	}
	if raw.Version == nil || *raw.Version != 1 {
		return nil, usageErr("%s: \"version\" must be 1", path)
	}
	if len(raw.Partitions) == 0 {
		return nil, usageErr("%s: no partitions to reassign", path)
	}
	var out []planPartition
	seen := map[string]bool{}
	for i, rp := range raw.Partitions {
		if rp.Topic == nil || *rp.Topic == "" || rp.Partition == nil {
			return nil, usageErr("%s: partitions[%d]: \"topic\" and \"partition\" are required", path, i)
		}
		p := planPartition{Topic: *rp.Topic, Partition: *rp.Partition, Replicas: rp.Replicas}
		if len(p.Replicas) == 0 {
			return nil, usageErr("%s: partition %s has an empty replica list", path, p.name())
		}
		for j, r := range p.Replicas {
			if r < 0 {
				return nil, usageErr("%s: partition %s: invalid broker id %d", path, p.name(), r)
			}
			if slices.Contains(p.Replicas[:j], r) {
				return nil, usageErr("%s: partition %s: replica list %v contains broker %d twice", path, p.name(), p.Replicas, r)
			}
		}
		if rp.LogDirs != nil {
			if len(rp.LogDirs) != len(p.Replicas) {
				return nil, usageErr("%s: partition %s: %d log_dirs for %d replicas", path, p.name(), len(rp.LogDirs), len(p.Replicas))
			}
			for _, d := range rp.LogDirs {
				if d != "any" && !filepath.IsAbs(d) {
					return nil, usageErr("%s: partition %s: log dir %q: want \"any\" or an absolute path", path, p.name(), d)
				}
			}
			p.LogDirs = rp.LogDirs
		}
		if seen[p.name()] {
			return nil, usageErr("%s: partition %s is listed twice", path, p.name())
		}
		seen[p.name()] = true
		out = append(out, p)
	}
	return out, nil
}

// readTopicsToMove reads --topics-to-move-json-file:
// {"version":1,"topics":[{"topic":"foo"}]}.
func readTopicsToMove(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("--topics-to-move-json-file: %v", err)
	}
	var raw struct {
		Version *int `json:"version"`
		Topics  []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, usageErr("%s: malformed topics JSON: %v", path, err)
	}
	if raw.Version != nil && *raw.Version != 1 {
		return nil, usageErr("%s: \"version\" must be 1", path)
	}
	var out []string
	for i, t := range raw.Topics {
		if t.Topic == "" {
			return nil, usageErr("%s: topics[%d]: \"topic\" is required", path, i)
		}
		if !slices.Contains(out, t.Topic) {
			out = append(out, t.Topic)
		}
	}
	if len(out) == 0 {
		return nil, usageErr("%s: no topics", path)
	}
	return out, nil
}

// planJSON is Kafka's reassignment JSON of ps (sorted by topic and
// partition), log_dirs "any" for each replica as Kafka prints it.
func planJSON(ps []planPartition) string {
	sorted := slices.Clone(ps)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Topic != sorted[j].Topic {
			return sorted[i].Topic < sorted[j].Topic
		}
		return sorted[i].Partition < sorted[j].Partition
	})
	for i := range sorted {
		sorted[i].LogDirs = make([]string, len(sorted[i].Replicas))
		for j := range sorted[i].LogDirs {
			sorted[i].LogDirs[j] = "any"
		}
	}
	b, _ := json.Marshal(struct {
		Version    int             `json:"version"`
		Partitions []planPartition `json:"partitions"`
	}{1, sorted})
	return string(b)
}

// parseBrokerList reads --broker-list 1,2,3.
func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 {
			return nil, usageErr("--broker-list: %q is not a broker id", f)
		}
		if slices.Contains(out, int32(n)) {
			return nil, usageErr("--broker-list: broker %d listed twice", n)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// decommissionPlan moves every replica off broker gone onto the others
// (rest): each replaced in place by the broker not already a replica of
// the partition with the fewest replicas, and for a preferred leader
// (first replica) the fewest preferred leaderships first, so leadership
// stays balanced. current lists every partition of the topics concerned.
func decommissionPlan(current []planPartition, gone int32, rest []int32) ([]planPartition, error) {
	load, lead := map[int32]int{}, map[int32]int{}
	for _, b := range rest {
		load[b], lead[b] = 0, 0
	}
	for _, p := range current {
		for i, r := range p.Replicas {
			if _, ok := load[r]; ok {
				load[r]++
				if i == 0 {
					lead[r]++
				}
			}
		}
	}
	var out []planPartition
	for _, p := range current {
		i := slices.Index(p.Replicas, gone)
		if i < 0 {
			continue
		}
		best := int32(-1)
		for _, b := range rest {
			if slices.Contains(p.Replicas, b) {
				continue
			}
			if best < 0 || better(b, best, i == 0, load, lead) {
				best = b
			}
		}
		if best < 0 {
			return nil, usageErr("cannot move %s off broker %d: its %d replicas would need %d other brokers, there are %d",
				p.name(), gone, len(p.Replicas), len(p.Replicas), len(rest))
		}
		np := planPartition{Topic: p.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)}
		np.Replicas[i] = best
		load[best]++
		if i == 0 {
			lead[best]++
		}
		out = append(out, np)
	}
	if len(out) == 0 {
		return nil, usageErr("--decommission-broker %d: the broker holds no replica of the topics", gone)
	}
	return out, nil
}

func better(a, b int32, leader bool, load, lead map[int32]int) bool {
	if leader && lead[a] != lead[b] {
		return lead[a] < lead[b]
	}
	if load[a] != load[b] {
		return load[a] < load[b]
	}
	return a < b
}

// fmtReplicas prints [1,2,3] as Kafka does.
func fmtReplicas(rs []int32) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.Itoa(int(r))
	}
	return "[" + strings.Join(s, ",") + "]"
}
