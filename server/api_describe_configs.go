package server

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeConfigs answers DescribeConfigs v0-4 for topic resources
// (every topic config strata applies: the override, else the broker default
// through its synonym) and this broker's resource (name "" or node.id; the
// static broker configs, all read-only). v0 reports is_default; v1+ the
// source and, when asked, the synonyms (topic override, static broker value,
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
			overrides, ok := s.topics.topicConfigs(rr.ResourceName)
			if !ok {
				code := kerr.UnknownTopicOrPartition.Code
				if validateTopicName(rr.ResourceName) != nil {
					code = kerr.InvalidTopicException.Code
				}
				res.ErrorCode, res.ErrorMessage = code, kmsg.StringPtr("unknown topic "+rr.ResourceName)
				break
			}
			for _, d := range topicConfigDefs {
				if want(d.name) {
					res.Configs = append(res.Configs, s.describeTopicConfig(req, &d, overrides))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(s.cfg.NodeID)) {
				res.ErrorCode = kerr.InvalidRequest.Code
				res.ErrorMessage = kmsg.StringPtr("unknown broker " + rr.ResourceName + ": this node is " + strconv.Itoa(int(s.cfg.NodeID)))
				break
			}
			for _, d := range brokerConfigDefs {
				if want(d.name) {
					res.Configs = append(res.Configs, s.describeBrokerConfig(req, &d))
				}
			}
		default:
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = kmsg.StringPtr("unsupported resource type " + strconv.Itoa(int(rr.ResourceType)))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (s *Server) describeTopicConfig(req *kmsg.DescribeConfigsRequest, d *configDef, overrides map[string]string) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.ConfigType = d.name, d.typ
	bv, bsrc := brokerValue(s.cfg, d.synonym)
	bdef := brokerConfig(d.synonym).value(DefaultConfig())
	if v, ok := overrides[d.name]; ok {
		c.Value, c.Source = kmsg.StringPtr(v), kmsg.ConfigSourceDynamicTopicConfig
	} else {
		c.Value, c.Source = kmsg.StringPtr(bv), bsrc
	}
	c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
	if req.IncludeSynonyms && req.Version >= 1 {
		if v, ok := overrides[d.name]; ok {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.name, v, kmsg.ConfigSourceDynamicTopicConfig))
		}
		if bsrc == kmsg.ConfigSourceStaticBrokerConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.synonym, bv, bsrc))
		}
		c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.synonym, bdef, kmsg.ConfigSourceDefaultConfig))
	}
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr(d.doc)
	}
	return c
}

func (s *Server) describeBrokerConfig(req *kmsg.DescribeConfigsRequest, d *brokerConfigDef) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v, src := brokerValue(s.cfg, d.name)
	c.Name, c.Value, c.Source, c.ConfigType, c.ReadOnly = d.name, kmsg.StringPtr(v), src, d.typ, true
	c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
	if req.IncludeSynonyms && req.Version >= 1 {
		if src == kmsg.ConfigSourceStaticBrokerConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.name, v, src))
		}
		c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.name, d.value(DefaultConfig()), kmsg.ConfigSourceDefaultConfig))
	}
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr("broker setting " + d.name + " (static: set in server.properties or with --override)")
	}
	return c
}

func synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	sy.Name, sy.Value, sy.Source = name, kmsg.StringPtr(value), src
	return sy
}
