package server

import (
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAlterConfigs answers AlterConfigs v0-2: a topic resource's overrides
// are replaced by exactly the configs given (those left out return to the
// broker default), checked, persisted in the topic table and applied to the
// live logs. Broker configs are static (INVALID_REQUEST) but for the
// dynamic ones of cluster mode (api_alter_broker_configs.go).
func (s *Server) handleAlterConfigs(req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resp.Default()
	seen := map[[2]string]int{}
	for _, rr := range req.Resources {
		seen[[2]string{strconv.Itoa(int(rr.ResourceType)), rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		code, msg := s.alterConfigs(req, &rr, seen[[2]string{strconv.Itoa(int(rr.ResourceType)), rr.ResourceName}] > 1)
		res.ErrorCode = code
		if code != 0 {
			res.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (s *Server) alterConfigs(req *kmsg.AlterConfigsRequest, rr *kmsg.AlterConfigsRequestResource, dup bool) (int16, string) {
	if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
		return s.alterBrokerResource(rr.ResourceName, dup, req.ValidateOnly, replaceBrokerConfigs(rr))
	}
	if code, msg := s.checkAlterResource(rr.ResourceType, rr.ResourceName, dup); code != 0 {
		return code, msg
	}
	configs := map[string]string{}
	for _, c := range rr.Configs {
		if _, ok := configs[c.Name]; ok {
			return kerr.InvalidRequest.Code, "config " + c.Name + " given more than once"
		}
		if c.Value == nil {
			return kerr.InvalidRequest.Code, "null value not supported for " + c.Name
		}
		configs[c.Name] = *c.Value
	}
	return s.setTopicConfigs(rr.ResourceName, configs, nil, req.ValidateOnly)
}

// checkAlterResource vets the resource of an alter-configs request.
func (s *Server) checkAlterResource(typ kmsg.ConfigResourceType, name string, dup bool) (int16, string) {
	switch {
	case dup:
		return kerr.InvalidRequest.Code, "resource named more than once in the request"
	case typ == kmsg.ConfigResourceTypeBroker:
		return kerr.InvalidRequest.Code, "broker configs are static in strata: set them in server.properties or with --override"
	case typ != kmsg.ConfigResourceTypeTopic:
		return kerr.InvalidRequest.Code, "unsupported resource type " + strconv.Itoa(int(typ))
	case validateTopicName(name) != nil:
		return kerr.InvalidTopicException.Code, "invalid topic name " + name
	}
	return 0, ""
}

// setTopicConfigs applies new overrides and maps the error to Kafka's code.
func (s *Server) setTopicConfigs(name string, configs map[string]string, changed map[string]bool, validateOnly bool) (int16, string) {
	var err error
	if s.cl != nil {
		err = s.cl.changeTopicConfig(name, configs, changed, validateOnly)
	} else {
		err = s.topics.setConfigs(name, configs, changed, validateOnly)
	}
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, errUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, "unknown topic " + name
	case errors.Is(err, ErrConfig):
		return kerr.InvalidConfig.Code, err.Error()
	case errors.Is(err, ErrClosed):
		return kerr.NotController.Code, "broker shutting down"
	default:
		s.log.Error("altering topic configs", "topic", name, "error", err)
		return kerr.UnknownServerError.Code, "altering configs failed"
	}
}
