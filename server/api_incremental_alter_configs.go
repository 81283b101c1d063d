package server

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleIncrementalAlterConfigs answers IncrementalAlterConfigs v0-1 for
// topic resources: SET, DELETE (back to the broker default), and APPEND /
// SUBTRACT on list configs (cleanup.policy), applied to the topic's current
// overrides, then checked, persisted and applied as AlterConfigs does; in
// cluster mode, SET and DELETE of the dynamic broker configs too.
func (s *Server) handleIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.Default()
	seen := map[[2]string]int{}
	for _, rr := range req.Resources {
		seen[[2]string{strconv.Itoa(int(rr.ResourceType)), rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		code, msg := s.incrementalAlter(req, &rr, seen[[2]string{strconv.Itoa(int(rr.ResourceType)), rr.ResourceName}] > 1)
		res.ErrorCode = code
		if code != 0 {
			res.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (s *Server) incrementalAlter(req *kmsg.IncrementalAlterConfigsRequest, rr *kmsg.IncrementalAlterConfigsRequestResource, dup bool) (int16, string) {
	if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
		return s.alterBrokerResource(rr.ResourceName, dup, req.ValidateOnly, editBrokerConfigs(rr))
	}
	if code, msg := s.checkAlterResource(rr.ResourceType, rr.ResourceName, dup); code != 0 {
		return code, msg
	}
	configs, ok := s.topicOverrides(rr.ResourceName)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, "unknown topic " + rr.ResourceName
	}
	if configs == nil {
		configs = map[string]string{}
	}
	names := map[string]bool{}
	for _, c := range rr.Configs {
		if names[c.Name] {
			return kerr.InvalidRequest.Code, "config " + c.Name + " given more than once"
		}
		names[c.Name] = true
		if !knownTopicConfig(c.Name) {
			return kerr.InvalidConfig.Code, "unknown topic config name " + c.Name
		}
		d := topicConfigDef(c.Name)
		if c.Value == nil && c.Op != kmsg.IncrementalAlterConfigOpDelete {
			return kerr.InvalidRequest.Code, "null value not supported for " + c.Name
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			configs[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(configs, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if d == nil || d.typ != kmsg.ConfigTypeList {
				return kerr.InvalidConfig.Code, "APPEND and SUBTRACT apply only to list configs, not " + c.Name
			}
			cur, ok := configs[c.Name]
			if !ok {
				cur, _ = brokerValue(s.cfg, d.synonym)
			}
			configs[c.Name] = editList(cur, *c.Value, c.Op == kmsg.IncrementalAlterConfigOpAppend)
		default:
			return kerr.InvalidRequest.Code, "unknown operation " + strconv.Itoa(int(c.Op)) + " for " + c.Name
		}
	}
	return s.setTopicConfigs(rr.ResourceName, configs, names, req.ValidateOnly)
}

// editList appends the comma-separated items of v to list cur (skipping
// those present) or subtracts them.
func editList(cur, v string, appendItems bool) string {
	var items []string
	has := map[string]bool{}
	for _, it := range strings.Split(cur, ",") {
		if it = strings.TrimSpace(it); it != "" && !has[it] {
			items, has[it] = append(items, it), true
		}
	}
	for _, it := range strings.Split(v, ",") {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		if appendItems && !has[it] {
			items, has[it] = append(items, it), true
		}
		if !appendItems && has[it] {
			delete(has, it)
			out := items[:0]
			for _, x := range items {
				if x != it {
					out = append(out, x)
				}
			}
			items = out
		}
	}
	return strings.Join(items, ",")
}
