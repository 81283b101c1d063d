package server

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Entity types of DescribeClientQuotas and AlterClientQuotas.
const (
	quotaTypeUser     = "user"
	quotaTypeClientID = "client-id"
	quotaTypeIP       = "ip"
)

// quotaEntityOf reads an AlterClientQuotas entity: user and/or client-id,
// each once, a null name for the default. ip entities
// (connection_creation_rate) are not supported.
func quotaEntityOf(parts []kmsg.AlterClientQuotasRequestEntryEntity) (quotaEntity, error) {
	var e quotaEntity
	if len(parts) == 0 {
		return e, fmt.Errorf("%w: empty entity", ErrQuota)
	}
	for _, p := range parts {
		name := quotaDefault
		if p.Name != nil {
			name = *p.Name
		}
		switch p.Type {
		case quotaTypeUser:
			if e.hasUser {
				return e, fmt.Errorf("%w: duplicate user component in entity", ErrQuota)
			}
			e.user, e.hasUser = name, true
		case quotaTypeClientID:
			if e.hasClient {
				return e, fmt.Errorf("%w: duplicate client-id component in entity", ErrQuota)
			}
			e.client, e.hasClient = name, true
		case quotaTypeIP:
			return e, fmt.Errorf("%w: ip quotas (connection_creation_rate) are not supported by strata", ErrQuota)
		default:
			return e, fmt.Errorf("%w: unknown entity type %q", ErrQuota, p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return e, fmt.Errorf("%w: empty %s name (a null name is the default)", ErrQuota, p.Type)
		}
	}
	return e, nil
}

// checkQuotaOp validates one operation as Kafka does: a known key, and a
// value that is a finite number, above 0, and whole for the byte rates.
// (Kafka refuses unknown keys and fractional LONGs; strata refuses values
// at or below 0 too, which Kafka's rate math cannot honour.)
func checkQuotaOp(op kmsg.AlterClientQuotasRequestEntryOp) error {
	if !isQuotaKey(op.Key) {
		return fmt.Errorf("%w: invalid configuration key %s", ErrQuota, op.Key)
	}
	if op.Remove {
		return nil
	}
	v := op.Value
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%w: %s must be a finite number", ErrQuota, op.Key)
	case v <= 0:
		return fmt.Errorf("%w: %s must be greater than 0, got %v", ErrQuota, op.Key, v)
	case quotaKeyIsLong(op.Key) && (v != math.Trunc(v) || v > math.MaxInt64):
		return fmt.Errorf("%w: %s must be a whole number (a Long), got %v", ErrQuota, op.Key, v)
	}
	return nil
}

// handleAlterClientQuotas answers AlterClientQuotas (v0-1): each entry is
// validated (INVALID_REQUEST for a malformed entity, an unknown key, a bad
// value or a key both set and removed) and, unless validate_only, stored.
func (s *Server) handleAlterClientQuotas(r *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, en := range r.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range en.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			res.Entity = append(res.Entity, re)
		}
		err := s.alterClientQuotas(en, r.ValidateOnly)
		if err != nil {
			code := kerr.InvalidRequest.Code
			if !errors.Is(err, ErrQuota) {
				code = kerr.UnknownServerError.Code
				s.log.Error("altering client quotas", "error", err)
			}
			msg := err.Error()
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Entries = append(resp.Entries, res)
	}
	return resp
}

func (s *Server) alterClientQuotas(en kmsg.AlterClientQuotasRequestEntry, validateOnly bool) error {
	e, err := quotaEntityOf(en.Entity)
	if err != nil {
		return err
	}
	set := map[string]float64{}
	var remove []string
	seen := map[string]bool{}
	for _, op := range en.Ops {
		if err := checkQuotaOp(op); err != nil {
			return err
		}
		if seen[op.Key] {
			return fmt.Errorf("%w: duplicate quota key %s", ErrQuota, op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			remove = append(remove, op.Key)
		} else {
			set[op.Key] = op.Value
		}
	}
	if validateOnly {
		return nil
	}
	return s.quotas.alter(e, set, remove)
}

// handleDescribeClientQuotas answers DescribeClientQuotas (v0-1): the
// entities matching every filter component (exact name, the default, or
// any), with strict limiting them to the filtered entity types; their
// quota keys only. A filter naming a type twice, an unknown type or an
// exact match without a name is INVALID_REQUEST.
func (s *Server) handleDescribeClientQuotas(r *kmsg.DescribeClientQuotasRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp
	}
	var wantUser, wantClient bool
	for _, c := range r.Components {
		switch c.EntityType {
		case quotaTypeUser:
			if wantUser {
				return fail("duplicate user filter component")
			}
			wantUser = true
		case quotaTypeClientID:
			if wantClient {
				return fail("duplicate client-id filter component")
			}
			wantClient = true
		case quotaTypeIP:
			return resp // no ip quotas are stored
		default:
			return fail(fmt.Sprintf("unknown entity type %q", c.EntityType))
		}
		switch c.MatchType {
		case 0:
			if c.Match == nil {
				return fail("an exact match needs a name")
			}
		case 1, 2:
		default:
			return fail(fmt.Sprintf("unknown match type %d", c.MatchType))
		}
	}
	matches := func(e quotaEntity) bool {
		if r.Strict && (e.hasUser != wantUser || e.hasClient != wantClient) {
			return false
		}
		for _, c := range r.Components {
			has, name := e.hasUser, e.user
			if c.EntityType == quotaTypeClientID {
				has, name = e.hasClient, e.client
			}
			if !has {
				return false
			}
			switch c.MatchType {
			case 0:
				if name == quotaDefault || name != *c.Match {
					return false
				}
			case 1:
				if name != quotaDefault {
					return false
				}
			}
		}
		return true
	}
	all := s.quotas.q.snapshot()
	ents := make([]quotaEntity, 0, len(all))
	for e := range all {
		if matches(e) {
			ents = append(ents, e)
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].path() < ents[j].path() })
	name := func(n string) *string {
		if n == quotaDefault {
			return nil
		}
		return &n
	}
	for _, e := range ents {
		en := kmsg.NewDescribeClientQuotasResponseEntry()
		if e.hasUser {
			p := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			p.Type, p.Name = quotaTypeUser, name(e.user)
			en.Entity = append(en.Entity, p)
		}
		if e.hasClient {
			p := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			p.Type, p.Name = quotaTypeClientID, name(e.client)
			en.Entity = append(en.Entity, p)
		}
		cfg := all[e]
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, cfg[k]
			en.Values = append(en.Values, v)
		}
		resp.Entries = append(resp.Entries, en)
	}
	return resp
}
