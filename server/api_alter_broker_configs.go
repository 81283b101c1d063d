package server

import (
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// alterBrokerResource is AlterConfigs and IncrementalAlterConfigs for a
// broker resource: in cluster mode the dynamic broker configs
// (dynamicBrokerConfigs: the replication throttle rates) of a broker id or,
// for the name "", of <default>, in /config/brokers (Kafka's
// AdminZkClient.changeBrokerConfig); edit turns the entity's current
// configs into the new ones. Every other broker config is static.
func (s *Server) alterBrokerResource(name string, dup, validateOnly bool, edit func(cur map[string]string) (int16, string)) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, "resource named more than once in the request"
	}
	if s.cl == nil {
		return kerr.InvalidRequest.Code, "broker configs are static in strata: set them in server.properties or with --override"
	}
	entity, err := brokerEntity(name)
	if err != nil {
		return kerr.InvalidRequest.Code, err.Error()
	}
	cur, err := s.cl.admin().EntityConfig(cluster.ConfigTypeBroker, entity)
	if err != nil {
		s.log.Error("reading dynamic broker configs", "broker", entity, "error", err)
		return kerr.UnknownServerError.Code, "reading broker configs failed"
	}
	if code, msg := edit(cur); code != 0 {
		return code, msg
	}
	err = s.cl.changeBrokerConfig(entity, cur, validateOnly)
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, ErrConfig):
		return kerr.InvalidConfig.Code, err.Error()
	case errors.Is(err, ErrClosed):
		return kerr.NotController.Code, "broker shutting down"
	}
	s.log.Error("altering broker configs", "broker", entity, "error", err)
	return kerr.UnknownServerError.Code, "altering broker configs failed"
}

// replaceBrokerConfigs is AlterConfigs' edit: exactly the given configs.
func replaceBrokerConfigs(rr *kmsg.AlterConfigsRequestResource) func(map[string]string) (int16, string) {
	return func(cur map[string]string) (int16, string) {
		clear(cur)
		for _, c := range rr.Configs {
			if _, ok := cur[c.Name]; ok {
				return kerr.InvalidRequest.Code, "config " + c.Name + " given more than once"
			}
			if c.Value == nil {
				return kerr.InvalidRequest.Code, "null value not supported for " + c.Name
			}
			cur[c.Name] = *c.Value
		}
		return 0, ""
	}
}

// editBrokerConfigs is IncrementalAlterConfigs' edit: SET and DELETE (the
// dynamic broker configs are not lists).
func editBrokerConfigs(rr *kmsg.IncrementalAlterConfigsRequestResource) func(map[string]string) (int16, string) {
	return func(cur map[string]string) (int16, string) {
		names := map[string]bool{}
		for _, c := range rr.Configs {
			if names[c.Name] {
				return kerr.InvalidRequest.Code, "config " + c.Name + " given more than once"
			}
			names[c.Name] = true
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if c.Value == nil {
					return kerr.InvalidRequest.Code, "null value not supported for " + c.Name
				}
				cur[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, c.Name)
			default:
				return kerr.InvalidConfig.Code, "operation " + strconv.Itoa(int(c.Op)) + " does not apply to broker config " + c.Name
			}
		}
		return 0, ""
	}
}
