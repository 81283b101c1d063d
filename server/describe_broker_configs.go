package server

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// DescribeConfigs of a broker resource, as Kafka's ConfigHelper answers it.
// The broker's own resource (its id) lists every broker config with the
// value in effect and the source of the first of its synonyms, in Kafka's
// order of precedence: DYNAMIC_BROKER_CONFIG (/config/brokers/<id>),
// DYNAMIC_DEFAULT_BROKER_CONFIG (/config/brokers/<default>),
// STATIC_BROKER_CONFIG (server.properties, --override), DEFAULT_CONFIG; a
// dynamic config without a static definition (the replication throttle
// rates) is listed only while it is set, as Kafka does. The cluster default
// (resource name "") lists the configs set in /config/brokers/<default>,
// with the synonyms below the per-broker one. Only the dynamic configs
// strata applies (dynamicBrokerConfigs) with a valid value are reported:
// others a znode may hold change nothing here. In single-node mode there
// are no dynamic broker configs.

// dynamicBrokerValues are the dynamic broker configs of this broker's id and
// of <default>.
type dynamicBrokerValues struct {
	broker, def map[string]string
}

// dynamicBrokerConfigValues reads the dynamic broker configs strata applies
// from ZooKeeper (the per-broker ones only when perBroker), keeping the
// valid ones as brokerConfigsChanged does.
func (s *Server) dynamicBrokerConfigValues(perBroker bool) (dynamicBrokerValues, error) {
	var dv dynamicBrokerValues
	if s.cl == nil {
		return dv, nil
	}
	read := func(entity string) (map[string]string, error) {
		cfg, err := s.cl.admin().EntityConfig(cluster.ConfigTypeBroker, entity)
		if err != nil {
			s.log.Error("reading dynamic broker configs", "broker", entity, "error", err)
			return nil, err
		}
		out := map[string]string{}
		for k, v := range cfg {
			if checkDynamicBrokerConfig(k, v) == nil {
				out[k] = v
			}
		}
		return out, nil
	}
	var err error
	if dv.def, err = read(defaultBrokerEntity); err != nil {
		return dv, err
	}
	if perBroker {
		dv.broker, err = read(strconv.Itoa(int(s.NodeID())))
	}
	return dv, err
}

// describeBrokerResource lists the configs of this broker (def false) or of
// the cluster default (def true) that want accepts.
func (s *Server) describeBrokerResource(req *kmsg.DescribeConfigsRequest, def bool, want func(string) bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	dv, err := s.dynamicBrokerConfigValues(!def)
	if err != nil {
		return nil, err
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for i := range brokerConfigDefs {
		d := &brokerConfigDefs[i]
		if !d.describedBroker() || !want(d.name) {
			continue
		}
		if _, set := dv.def[d.name]; def && !set {
			continue // the default resource lists what <default> sets
		}
		out = append(out, s.describeBrokerConfig(req, d.name, d, dv))
	}
	// Then the dynamic configs without a static definition, while set.
	for _, name := range dynamicBrokerConfigs {
		_, set := dv.def[name]
		if _, ok := dv.broker[name]; ok {
			set = true
		}
		if set && brokerConfig(name) == nil && want(name) {
			out = append(out, s.describeBrokerConfig(req, name, nil, dv))
		}
	}
	return out, nil
}

// brokerSynonyms are name's values from every source that sets it, in
// Kafka's order of precedence; d is its static definition (nil for none).
func (s *Server) brokerSynonyms(name string, d *configDef, dv dynamicBrokerValues) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if v, ok := dv.broker[name]; ok {
		syns = append(syns, synonym(name, v, kmsg.ConfigSourceDynamicBrokerConfig))
	}
	if v, ok := dv.def[name]; ok {
		syns = append(syns, synonym(name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig))
	}
	if d != nil {
		if v, src := brokerValue(s.cfg, name); src == kmsg.ConfigSourceStaticBrokerConfig {
			syns = append(syns, synonym(name, v, src))
		}
		syns = append(syns, synonym(name, d.val.get(DefaultConfig()), kmsg.ConfigSourceDefaultConfig))
	}
	return syns
}

// describeBrokerConfig is one broker config: the value and source of its
// first synonym, read-only unless it is dynamic.
func (s *Server) describeBrokerConfig(req *kmsg.DescribeConfigsRequest, name string, d *configDef, dv dynamicBrokerValues) kmsg.DescribeConfigsResponseResourceConfig {
	syns := s.brokerSynonyms(name, d, dv)
	dynamic := slices.Contains(dynamicBrokerConfigs, name)
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.Source, c.ReadOnly = name, syns[0].Value, syns[0].Source, !dynamic
	c.ConfigType = kmsg.ConfigTypeLong
	if d != nil {
		c.ConfigType = d.typ
	}
	c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
	if req.IncludeSynonyms && req.Version >= 1 {
		c.ConfigSynonyms = syns
	}
	if req.IncludeDocumentation {
		var doc string
		switch {
		case dynamic:
			doc = "replication throttle in bytes/s of the partitions named by the topics' throttled-replica lists (dynamic: /config/brokers/<id> over /config/brokers/<default>, set with AlterConfigs, strata configs --alter --entity-type brokers or strata reassign --throttle)"
		case d != nil:
			doc = d.doc
			if doc != "" {
				doc += "; "
			}
			doc += "broker setting " + name + " (static: set in server.properties or with --override)"
		}
		c.Documentation = kmsg.StringPtr(doc)
	}
	return c
}
