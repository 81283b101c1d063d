package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/security"
)

func aclsCommand() *cli.Command {
	return &cli.Command{
		Name:  "acls",
		Usage: "add, remove and list ACLs (CreateAcls, DeleteAcls, DescribeAcls), as kafka-acls.sh",
		UsageText: "strata acls --bootstrap-server HOST:PORT --add (--allow-principal P | --deny-principal P)... [--allow-host H | --deny-host H]\n" +
			"       --operation OP... (--topic T | --group G | --transactional-id X | --cluster)... [--resource-pattern-type literal|prefixed]\n" +
			"   strata acls --bootstrap-server HOST:PORT --remove [the same selectors; absent ones match everything]\n" +
			"   strata acls --bootstrap-server HOST:PORT --list [--topic T | --group G | --cluster] [--principal P] [--resource-pattern-type any|match|literal|prefixed]",
		Description: `Talks to any broker with authorizer.class.name set. Operations are Kafka's:
Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
AlterConfigs, IdempotentWrite, All. Principals are Type:name (User:alice, User:*).
The host defaults to * (every address). The connection's principal must be allowed to Alter (add,
remove) or Describe (list) the cluster: a super user through --command-config FILE
(Kafka client properties: security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config),
or a PLAINTEXT listener on loopback with super.users=User:ANONYMOUS.

Examples:
   strata acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice --operation Read --operation Write --topic orders
   strata acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice --operation Read --topic logs- --resource-pattern-type prefixed
   strata acls --bootstrap-server 127.0.0.1:9092 --list --topic orders
   strata acls --bootstrap-server 127.0.0.1:9092 --remove --allow-principal User:alice --topic orders`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] (required)"},
			commandConfigFlag(),
			&cli.BoolFlag{Name: "add"}, &cli.BoolFlag{Name: "remove"}, &cli.BoolFlag{Name: "list"},
			&cli.StringSliceFlag{Name: "allow-principal"}, &cli.StringSliceFlag{Name: "deny-principal"},
			&cli.StringFlag{Name: "principal", Usage: "--list: only this principal's"},
			&cli.StringSliceFlag{Name: "allow-host"}, &cli.StringSliceFlag{Name: "deny-host"},
			&cli.StringSliceFlag{Name: "operation"},
			&cli.StringSliceFlag{Name: "topic"}, &cli.StringSliceFlag{Name: "group"}, &cli.StringSliceFlag{Name: "transactional-id"},
			&cli.BoolFlag{Name: "cluster"},
			&cli.StringFlag{Name: "resource-pattern-type", Usage: "literal (default for --add), prefixed, any (default for --list and --remove) or match"},
		},
		Action: runACLs,
	}
}

type aclResource struct {
	rt   kmsg.ACLResourceType
	name string
}

