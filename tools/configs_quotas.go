package tools

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// configsEntity is what strata configs works on: a user, a client id, or
// both; has says the part is given, a nil name is its default.
type configsEntity struct {
	hasUser, hasClient bool
	user, client       *string
	userDef, clientDef bool // the part is the default (--entity-default, --user-defaults...)
}

// configEntity reads --entity-type/--entity-name/--entity-default, or
// Kafka's shortcuts --user/--client/--user-defaults/--client-defaults.
func configEntity(c *cli.Context) (configsEntity, error) {
	var e configsEntity
	typ, name, def := c.String("entity-type"), c.String("entity-name"), c.Bool("entity-default")
	short := c.IsSet("user") || c.IsSet("client") || c.Bool("user-defaults") || c.Bool("client-defaults")
	if name != "" && def {
		return e, usageErr("give --entity-name or --entity-default, not both")
	}
	switch {
	case typ != "" && short:
		return e, usageErr("give --entity-type or --user/--client, not both")
	case short:
		if c.IsSet("user") && c.Bool("user-defaults") || c.IsSet("client") && c.Bool("client-defaults") {
			return e, usageErr("give --user or --user-defaults (--client or --client-defaults), not both")
		}
		e.hasUser = c.IsSet("user") || c.Bool("user-defaults")
		e.hasClient = c.IsSet("client") || c.Bool("client-defaults")
		e.userDef, e.clientDef = c.Bool("user-defaults"), c.Bool("client-defaults")
		if c.IsSet("user") {
			u := c.String("user")
			e.user = &u
		}
		if c.IsSet("client") {
			cl := c.String("client")
			e.client = &cl
		}
		return e, nil
	}
	var n *string
	if name != "" {
		n = &name
	}
	switch typ {
	case "users":
		e.hasUser, e.user, e.userDef = true, n, def
	case "clients":
		e.hasClient, e.client, e.clientDef = true, n, def
	default:
		return e, usageErr("give --entity-type users, clients or brokers (topics: strata topics), or --user/--client")
	}
	return e, nil
}

// named says whether the entity is one entity (a name or the default for
// each part) rather than a filter; --describe takes a filter.
func (e configsEntity) named() bool {
	return (!e.hasUser || e.user != nil || e.userDef) && (!e.hasClient || e.client != nil || e.clientDef)
}

func (e configsEntity) userOnly() bool  { return e.hasUser && !e.hasClient }
func (e configsEntity) scramUser() bool { return e.userOnly() && e.user != nil }

func (e configsEntity) String() string {
	part := func(kind string, n *string) string {
		if n == nil {
			return "the default " + kind
		}
		return kind + " " + *n
	}
	var parts []string
	if e.hasUser {
		parts = append(parts, part("user", e.user))
	}
	if e.hasClient {
		parts = append(parts, part("client", e.client))
	}
	return strings.Join(parts, ", ")
}

func (e configsEntity) quotaEntity() kadm.ClientQuotaEntity {
	var out kadm.ClientQuotaEntity
	if e.hasUser {
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "user", Name: e.user})
	}
	if e.hasClient {
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: e.client})
	}
	return out
}

func alterQuotas(ctx context.Context, adm *kadm.Client, e configsEntity, ops []kadm.AlterClientQuotaOp) error {
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e.quotaEntity(), Ops: ops}})
	if err != nil {
		return failErr(err)
	}
	for _, r := range res {
		if r.Err != nil {
			return failErr(fmt.Errorf("quotas of %s: %w: %s", e, r.Err, r.ErrMessage))
		}
	}
	return nil
}

// describeQuotas prints the quota entities matching e as kafka-configs.sh
// does: "Quota configs for user-principal 'alice', client-id 'c1' are
// producer_byte_rate=1024.0".
func describeQuotas(ctx context.Context, adm *kadm.Client, w io.Writer, e configsEntity) error {
	var comps []kadm.DescribeClientQuotaComponent
	add := func(typ string, name *string, byDefault bool) {
		c := kadm.DescribeClientQuotaComponent{Type: typ}
		switch {
		case name != nil:
			c.MatchName, c.MatchType = name, kmsg.QuotasMatchTypeExact
		case byDefault:
			c.MatchType = kmsg.QuotasMatchTypeDefault
		default:
			c.MatchType = kmsg.QuotasMatchTypeAny
		}
		comps = append(comps, c)
	}
	if e.hasUser {
		add("user", e.user, e.userDef)
	}
	if e.hasClient {
		add("client-id", e.client, e.clientDef)
	}
	d, err := adm.DescribeClientQuotas(ctx, true, comps)
	if err != nil {
		return failErr(err)
	}
	lines := make([]string, 0, len(d))
	for _, q := range d {
		var who []string
		for _, c := range q.Entity {
			kind := map[string]string{"user": "user-principal", "client-id": "client-id"}[c.Type]
			if c.Name == nil {
				who = append(who, "the default "+kind)
			} else {
				who = append(who, fmt.Sprintf("%s '%s'", kind, *c.Name))
			}
		}
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, v.Key+"="+strconv.FormatFloat(v.Value, 'f', 1, 64))
		}
		sort.Strings(vals)
		lines = append(lines, fmt.Sprintf("Quota configs for %s are %s", strings.Join(who, ", "), strings.Join(vals, ",")))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	return nil
}
