package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// resetJSON is the --reset-offsets --json output.
type resetJSON struct {
	Group    string          `json:"group"`
	Executed bool            `json:"executed"`
	Offsets  []plannedOffset `json:"offsets"`
}

// reset is --reset-offsets: plan, print, and with --execute commit.
func (r *groupsRun) reset(ctx context.Context, req *resetRequest) error {
	if err := r.checkInactive(ctx); err != nil {
		return err
	}
	committed, err := r.adm.FetchOffsets(ctx, r.group)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		committed = nil // a new group: nothing committed yet (Kafka answers empty, some brokers so)
	case err != nil:
		return brokerErr("fetch the offsets of group "+r.group, err)
	}
	targets, err := r.resetTargets(ctx, req, committed)
	if err != nil {
		return err
	}
	parts, err := r.partitionOffsets(ctx, req.scenario, targets, committed)
	if err != nil {
		return err
	}
	plan, err := planReset(req.scenario, parts)
	if err != nil {
		return refused("%v", err)
	}
	for _, p := range plan {
		if !p.Clamped {
			continue
		}
		bound := "log end"
		if *p.Requested < p.NewOffset {
			bound = "log start"
		}
		fmt.Fprintf(r.errw, "Warning: new offset %d of %s-%d is outside the log; using the %s offset %d.\n",
			*p.Requested, p.Topic, p.Partition, bound, p.NewOffset)
	}
	if req.execute && len(plan) > 0 {
		var os kadm.Offsets
		for _, p := range plan {
			os.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.NewOffset, LeaderEpoch: -1})
		}
		resps, err := r.adm.CommitOffsets(ctx, r.group, os)
		if err != nil {
			return brokerErr("commit the new offsets of group "+r.group, err)
		}
		var failed error
		for _, o := range resps.Sorted() {
			if o.Err != nil {
				fmt.Fprintf(r.errw, "Error: %s-%d: %v\n", o.Topic, o.Partition, o.Err)
				failed = o.Err
			}
		}
		if failed != nil {
			return brokerErr("commit the new offsets of group "+r.group, failed)
		}
	}
	switch {
	case r.json:
		return writeJSON(r.w, resetJSON{Group: r.group, Executed: req.execute, Offsets: plan})
	case req.export:
		var b strings.Builder
		for _, p := range plan {
			fmt.Fprintf(&b, "%s,%d,%d\n", p.Topic, p.Partition, p.NewOffset)
		}
		if _, err := io.WriteString(r.w, b.String()); err != nil {
			return failErr(err)
		}
		if !req.execute {
			fmt.Fprintln(r.errw, "Dry run: nothing was committed. Add --execute to commit these offsets.")
		}
		return nil
	}
	t := newTable("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	for _, p := range plan {
		t.add(r.group, p.Topic, strconv.Itoa(int(p.Partition)), strconv.FormatInt(p.NewOffset, 10))
	}
	if err := t.write(r.w); err != nil {
		return failErr(err)
	}
	if !req.execute {
		fmt.Fprintln(r.errw, "Dry run: nothing was committed. Add --execute to commit these offsets.")
	}
	return nil
}

// checkInactive refuses a reset while the group has members: their
// commits would overwrite the reset (Kafka requires an inactive group).
// A group the coordinator does not know is fine: the reset creates it.
func (r *groupsRun) checkInactive(ctx context.Context) error {
	dg, err := r.adm.DescribeGroups(ctx, r.group)
	if err != nil {
		return brokerErr("describe group "+r.group, err)
	}
	g, ok := dg[r.group]
	switch {
	case !ok, errors.Is(g.Err, kerr.GroupIDNotFound):
		return nil
	case g.Err != nil:
		return brokerErr("describe group "+r.group, g.Err)
	case g.State == "Empty" || g.State == "Dead":
		return nil
	}
	return refused("the offsets of group '%s' can only be reset while the group is inactive, but it is %s with %d active member(s); stop its consumers first",
		r.group, g.State, len(g.Members))
}