func runACLs(c *cli.Context) error {
	boot := c.String("bootstrap-server") + c.String("command-config")
	verbs := 0
	for _, v := range []string{"add", "remove", "list"} {
		if c.Bool(v) {
			verbs++
		}
	}
	if boot == "" || verbs != 1 {
		return usageErr("give --bootstrap-server and one of --add, --remove, --list")
	}
	var res []aclResource
	for _, t := range c.StringSlice("topic") {
		res = append(res, aclResource{kmsg.ACLResourceTypeTopic, t})
	}
	for _, g := range c.StringSlice("group") {
		res = append(res, aclResource{kmsg.ACLResourceTypeGroup, g})
	}
	for _, x := range c.StringSlice("transactional-id") {
		res = append(res, aclResource{kmsg.ACLResourceTypeTransactionalId, x})
	}
	if c.Bool("cluster") {
		res = append(res, aclResource{kmsg.ACLResourceTypeCluster, security.ClusterName})
	}
	var ops []kmsg.ACLOperation
	for _, o := range c.StringSlice("operation") {
		op, ok := security.ParseOperation(o)
		if !ok {
			return usageErr("unknown --operation %q", o)
		}
		ops = append(ops, kmsg.ACLOperation(op))
	}
	pt := kmsg.ACLResourcePatternTypeAny
	if c.Bool("add") {
		pt = kmsg.ACLResourcePatternTypeLiteral
	}
	if v := c.String("resource-pattern-type"); v != "" {
		var ok bool
		if pt, ok = map[string]kmsg.ACLResourcePatternType{"literal": kmsg.ACLResourcePatternTypeLiteral, "prefixed": kmsg.ACLResourcePatternTypePrefixed,
			"any": kmsg.ACLResourcePatternTypeAny, "match": kmsg.ACLResourcePatternTypeMatch}[strings.ToLower(v)]; !ok {
			return usageErr("--resource-pattern-type must be literal, prefixed, any or match")
		}
	}
	type entry struct {
		principal, host string
		perm            kmsg.ACLPermissionType
	}
	var entries []entry
	hosts := func(name string) []string {
		if h := c.StringSlice(name); len(h) > 0 {
			return h
		}
		return []string{"*"}
	}
	for _, p := range c.StringSlice("allow-principal") {
		for _, h := range hosts("allow-host") {
			entries = append(entries, entry{p, h, kmsg.ACLPermissionTypeAllow})
		}
	}
	for _, p := range c.StringSlice("deny-principal") {
		for _, h := range hosts("deny-host") {
			entries = append(entries, entry{p, h, kmsg.ACLPermissionTypeDeny})
		}
	}
	cl, err := kgoFromFlags(c, "strata-acls")
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	w := c.App.Writer
	switch {
	case c.Bool("add"):
		if len(entries) == 0 || len(ops) == 0 || len(res) == 0 {
			return usageErr("--add needs a principal, an --operation and a resource")
		}
		req := kmsg.NewPtrCreateACLsRequest()
		for _, r := range res {
			for _, e := range entries {
				for _, op := range ops {
					cr := kmsg.NewCreateACLsRequestCreation()
					cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = r.rt, r.name, pt
					cr.Principal, cr.Host, cr.Operation, cr.PermissionType = e.principal, e.host, op, e.perm
					req.Creations = append(req.Creations, cr)
				}
			}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return failErr(err)
		}
		for i, r := range resp.Results {
			cr := req.Creations[i]
			if err := aclErr(r.ErrorCode, r.ErrorMessage); err != nil {
				return failErr(fmt.Errorf("%s %s %s on %s %s: %w", cr.Principal, cr.PermissionType, cr.Operation, cr.ResourceType, cr.ResourceName, err))
			}
			fmt.Fprintf(w, "added: %s %s %s from %s on %s:%s:%s\n", cr.Principal, cr.PermissionType, cr.Operation, cr.Host, cr.ResourceType, cr.ResourcePatternType, cr.ResourceName)
		}
	case c.Bool("remove"):
		req := kmsg.NewPtrDeleteACLsRequest()
		if len(res) == 0 {
			res = []aclResource{{kmsg.ACLResourceTypeAny, ""}}
		}
		if len(entries) == 0 {
			entries = []entry{{"", "", kmsg.ACLPermissionTypeAny}}
		}
		if len(ops) == 0 {
			ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
		}
		for _, r := range res {
			for _, e := range entries {
				for _, op := range ops {
					f := kmsg.NewDeleteACLsRequestFilter()
					f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = r.rt, pt, op, e.perm
					if r.name != "" {
						f.ResourceName = kmsg.StringPtr(r.name)
					}
					if e.principal != "" {
						f.Principal, f.Host = kmsg.StringPtr(e.principal), kmsg.StringPtr(e.host)
					}
					req.Filters = append(req.Filters, f)
				}
			}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return failErr(err)
		}
		for _, r := range resp.Results {
			if err := aclErr(r.ErrorCode, r.ErrorMessage); err != nil {
				return failErr(err)
			}
			for _, m := range r.MatchingACLs {
				fmt.Fprintf(w, "removed: %s %s %s from %s on %s:%s:%s\n", m.Principal, m.PermissionType, m.Operation, m.Host, m.ResourceType, m.ResourcePatternType, m.ResourceName)
			}
		}
	default:
		if len(res) == 0 {
			res = []aclResource{{kmsg.ACLResourceTypeAny, ""}}
		}
		for _, r := range res {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = r.rt, pt, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			if r.name != "" {
				req.ResourceName = kmsg.StringPtr(r.name)
			}
			if p := c.String("principal"); p != "" {
				req.Principal = kmsg.StringPtr(p)
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return failErr(err)
			}
			if err := aclErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
				return failErr(err)
			}
			for _, rr := range resp.Resources {
				fmt.Fprintf(w, "ACLs for resource `%s:%s:%s`:\n", rr.ResourceType, rr.ResourcePatternType, rr.ResourceName)
				for _, a := range rr.ACLs {
					fmt.Fprintf(w, "  %s has %s permission for %s from host %s\n", a.Principal, a.PermissionType, a.Operation, a.Host)
				}
			}
		}
	}
	return nil
}

func aclErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}
