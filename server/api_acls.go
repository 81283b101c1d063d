package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/security"
)

// The ACL APIs (DescribeAcls 29, CreateAcls 30, DeleteAcls 31, v0-3).
// Without authorizer.class.name they answer SECURITY_DISABLED, as Kafka.
// v0 requests carry no pattern type: literal.

func aclFilter(version int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) security.Filter {
	if version == 0 {
		pt = kmsg.ACLResourcePatternTypeLiteral
	}
	return security.Filter{ResourceType: security.ResourceType(rt), Name: name, Pattern: security.PatternType(pt),
		Principal: principal, Host: host, Operation: security.Operation(op), Permission: security.Permission(perm)}
}

func (s *Server) handleDescribeAcls(r *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !s.acls.enabled() {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		return resp
	}
	f := aclFilter(r.Version, r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
	if err := f.CheckFilter(); err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp
	}
	idx := map[[3]string]int{}
	for _, b := range s.acls.auth.Load().Bindings() {
		if !f.Matches(b) {
			continue
		}
		k := [3]string{b.ResourceType.String(), b.Pattern.String(), b.Name}
		i, ok := idx[k]
		if !ok {
			i = len(resp.Resources)
			idx[k] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp
}

// handleCreateAcls checks each creation (Kafka's checks: a concrete
// resource type, pattern, operation valid for the type, permission and a
// Type:name principal) and stores the valid ones together.
func (s *Server) handleCreateAcls(r *kmsg.CreateACLsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	var add []security.Binding
	var at []int
	for _, c := range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		pt := c.ResourcePatternType
		if r.Version == 0 {
			pt = kmsg.ACLResourcePatternTypeLiteral
		}
		b := security.Binding{ResourceType: security.ResourceType(c.ResourceType), Name: c.ResourceName, Pattern: security.PatternType(pt),
			Principal: c.Principal, Host: c.Host, Operation: security.Operation(c.Operation), Permission: security.Permission(c.PermissionType)}
		switch err := b.Check(); {
		case !s.acls.enabled():
			res.ErrorCode = kerr.SecurityDisabled.Code
		case err != nil:
			msg := err.Error()
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, &msg
		default:
			add = append(add, b)
			at = append(at, len(resp.Results))
		}
		resp.Results = append(resp.Results, res)
	}
	if len(add) > 0 {
		if _, err := s.acls.change(add, nil); err != nil {
			s.log.Error("storing ACLs", "error", err)
			msg := err.Error()
			for _, i := range at {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
			}
		} else {
			s.log.Info("ACLs created", "bindings", add)
		}
	}
	return resp
}

// handleDeleteAcls removes the bindings each filter matches and lists
// them.
func (s *Server) handleDeleteAcls(r *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	var filters []security.Filter
	var at []int
	for _, f := range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		sf := aclFilter(r.Version, f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		switch err := sf.CheckFilter(); {
		case !s.acls.enabled():
			res.ErrorCode = kerr.SecurityDisabled.Code
		case err != nil:
			msg := err.Error()
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, &msg
		default:
			filters = append(filters, sf)
			at = append(at, len(resp.Results))
		}
		resp.Results = append(resp.Results, res)
	}
	if len(filters) == 0 {
		return resp
	}
	removed, err := s.acls.change(nil, filters)
	for j, i := range at {
		if err != nil {
			msg := err.Error()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
			continue
		}
		for _, b := range removed[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	if err == nil {
		s.log.Info("ACLs deleted", "bindings", removed)
	}
	return resp
}
