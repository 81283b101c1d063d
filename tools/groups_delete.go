package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deleteGroup is --delete: DeleteGroups on the group's coordinator.
func (r *groupsRun) deleteGroup(ctx context.Context) error {
	resps, err := r.adm.DeleteGroups(ctx, r.group)
	if err != nil {
		return brokerErr("delete group "+r.group, err)
	}
	resp, ok := resps[r.group]
	switch {
	case !ok:
		return failErr(fmt.Errorf("delete group %s: the broker's answer does not name the group", r.group))
	case errors.Is(resp.Err, kerr.NonEmptyGroup):
		return refused("consumer group '%s' still has active members and was not deleted (%v); stop its consumers first", r.group, resp.Err)
	case errors.Is(resp.Err, kerr.GroupIDNotFound):
		return refused("Consumer group '%s' does not exist (%v).", r.group, resp.Err)
	case resp.Err != nil:
		return brokerErr("delete group "+r.group, resp.Err)
	}
	if r.json {
		return writeJSON(r.w, map[string]any{"group": r.group, "deleted": true})
	}
	_, err = fmt.Fprintf(r.w, "Deleted consumer group '%s'.\n", r.group)
	return err
}

// deletedOffsetJSON is one partition of --delete-offsets --json.
type deletedOffsetJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

// deleteOffsets is --delete-offsets: OffsetDelete for the --topic partitions.
// A topic given without partitions means all of its partitions.
func (r *groupsRun) deleteOffsets(ctx context.Context) error {
	var specs []topicSpec
	for _, t := range r.c.Generic("topic").(*multiString).vals {
		ts, err := parseTopicSpec(t)
		if err != nil {
			return err
		}
		specs = append(specs, ts)
	}
	parts, err := r.resolveTopics(ctx, specs)
	if err != nil {
		return err
	}
	var set kadm.TopicsSet
	for _, k := range parts {
		set.Add(k.topic, k.part)
	}
	resps, err := r.adm.DeleteOffsets(ctx, r.group, set)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return refused("Consumer group '%s' does not exist (%v).", r.group, err)
	case err != nil:
		return brokerErr("delete offsets of group "+r.group, err)
	}
	var rows []deletedOffsetJSON
	var failed error
	t := newTable("TOPIC", "PARTITION", "STATUS")
	for _, k := range parts {
		row := deletedOffsetJSON{Topic: k.topic, Partition: k.part}
		status := "Successful"
		perr, ok := resps.Lookup(k.topic, k.part)
		if !ok {
			perr = errors.New("missing from the broker's answer")
		}
		if perr != nil {
			failed = perr
			row.Error = perr.Error()
			status = "Error: " + perr.Error()
		}
		rows = append(rows, row)
		t.add(k.topic, strconv.Itoa(int(k.part)), status)
	}
	if r.json {
		if err := writeJSON(r.w, map[string]any{"group": r.group, "partitions": rows}); err != nil {
			return failErr(err)
		}
	} else if err := t.write(r.w); err != nil {
		return failErr(err)
	}
	if failed != nil {
		return brokerErr("delete offsets of group "+r.group, failed)
	}
	return nil
}
