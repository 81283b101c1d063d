package tools

import (
	"context"
	"strings"
)

// listedTopicJSON is one topic of --list --json.
type listedTopicJSON struct {
	Topic             string `json:"topic"`
	Internal          bool   `json:"internal"`
	MarkedForDeletion bool   `json:"marked_for_deletion,omitempty"`
}

// list is --list: the names of the topics --topic and --exclude-internal
// allow, one per line ("T - marked for deletion" for a pending deletion, as
// Kafka's ZooKeeper listing says). Nothing at all when there are none.
func (r *topicsRun) list(ctx context.Context) error {
	topics, err := r.matchTopics(ctx)
	if err != nil {
		return err
	}
	if r.json {
		out := make([]listedTopicJSON, 0, len(topics))
		for _, t := range topics {
			out = append(out, listedTopicJSON{Topic: t.name, Internal: t.internal, MarkedForDeletion: t.markedForDeletion})
		}
		return writeOut(r.w, out)
	}
	return writeText(r.w, formatListing(topics))
}

// formatListing is --list's text: a name per line, "T - marked for
// deletion" for a pending deletion (Kafka's ZooKeeper listing).
func formatListing(topics []topicListing) string {
	var b strings.Builder
	for _, t := range topics {
		b.WriteString(t.name)
		if t.markedForDeletion {
			b.WriteString(" - marked for deletion")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
