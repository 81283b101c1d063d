package server

import (
	"fmt"
	"log/slog"
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

// strictAll makes every override's check count (CreateTopics, AlterConfigs).
func strictAll(string) bool { return true }

// lenient makes no override's check count (the topic table at start).
func lenient(string) bool { return false }

// topicConfig is a topic's effective configuration: a copy of base (the
// broker's Config) with the overrides stored through topicConfigDefs, so a
// topic config and its broker synonym fill the same field and mean the
// same. An override whose check fails is an error when strict(name) says
// so (values a request sets); otherwise it is logged and left out, the
// broker's value standing (values an older strata, which checked less,
// kept in the topic table). applied lists the overrides in effect.
func topicConfig(base *Config, overrides map[string]string, strict func(string) bool, log *slog.Logger) (eff *Config, applied map[string]bool, err error) {
	c := *base
	applied = map[string]bool{}
	for _, k := range sortedKeys(overrides) {
		v := overrides[k]
		d := topicConfigDef(k)
		if d == nil {
			if strict(k) {
				return nil, nil, fmt.Errorf("%w: unknown topic config name %q", ErrConfig, k)
			}
			log.Warn("ignoring an unknown topic config kept in the topic table", "config", k, "value", v)
			continue
		}
		if err := d.val.set(&c, v); err != nil {
			if strict(k) {
				return nil, nil, fmt.Errorf("%w: invalid value %q for %s: %v", ErrConfig, v, k, err)
			}
			log.Warn("ignoring a stored topic config that fails Kafka's check; using the broker's", "config", k, "value", v, "broker", brokerDefault(base, d), "err", err)
			continue
		}
		applied[k] = true
	}
	if err := checkLogConfig(&c); err != nil {
		if strict("min.compaction.lag.ms") || strict("max.compaction.lag.ms") {
			return nil, nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		log.Warn("ignoring stored compaction lags that contradict each other; using the broker's", "err", err)
		c.MinCompactionLagMs, c.MaxCompactionLagMs = base.MinCompactionLagMs, base.MaxCompactionLagMs
		delete(applied, "min.compaction.lag.ms")
		delete(applied, "max.compaction.lag.ms")
	}
	return &c, applied, nil
}

// brokerDefault is the broker's value of topic config d ("" for a stored
// one).
func brokerDefault(base *Config, d *configDef) string {
	if d.synonym == "" {
		return ""
	}
	v, _ := brokerValue(base, d.synonym)
	return v
}

// segmentOptions are the log options of a topic's effective config c.
// Zeros are Kafka's (retention.ms=0 deletes at once), and any negative
// retention.bytes means no limit, as in Kafka.
func segmentOptions(c *Config, log *slog.Logger) (*segment.Options, error) {
	o := (&segment.Options{
		SegmentBytes:   c.SegmentBytes,
		SegmentMs:      c.SegmentMs,
		RetentionMs:    c.RetentionMs,
		RetentionBytes: max(c.RetentionBytes, -1),
		FlushMessages:  c.FlushMessages,
		FlushMs:        c.FlushMs,
		Preallocate:    c.Preallocate,
		ExplicitZeros:  true,
		Logger:         log,
	}).EnsureDefaults()
	if m := c.metrics; m != nil {
		o.OnFlush = m.LogFlush.Observe
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return o, nil
}

// segmentOptions are the log options for a topic with the given overrides,
// all checked.
func (ts *topicStore) segmentOptions(configs map[string]string) (*segment.Options, error) {
	c, _, err := topicConfig(ts.cfg, configs, strictAll, ts.log)
	if err != nil {
		return nil, err
	}
	return segmentOptions(c, ts.log)
}

// applyTopicConfigs resolves t's effective config (strict as in
// topicConfig) and sets t's produce flags and settings from it.
func (ts *topicStore) applyTopicConfigs(t *topic, strict func(string) bool) error {
	c, _, err := topicConfig(ts.cfg, t.configs, strict, ts.log)
	if err != nil {
		return err
	}
	if _, err := segmentOptions(c, ts.log); err != nil {
		return err
	}
	compact, err := parseCleanupPolicy(c.CleanupPolicy)
	if err != nil { // checked by its def
		return fmt.Errorf("%w: cleanup.policy %w", ErrConfig, err)
	}
	t.eff.Store(c)
	t.logAppendTime.Store(c.TimestampType == "LogAppendTime")
	t.compacted.Store(compact)
	t.produce.Store(produceSettingsOf(c))
	return nil
}

// effective is t's effective config (the broker's for a topic built
// without applyTopicConfigs).
func (ts *topicStore) effective(t *topic) *Config {
	if c := t.eff.Load(); c != nil {
		return c
	}
	return ts.cfg
}

// setConfigs replaces topic name's overrides with configs (AlterConfigs and,
// after merging, IncrementalAlterConfigs): names and values are checked,
// the topic table is rewritten, and the new settings are applied to the live
// logs (segment.*, retention.*, flush.* through Log.Reconfigure; the
// cleaner's settings by registering again; produce flags at once).
//
// Names and values are checked for the names in changed (all when nil);
// others kept in the table that fail their check stay ignored, as at start.
func (ts *topicStore) setConfigs(name string, configs map[string]string, changed map[string]bool, validateOnly bool) error {
	if err := validateTopicConfigs(configs, changed); err != nil {
		return err
	}
	strict := strictAll
	if changed != nil {
		strict = func(k string) bool { return changed[k] }
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
	if err := ts.applyTopicConfigs(probe, strict); err != nil {
		return err
	}
	opts, err := segmentOptions(probe.eff.Load(), ts.log)
	if err != nil {
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
	t.eff.Store(probe.eff.Load())
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
