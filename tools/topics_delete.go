package tools

import (
	"context"
	"errors"
)

// deletedTopicJSON is one topic of --delete --json.
type deletedTopicJSON struct {
	Topic   string `json:"topic"`
	Deleted bool   `json:"deleted"`
	Error   string `json:"error,omitempty"`
}

// deleteTopics is --delete: DeleteTopics for every matching topic, in one
// request. Kafka prints nothing when it succeeds; neither does this
// (--json reports each topic).
func (r *topicsRun) deleteTopics(ctx context.Context) error {
	topics, err := r.matchTopics(ctx)
	if err != nil || len(topics) == 0 {
		if err == nil && r.json {
			return writeOut(r.w, []deletedTopicJSON{})
		}
		return err
	}
	names := listingNames(topics)
	results, err := r.backend.delete(ctx, names)
	if err != nil {
		return clusterErr("delete topics", err)
	}
	var problems []error
	out := make([]deletedTopicJSON, 0, len(names))
	for _, name := range names {
		terr, ok := results[name]
		if !ok {
			terr = errors.New("the broker's answer does not name the topic")
		}
		row := deletedTopicJSON{Topic: name, Deleted: terr == nil}
		if terr != nil {
			perr := clusterErr("delete topic "+name, terr)
			row.Error = perr.Error()
			problems = append(problems, perr)
		}
		out = append(out, row)
	}
	if r.json {
		if err := writeOut(r.w, out); err != nil {
			return err
		}
	}
	return firstProblem(r.errw, problems, len(names), "topics were not deleted")
}
