package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

func configsCommand() *cli.Command {
	return &cli.Command{
		Name:  "configs",
		Usage: "SCRAM credentials and client quotas of users and client ids, dynamic broker configs, as kafka-configs.sh --entity-type users|clients|brokers",
		UsageText: "strata configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name U --add-config 'SCRAM-SHA-256=[iterations=8192,password=P]'\n" +
			"   strata configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name U --delete-config SCRAM-SHA-512\n" +
			"   strata configs --bootstrap-server HOST:PORT --alter --entity-type clients --entity-name C --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'\n" +
			"   strata configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-default --add-config request_percentage=50\n" +
			"   strata configs --bootstrap-server HOST:PORT --alter --user U --client C --add-config producer_byte_rate=1024\n" +
			"   strata configs --bootstrap-server HOST:PORT --describe --entity-type users|clients [--entity-name N | --entity-default]\n" +
			"   strata configs --bootstrap-server HOST:PORT --alter --entity-type brokers (--entity-name ID | --entity-default) --add-config leader.replication.throttled.rate=10485760\n" +
			"   strata configs --bootstrap-server HOST:PORT --describe --entity-type brokers [--entity-name ID | --entity-default] [--all]",
		Description: `SCRAM: the client salts the password (PBKDF2 with a random salt, as
kafka-configs.sh does); the broker stores only the salted keys. Iterations:
4096-16384 (default 4096). Quotas (AlterClientQuotas, DescribeClientQuotas):
producer_byte_rate, consumer_byte_rate (bytes/s), request_percentage,
controller_mutation_rate, for a user, a client id, or a user and a client id
(--user/--client, or --user-defaults/--client-defaults for the defaults);
--entity-default names the entity type's default. --command-config FILE takes
Kafka client properties (security.protocol, ssl.*, sasl.mechanism,
sasl.jaas.config) to reach a TLS or SASL listener.

Brokers (cluster mode): the dynamic broker configs strata applies,
leader.replication.throttled.rate and follower.replication.throttled.rate
(bytes/s), of one broker (--entity-name ID) or of the cluster default
(--entity-default), in /config/brokers. --describe prints each with its
synonyms in order of precedence (DYNAMIC_BROKER_CONFIG,
DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG); --all
every broker config; with neither --entity-name nor --entity-default every
broker, then the default.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] (required)"},
			commandConfigFlag(),
			&cli.BoolFlag{Name: "alter"}, &cli.BoolFlag{Name: "describe"},
			&cli.StringFlag{Name: "entity-type", Usage: "users, clients or brokers"},
			&cli.StringFlag{Name: "entity-name"},
			&cli.BoolFlag{Name: "entity-default", Usage: "the entity type's default (quotas)"},
			&cli.StringFlag{Name: "user", Usage: "user entity (quotas; with --client: that user's client)"},
			&cli.StringFlag{Name: "client", Usage: "client-id entity (quotas)"},
			&cli.BoolFlag{Name: "user-defaults", Usage: "the default user (quotas)"},
			&cli.BoolFlag{Name: "client-defaults", Usage: "the default client id (quotas)"},
			&cli.BoolFlag{Name: "all", Usage: "brokers --describe: every config, not only the dynamic ones"},
			&cli.StringFlag{Name: "add-config", Usage: "MECHANISM=[iterations=N,password=P] or QUOTA=VALUE, comma separated"},
			&cli.StringFlag{Name: "delete-config", Usage: "MECHANISM or QUOTA, comma separated"},
		},
		Action: runConfigs,
	}
}

func runConfigs(c *cli.Context) error {
	if c.String("entity-type") == "brokers" {
		return runConfigsBrokers(c)
	}
	boot := c.String("bootstrap-server") + c.String("command-config")
	ent, err := configEntity(c)
	switch {
	case err != nil:
		return err
	case boot == "":
		return usageErr("give --bootstrap-server")
	case c.Bool("alter") == c.Bool("describe"):
		return usageErr("give one of --alter, --describe")
	case c.Bool("alter") && !ent.named():
		return usageErr("--alter needs --entity-name or --entity-default (or --user/--client)")
	}
	cl, err := kgoFromFlags(c, "strata-configs")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	w := c.App.Writer
	if c.Bool("describe") {
		if ent.scramUser() || (ent.userOnly() && !ent.userDef) {
			if err := describeScram(ctx, adm, w, ent); err != nil {
				return err
			}
		}
		return describeQuotas(ctx, adm, w, ent)
	}
	scram, quotas, err := splitConfigs(c.String("add-config"), c.String("delete-config"))
	if err != nil {
		return err
	}
	if len(scram.del)+len(scram.up)+len(quotas) == 0 {
		return usageErr("--alter needs --add-config or --delete-config")
	}
	if len(scram.del)+len(scram.up) > 0 {
		if !ent.scramUser() {
			return usageErr("SCRAM credentials belong to a named user (--entity-type users --entity-name U)")
		}
		if err := alterScram(ctx, adm, *ent.user, scram); err != nil {
			return err
		}
	}
	if len(quotas) > 0 {
		if err := alterQuotas(ctx, adm, ent, quotas); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "Completed updating config for %s.\n", ent)
	return nil
}

func describeScram(ctx context.Context, adm *kadm.Client, w io.Writer, ent configsEntity) error {
	var users []string
	if ent.user != nil {
		users = []string{*ent.user}
	}
	d, err := adm.DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return failErr(err)
	}
	for _, u := range d.Sorted() {
		if u.Err != nil {
			if ent.user != nil && errors.Is(u.Err, kerr.ResourceNotFound) {
				continue // a user with quotas only
			}
			return failErr(fmt.Errorf("user %s: %w", u.User, u.Err))
		}
		var parts []string
		for _, ci := range u.CredInfos {
			parts = append(parts, fmt.Sprintf("%s=iterations=%d", ci.Mechanism, ci.Iterations))
		}
		fmt.Fprintf(w, "SCRAM credential configs for user-principal '%s' are %s\n", u.User, strings.Join(parts, ", "))
	}
	return nil
}

// scramChanges are a --alter's SCRAM parts.
type scramChanges struct {
	del []kadm.DeleteSCRAM
	up  []kadm.UpsertSCRAM
}

// splitConfigs parses --add-config and --delete-config into SCRAM changes
// (for the user, filled in by alterScram) and quota operations.
func splitConfigs(add, del string) (scramChanges, []kadm.AlterClientQuotaOp, error) {
	var sc scramChanges
	var quotas []kadm.AlterClientQuotaOp
	for _, m := range splitNonEmpty(del) {
		if mech, ok := scramMech(m); ok {
			sc.del = append(sc.del, kadm.DeleteSCRAM{Mechanism: mech})
			continue
		}
		quotas = append(quotas, kadm.AlterClientQuotaOp{Key: m, Remove: true})
	}
	for add = strings.TrimSpace(add); add != ""; add = strings.TrimLeft(add, ", ") {
		name, rest, ok := strings.Cut(add, "=")
		if !ok {
			return sc, nil, usageErr("--add-config: want KEY=VALUE, got %q", add)
		}
		name = strings.TrimSpace(name)
		if mech, isScram := scramMech(name); isScram {
			end := strings.Index(rest, "]")
			if !strings.HasPrefix(rest, "[") || end < 0 {
				return sc, nil, usageErr("--add-config: want MECHANISM=[iterations=N,password=P]")
			}
			u := kadm.UpsertSCRAM{Mechanism: mech, Iterations: 4096}
			for _, kv := range strings.Split(rest[1:end], ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch strings.TrimSpace(k) {
				case "iterations":
					n, err := strconv.Atoi(v)
					if err != nil {
						return sc, nil, usageErr("--add-config: iterations %q", v)
					}
					u.Iterations = int32(n)
				case "password":
					u.Password = v
				default:
					return sc, nil, usageErr("--add-config: unknown key %q (iterations, password)", k)
				}
			}
			if u.Password == "" {
				return sc, nil, usageErr("--add-config: %s needs a password", name)
			}
			sc.up = append(sc.up, u)
			add = rest[end+1:]
			continue
		}
		val, next, _ := strings.Cut(rest, ",")
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return sc, nil, usageErr("--add-config: %s=%q is not a number", name, val)
		}
		quotas = append(quotas, kadm.AlterClientQuotaOp{Key: name, Value: f})
		add = next
	}
	return sc, quotas, nil
}

func alterScram(ctx context.Context, adm *kadm.Client, user string, sc scramChanges) error {
	for i := range sc.del {
		sc.del[i].User = user
	}
	for i := range sc.up {
		sc.up[i].User = user
	}
	res, err := adm.AlterUserSCRAMs(ctx, sc.del, sc.up)
	if err != nil {
		return failErr(err)
	}
	if err := res.Error(); err != nil {
		return failErr(err)
	}
	return nil
}

func scramMech(s string) (kadm.ScramMechanism, bool) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, true
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, true
	}
	return 0, false
}

func splitNonEmpty(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
