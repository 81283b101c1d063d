package tools

import "context"

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
	return r.reportTopics(names, results, "delete topic ", "topics were not deleted", func(name string, err error) any {
		return deletedTopicJSON{Topic: name, Deleted: err == nil, Error: errText(err)}
	})
}
