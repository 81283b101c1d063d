package server

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeConfigs answers DescribeConfigs v0-4 for topic resources
// (every topic config strata applies: the override, else the broker default
// through its synonym), this broker's resource (name node.id: every broker
// config, the dynamic ones of /config/brokers/<id> and <default> over the
// static ones) and the cluster default (name "": the dynamic configs of
// /config/brokers/<default>), as describe_broker_configs.go says. v0
// reports is_default; v1+ the source and, when asked, the synonyms (topic
// override, dynamic broker value, dynamic default, static broker value,
// built-in default); v3+ the type and, when asked, documentation.
func (s *Server) handleDescribeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	resp.Default()
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		want := func(name string) bool {
			if rr.ConfigNames == nil {
				return true
			}
			for _, n := range rr.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			overrides, ok := s.topicOverrides(rr.ResourceName)
			if !ok {
				code := kerr.UnknownTopicOrPartition.Code
				if validateTopicName(rr.ResourceName) != nil {
					code = kerr.InvalidTopicException.Code
				}
				res.ErrorCode, res.ErrorMessage = code, kmsg.StringPtr("unknown topic "+rr.ResourceName)
				break
			}
			for _, e := range s.topicConfigEntries(overrides) {
				if want(e.def.name) {
					res.Configs = append(res.Configs, describeTopicConfig(req, e))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(s.NodeID())) {
				res.ErrorCode = kerr.InvalidRequest.Code
				res.ErrorMessage = kmsg.StringPtr("unknown broker " + rr.ResourceName + ": this node is " + strconv.Itoa(int(s.NodeID())))
				break
			}
			configs, err := s.describeBrokerResource(req, rr.ResourceName == "", want)
			if err != nil {
				res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr("reading the dynamic broker configs failed")
				break
			}
			res.Configs = configs
		default:
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = kmsg.StringPtr("unsupported resource type " + strconv.Itoa(int(rr.ResourceType)))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

// topicConfigEntry is one applied topic config as DescribeConfigs and
// CreateTopics report it.
type topicConfigEntry struct {
	def            *configDef
	value          string
	source         kmsg.ConfigSource
	broker         string // the broker synonym's value
	brokerSource   kmsg.ConfigSource
	builtinDefault string // the synonym's built-in default
}

// topicConfigEntries reports every topic config strata applies for a topic
// with the given overrides: the value in effect (an override as its def
// parsed it, else the broker's through the synonym) and its source.
func (s *Server) topicConfigEntries(overrides map[string]string) []topicConfigEntry {
	eff, applied, _ := topicConfig(s.cfg, overrides, lenient, s.log)
	var out []topicConfigEntry
	for i := range topicConfigDefs {
		d := &topicConfigDefs[i]
		if !d.applied() {
			continue
		}
		e := topicConfigEntry{def: d, builtinDefault: brokerConfig(d.synonym).val.get(DefaultConfig())}
		e.broker, e.brokerSource = brokerValue(s.cfg, d.synonym)
		if applied[d.name] {
			e.value, e.source = d.val.get(eff), kmsg.ConfigSourceDynamicTopicConfig
		} else {
			e.value, e.source = e.broker, e.brokerSource
		}
		out = append(out, e)
	}
	return out
}

func describeTopicConfig(req *kmsg.DescribeConfigsRequest, e topicConfigEntry) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.ConfigType = e.def.name, e.def.typ
	c.Value, c.Source = kmsg.StringPtr(e.value), e.source
	c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
	if req.IncludeSynonyms && req.Version >= 1 {
		if e.source == kmsg.ConfigSourceDynamicTopicConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(e.def.name, e.value, e.source))
		}
		if e.brokerSource == kmsg.ConfigSourceStaticBrokerConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(e.def.synonym, e.broker, e.brokerSource))
		}
		c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(e.def.synonym, e.builtinDefault, kmsg.ConfigSourceDefaultConfig))
	}
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr(e.def.doc)
	}
	return c
}

func synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	sy.Name, sy.Value, sy.Source = name, kmsg.StringPtr(value), src
	return sy
}