// resetTargets resolves --topic / --all-topics to partitions.
func (r *groupsRun) resetTargets(ctx context.Context, req *resetRequest, committed kadm.OffsetResponses) ([]tp, error) {
	var out []tp
	if req.scenario.kind == "from-file" {
		byTopic := map[string][]int32{}
		for k := range req.scenario.file {
			byTopic[k.topic] = append(byTopic[k.topic], k.part)
		}
		var specs []topicSpec
		for _, t := range sortedKeys(byTopic) {
			specs = append(specs, topicSpec{topic: t, partitions: byTopic[t]})
		}
		return r.resolveTopics(ctx, specs)
	}
	if req.allTopics {
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				out = append(out, tp{o.Topic, o.Partition})
			}
		})
		if len(out) == 0 {
			fmt.Fprintf(r.errw, "Consumer group '%s' has no committed offsets: nothing to reset with --all-topics.\n", r.group)
		}
		return out, nil
	}
	return r.resolveTopics(ctx, req.topics)
}

// resolveTopics turns --topic specs into partitions, checking with the
// broker's metadata that they exist.
func (r *groupsRun) resolveTopics(ctx context.Context, specs []topicSpec) ([]tp, error) {
	names := make([]string, 0, len(specs))
	for _, ts := range specs {
		names = append(names, ts.topic)
	}
	tds, err := r.adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, brokerErr("describe topics", err)
	}
	var out []tp
	seen := map[tp]bool{}
	for _, ts := range specs {
		td, ok := tds[ts.topic]
		if !ok || td.Err != nil {
			err := td.Err
			if err == nil {
				err = kerr.UnknownTopicOrPartition
			}
			return nil, brokerErr("topic "+ts.topic, err)
		}
		ps := ts.partitions
		if ps == nil {
			ps = td.Partitions.Numbers()
		}
		for _, p := range ps {
			if _, ok := td.Partitions[p]; !ok {
				return nil, brokerErr(fmt.Sprintf("topic %s partition %d", ts.topic, p), kerr.UnknownTopicOrPartition)
			}
			if k := (tp{ts.topic, p}); !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// partitionOffsets lists the log start and end (and for --to-datetime the
// offset at the time) of every target.
func (r *groupsRun) partitionOffsets(ctx context.Context, sc resetScenario, targets []tp, committed kadm.OffsetResponses) ([]partitionOffsets, error) {
	if len(targets) == 0 {
		return nil, nil
	}
	topicSet := map[string]bool{}
	for _, k := range targets {
		topicSet[k.topic] = true
	}
	topics := sortedKeys(topicSet)
	starts, err := r.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, brokerErr("list the log start offsets", err)
	}
	ends, err := r.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, brokerErr("list the log end offsets", err)
	}
	var atTime kadm.ListedOffsets
	if sc.kind == "to-datetime" {
		if atTime, err = r.adm.ListOffsetsAfterMilli(ctx, sc.millis, topics...); err != nil {
			return nil, brokerErr("list the offsets at the time", err)
		}
	}
	out := make([]partitionOffsets, 0, len(targets))
	for _, k := range targets {
		po := partitionOffsets{Topic: k.topic, Partition: k.part, Committed: -1, AtTime: -1}
		for _, l := range []struct {
			from kadm.ListedOffsets
			dst  *int64
		}{{starts, &po.Start}, {ends, &po.End}, {atTime, &po.AtTime}} {
			if l.from == nil {
				continue
			}
			lo, ok := l.from.Lookup(k.topic, k.part)
			if !ok {
				return nil, brokerErr(fmt.Sprintf("list offsets of %s-%d", k.topic, k.part), kerr.UnknownTopicOrPartition)
			}
			if lo.Err != nil {
				return nil, brokerErr(fmt.Sprintf("list offsets of %s-%d", k.topic, k.part), lo.Err)
			}
			*l.dst = lo.Offset
		}
		if o, ok := committed.Lookup(k.topic, k.part); ok && o.Err == nil && o.At >= 0 {
			po.Committed = o.At
		}
		out = append(out, po)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Topic < out[j].Topic || out[i].Topic == out[j].Topic && out[i].Partition < out[j].Partition
	})
	return out, nil
}
