package server

import (
	"errors"

	"github.com/stratalog/strata/cluster"
)

// topicConfigsChanged follows /config/changes (the member's config change
// listener): each topic's overrides are read again from ZooKeeper and
// applied to the live logs this broker hosts (segment options through
// Log.Reconfigure, the cleaner's registration, produce settings at once),
// as a single node applies AlterConfigs.
func (cl *clusterNode) topicConfigsChanged(topics []string) {
	for _, name := range topics {
		t := cl.loadTopicConfig(name)
		opts, err := segmentOptions(cl.s.topics.effective(t), cl.log)
		if err != nil {
			cl.log.Error("topic configs from ZooKeeper do not make log options", "topic", name, "error", err)
			continue
		}
		n := 0
		for _, p := range cl.rm.Partitions() {
			tp := p.TopicPartition()
			if tp.Topic != name {
				continue
			}
			l := p.Log()
			if err := l.Reconfigure(*opts); err != nil {
				cl.log.Error("applying topic configs to a live log", "topic", name, "partition", tp.Partition, "error", err)
			}
			cl.registerCleaner(t, tp, l)
			n++
		}
		cl.log.Info("topic configs changed", "topic", name, "configs", t.configs, "partitions_here", n)
	}
}

// topicOverrides is a topic's overrides: the topic table's on a single
// node, ZooKeeper's /config/topics/T in cluster mode; false when the topic
// does not exist (or, in cluster mode, cannot be read: logged).
func (s *Server) topicOverrides(name string) (map[string]string, bool) {
	if s.cl == nil {
		return s.topics.topicConfigs(name)
	}
	cfg, err := s.cl.readTopicOverrides(name)
	if err != nil {
		if !errors.Is(err, cluster.ErrUnknownTopic) {
			s.log.Error("reading topic configs from ZooKeeper", "topic", name, "error", err)
		}
		return nil, false
	}
	return cfg, true
}
