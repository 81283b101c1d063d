package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteTopics answers DeleteTopics v0-6: topics by name (v0-5) or by
// name or topic id (v6). With delete.topic.enable=false every topic gets
// TOPIC_DELETION_DISABLED (INVALID_REQUEST below v3, as Kafka). A deleted
// topic's partition directories are renamed <topic>-<p>.<32 hex>-delete and
// removed after file.delete.delay.ms. __consumer_offsets, which the group
// coordinator holds, cannot be deleted (INVALID_REQUEST; Kafka's own
// kafka-topics refuses it too).
func (s *Server) handleDeleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	if s.cl != nil {
		return s.handleDeleteTopicsCluster(req)
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	resp.Default()
	items := deleteTopicsItems(req)
	seen := map[string]int{}
	for _, it := range items {
		if it.name != nil {
			seen[*it.name]++
		} else {
			seen["\x00id"+uuidString(it.id)]++
		}
	}
	for _, it := range items {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = it.name, it.id
		key := "\x00id" + uuidString(it.id)
		if it.name != nil {
			key = *it.name
		}
		code, msg := s.deleteTopic(req.Version, it.name, it.id, seen[key] > 1, &st)
		st.ErrorCode = code
		if code != 0 && req.Version >= 5 && msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) deleteTopic(version int16, name *string, id [16]byte, dup bool, st *kmsg.DeleteTopicsResponseTopic) (int16, string) {
	hasID := id != [16]byte{}
	switch {
	case dup:
		return kerr.InvalidRequest.Code, "topic named more than once in the request"
	case name != nil && hasID:
		return kerr.InvalidRequest.Code, "a topic may be named by name or by id, not both"
	case name == nil && !hasID:
		return kerr.InvalidRequest.Code, "neither a topic name nor a topic id"
	case !s.cfg.DeleteTopicEnable && version < 3:
		return kerr.InvalidRequest.Code, "topic deletion is disabled (delete.topic.enable=false)"
	case !s.cfg.DeleteTopicEnable:
		return kerr.TopicDeletionDisabled.Code, "topic deletion is disabled (delete.topic.enable=false)"
	}
	var t *topic
	if name != nil {
		t = s.topics.get(*name)
		if t == nil {
			return kerr.UnknownTopicOrPartition.Code, "unknown topic " + *name
		}
	} else {
		t = s.topics.topicByID(id)
		if t == nil {
			return kerr.UnknownTopicID.Code, "unknown topic id " + uuidString(id)
		}
		n := t.name
		st.Topic = &n
	}
	if t.name == OffsetsTopic {
		return kerr.InvalidRequest.Code, "the internal topic " + OffsetsTopic + " holds the groups' committed offsets and cannot be deleted"
	}
	_, err := s.topics.delete(t.name)
	switch {
	case errors.Is(err, errUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, "unknown topic " + t.name
	case errors.Is(err, ErrClosed):
		return kerr.NotController.Code, "broker shutting down"
	case err != nil && errors.Is(err, errDeletionPending):
		s.log.Error("deleting topic", "topic", t.name, "error", err)
		return kerr.UnknownServerError.Code, "deleting topic failed"
	case err != nil: // the topic is gone; a directory could not be renamed
		s.log.Error("deleting topic: partition directories", "topic", t.name, "error", err)
	}
	return 0, ""
}

// deleteTopicsItem is one topic a DeleteTopics names: by name (v0-5, or
// v6 with a name) or by topic id (v6, name null).
type deleteTopicsItem struct {
	name *string
	id   [16]byte
}

// deleteTopicsItems lists the topics req names, in order, from the field
// its version uses.
func deleteTopicsItems(req *kmsg.DeleteTopicsRequest) []deleteTopicsItem {
	var items []deleteTopicsItem
	if req.Version >= 6 {
		for _, rt := range req.Topics {
			items = append(items, deleteTopicsItem{rt.Topic, rt.TopicID})
		}
	} else {
		for i := range req.TopicNames {
			items = append(items, deleteTopicsItem{name: &req.TopicNames[i]})
		}
	}
	return items
}
