package tools

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// runConfigsBrokers is strata configs --entity-type brokers, as
// kafka-configs.sh: --describe lists a broker's dynamic configs (source
// DYNAMIC_BROKER_CONFIG; --all: every config) or, with --entity-default,
// the cluster default's (DYNAMIC_DEFAULT_BROKER_CONFIG), each with its
// synonyms; with neither, every broker and then the default. --alter sets
// (--add-config K=V,...) and deletes (--delete-config K,...) dynamic broker
// configs of a broker or the default with IncrementalAlterConfigs.
func runConfigsBrokers(c *cli.Context) error {
	name, def := c.String("entity-name"), c.Bool("entity-default")
	var id int32 = -1
	switch {
	case c.IsSet("user") || c.IsSet("client") || c.Bool("user-defaults") || c.Bool("client-defaults"):
		return usageErr("--user/--client do not apply to --entity-type brokers")
	case name != "" && def:
		return usageErr("give --entity-name or --entity-default, not both")
	case c.String("bootstrap-server")+c.String("command-config") == "":
		return usageErr("give --bootstrap-server")
	case c.Bool("alter") == c.Bool("describe"):
		return usageErr("give one of --alter, --describe")
	case c.Bool("alter") && name == "" && !def:
		return usageErr("--alter needs --entity-name BROKER_ID or --entity-default")
	case c.Bool("all") && c.Bool("alter"):
		return usageErr("--all goes with --describe")
	}
	if name != "" {
		n, err := strconv.ParseInt(name, 10, 32)
		if err != nil || n < 0 {
			return usageErr("--entity-name %q: a broker id is a non-negative integer", name)
		}
		id = int32(n)
	}
	var alters []kadm.AlterConfig
	if c.Bool("alter") {
		var err error
		if alters, err = brokerConfigAlters(c.String("add-config"), c.String("delete-config")); err != nil {
			return err
		}
	}
	cl, err := kgoFromFlags(c, "strata-configs")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	var ids []int32 // none: the default
	if id >= 0 {
		ids = []int32{id}
	}
	w := c.App.Writer
	if c.Bool("alter") {
		rs, err := adm.AlterBrokerConfigs(ctx, alters, ids...)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
					break
				}
			}
		}
		if err != nil {
			return failErr(err)
		}
		if id >= 0 {
			fmt.Fprintf(w, "Completed updating config for broker %d.\n", id)
		} else {
			fmt.Fprintln(w, "Completed updating default config for brokers in the cluster.")
		}
		return nil
	}
	if id < 0 && !def {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return failErr(err)
		}
		for _, b := range md.Brokers {
			ids = append(ids, b.NodeID)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, b := range ids {
			if err := describeBrokerEntity(ctx, adm, w, []int32{b}, c.Bool("all")); err != nil {
				return err
			}
		}
		ids = nil
	}
	return describeBrokerEntity(ctx, adm, w, ids, c.Bool("all"))
}

// brokerConfigAlters parses --add-config K=V,... and --delete-config K,...
func brokerConfigAlters(add, del string) ([]kadm.AlterConfig, error) {
	var out []kadm.AlterConfig
	for _, kv := range splitNonEmpty(add) {
		k, v, ok := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, usageErr("--add-config: want KEY=VALUE, got %q", kv)
		}
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsg.StringPtr(strings.TrimSpace(v))})
	}
	for _, k := range splitNonEmpty(del) {
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(out) == 0 {
		return nil, usageErr("--alter needs --add-config or --delete-config")
	}
	return out, nil
}

// describeBrokerEntity prints the configs of one broker (ids of one) or of
// the cluster default (no ids) as kafka-configs.sh --describe does.
func describeBrokerEntity(ctx context.Context, adm *kadm.Client, w io.Writer, ids []int32, all bool) error {
	rcs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		return failErr(err)
	}
	if len(rcs) != 1 {
		return failErr(fmt.Errorf("%d resources in the answer, want 1", len(rcs)))
	}
	rc := rcs[0]
	if rc.Err != nil {
		return failErr(fmt.Errorf("%w: %s", rc.Err, rc.ErrMessage))
	}
	keep := kmsg.ConfigSourceDynamicBrokerConfig
	head := "Dynamic configs for broker " + rc.Name + " are:"
	if len(ids) == 0 {
		keep, head = kmsg.ConfigSourceDynamicDefaultBrokerConfig, "Default configs for brokers in the cluster are:"
	}
	if all {
		head = "All configs for broker " + rc.Name + " are:"
	}
	fmt.Fprintln(w, head)
	val := func(v *string) string {
		if v == nil {
			return "null"
		}
		return *v
	}
	for _, c := range rc.Configs {
		if !all && c.Source != keep {
			continue
		}
		syns := make([]string, 0, len(c.Synonyms))
		for _, s := range c.Synonyms {
			syns = append(syns, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, val(s.Value)))
		}
		fmt.Fprintf(w, "  %s=%s sensitive=%v synonyms={%s}\n", c.Key, val(c.Value), c.Sensitive, strings.Join(syns, ", "))
	}
	return nil
}
