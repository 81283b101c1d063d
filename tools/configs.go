package tools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func configsCommand() *cli.Command {
	return &cli.Command{
		Name:  "configs",
		Usage: "SCRAM credentials of users (AlterUserScramCredentials, DescribeUserScramCredentials), as kafka-configs.sh --entity-type users",
		UsageText: "strata configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name U --add-config 'SCRAM-SHA-256=[iterations=8192,password=P]'\n" +
			"   strata configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name U --delete-config SCRAM-SHA-512\n" +
			"   strata configs --bootstrap-server HOST:PORT --describe --entity-type users [--entity-name U]",
		Description: `The client salts the password (PBKDF2 with a random salt, as kafka-configs.sh
does); the broker stores only the salted keys. Iterations: 4096-16384 (default
4096). --command-config FILE takes Kafka client properties (security.protocol,
ssl.*, sasl.mechanism, sasl.jaas.config) to reach a TLS or SASL listener.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] (required)"},
			commandConfigFlag(),
			&cli.BoolFlag{Name: "alter"}, &cli.BoolFlag{Name: "describe"},
			&cli.StringFlag{Name: "entity-type", Usage: "users"},
			&cli.StringFlag{Name: "entity-name"},
			&cli.StringFlag{Name: "add-config", Usage: "MECHANISM=[iterations=N,password=P][,MECHANISM=[...]]"},
			&cli.StringFlag{Name: "delete-config", Usage: "MECHANISM[,MECHANISM]"},
		},
		Action: runConfigs,
	}
}

func runConfigs(c *cli.Context) error {
	boot, user := c.String("bootstrap-server")+c.String("command-config"), c.String("entity-name")
	switch {
	case boot == "" || c.String("entity-type") != "users":
		return usageErr("give --bootstrap-server and --entity-type users (the only entity type strata configs handles; topics: strata topics)")
	case c.Bool("alter") == c.Bool("describe"):
		return usageErr("give one of --alter, --describe")
	case c.Bool("alter") && user == "":
		return usageErr("--alter needs --entity-name")
	}
	cfg, err := clientFromFlags(c, "strata-configs")
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(cfg.kgoOpts()...)
	if err != nil {
		return failErr(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	w := c.App.Writer
	if c.Bool("describe") {
		var users []string
		if user != "" {
			users = []string{user}
		}
		d, err := adm.DescribeUserSCRAMs(ctx, users...)
		if err != nil {
			return failErr(err)
		}
		for _, u := range d.Sorted() {
			if u.Err != nil {
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
	var del []kadm.DeleteSCRAM
	var up []kadm.UpsertSCRAM
	for _, m := range splitNonEmpty(c.String("delete-config")) {
		mech, ok := scramMech(m)
		if !ok {
			return usageErr("--delete-config %q: SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
		del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: mech})
	}
	add := c.String("add-config")
	for add != "" {
		name, rest, ok := strings.Cut(add, "=[")
		end := strings.Index(rest, "]")
		if !ok || end < 0 {
			return usageErr("--add-config: want MECHANISM=[iterations=N,password=P]")
		}
		mech, ok := scramMech(strings.TrimSpace(name))
		if !ok {
			return usageErr("--add-config: %q is not SCRAM-SHA-256 or SCRAM-SHA-512", name)
		}
		u := kadm.UpsertSCRAM{User: user, Mechanism: mech, Iterations: 4096}
		for _, kv := range strings.Split(rest[:end], ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch strings.TrimSpace(k) {
			case "iterations":
				n, err := strconv.Atoi(v)
				if err != nil {
					return usageErr("--add-config: iterations %q", v)
				}
				u.Iterations = int32(n)
			case "password":
				u.Password = v
			default:
				return usageErr("--add-config: unknown key %q (iterations, password)", k)
			}
		}
		if u.Password == "" {
			return usageErr("--add-config: %s needs a password", name)
		}
		up = append(up, u)
		add = strings.TrimLeft(rest[end+1:], ", ")
	}
	if len(del)+len(up) == 0 {
		return usageErr("--alter needs --add-config or --delete-config")
	}
	res, err := adm.AlterUserSCRAMs(ctx, del, up)
	if err != nil {
		return failErr(err)
	}
	if err := res.Error(); err != nil {
		return failErr(err)
	}
	fmt.Fprintf(w, "Completed updating config for user %s.\n", user)
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
