package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deleteGroup is --delete: DeleteGroups on each group's coordinator, of
// --group or of every listed group (--all-groups).
func (r *groupsRun) deleteGroup(ctx context.Context) error {
	names := []string{r.group}
	if r.c.Bool("all-groups") {
		var err error
		if names, err = r.listNames(ctx); err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintln(r.errw, "No consumer groups to delete.")
		}
	}
	if len(names) == 0 {
		if r.json {
			return writeJSON(r.w, []any{})
		}
		return nil
	}
	resps, err := r.adm.DeleteGroups(ctx, names...)
	if err != nil && len(resps) == 0 {
		return brokerErr("delete group "+strings.Join(names, ", "), err)
	}
	type deleted struct {
		Group   string `json:"group"`
		Deleted bool   `json:"deleted"`
		Error   string `json:"error,omitempty"`
	}
	var out []deleted
	var problems []error
	for _, name := range names {
		resp, ok := resps[name]
		var perr error
		switch {
		case !ok:
			perr = brokerErr("delete group "+name, err)
			if err == nil {
				perr = failErr(fmt.Errorf("delete group %s: the broker's answer does not name the group", name))
			}
		case errors.Is(resp.Err, kerr.NonEmptyGroup):
			perr = refused("consumer group '%s' still has active members and was not deleted (%v); stop its consumers first", name, resp.Err)
		case errors.Is(resp.Err, kerr.GroupIDNotFound):
			perr = refused("Consumer group '%s' does not exist (%v).", name, resp.Err)
		case resp.Err != nil:
			perr = brokerErr("delete group "+name, resp.Err)
		}
		d := deleted{Group: name, Deleted: perr == nil}
		if perr != nil {
			d.Error = perr.Error()
			problems = append(problems, perr)
		} else if !r.json {
			fmt.Fprintf(r.w, "Deleted consumer group '%s'.\n", name)
		}
		out = append(out, d)
	}
	if r.json {
		if len(names) == 1 && !r.c.Bool("all-groups") {
			if err := writeJSON(r.w, out[0]); err != nil {
				return failErr(err)
			}
		} else if err := writeJSON(r.w, out); err != nil {
			return failErr(err)
		}
	}
	switch {
	case len(problems) == 1:
		return problems[0]
	case len(problems) > 1:
		for _, p := range problems {
			fmt.Fprintf(r.errw, "Error: %v\n", p)
		}
		return refused("%d of %d groups were not deleted", len(problems), len(names))
	}
	return nil
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
