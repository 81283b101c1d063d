package server

import (
	"fmt"
	"maps"

	"github.com/stratalog/strata/segment"
)

// topicConfigs returns a copy of topic name's overrides (nil, false if the
// topic does not exist).
func (ts *topicStore) topicConfigs(name string) (map[string]string, bool) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	t := ts.topics[name]
	if t == nil {
		return nil, false
	}
	return maps.Clone(t.configs), true
}

// setConfigs replaces topic name's overrides with configs (AlterConfigs and,
// after merging, IncrementalAlterConfigs): names and values are checked,
// the topic table is rewritten, and the new settings are applied to the live
// logs (segment.*, retention.*, flush.* through Log.Reconfigure; the
// cleaner's settings by registering again; produce flags at once).
//
// Names and values are checked for the names in changed (all when nil).
func (ts *topicStore) setConfigs(name string, configs map[string]string, changed map[string]bool, validateOnly bool) error {
	if err := validateTopicConfigs(configs, changed); err != nil {
		return err
	}
	opts, err := ts.segmentOptions(configs)
	if err != nil {
		return err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return ErrClosed
	}
	t := ts.topics[name]
	if t == nil {
		return errUnknownTopic
	}
	probe := &topic{name: t.name, configs: configs}
	if err := ts.applyTopicConfigs(probe); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if len(configs) == 0 {
		configs = nil
	}
	if err := ts.persistWith(nil, map[string]map[string]string{name: configs}); err != nil {
		return fmt.Errorf("server: writing the topic table: %w", err)
	}
	t.configs = configs
	t.logAppendTime.Store(probe.logAppendTime.Load())
	t.compacted.Store(probe.compacted.Load())
	t.produce.Store(probe.produce.Load())
	for _, p := range t.parts {
		if sl, ok := p.log.(interface{ Reconfigure(segment.Options) error }); ok {
			if err := sl.Reconfigure(*opts); err != nil {
				ts.log.Error("applying topic configs to a live log", "topic", name, "partition", p.index, "error", err)
			}
		}
		ts.registerCleaner(t, p)
	}
	ts.log.Info("topic configs changed", "topic", name, "configs", configs)
	return nil
}
