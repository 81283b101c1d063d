package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

// topicsCommand is "strata topics": Kafka's kafka-topics.sh. With
// --bootstrap-server it speaks the Kafka protocol, so it works against strata
// and any other Kafka-compatible broker; --zookeeper (Kafka 2.x's way) reads
// and writes the znodes (topics_zk.go).
func topicsCommand() *cli.Command {
	return &cli.Command{
		Name:  "topics",
		Usage: "create, list, describe, alter or delete topics (kafka-topics.sh)",
		UsageText: "strata topics --bootstrap-server HOST:PORT --create --topic T [--partitions P] [--replication-factor R]\n" +
			"        [--config k=v]... [--replica-assignment 1:2,2:3] [--if-not-exists] [--json]\n" +
			"   strata topics --bootstrap-server HOST:PORT --list [--topic REGEX] [--exclude-internal] [--json]\n" +
			"   strata topics --bootstrap-server HOST:PORT --describe [--topic REGEX] [--if-exists] [--exclude-internal]\n" +
			"        [[--under-replicated-partitions] [--unavailable-partitions] [--under-min-isr-partitions]\n" +
			"        [--at-min-isr-partitions] | --topics-with-overrides] [--json]\n" +
			"   strata topics --bootstrap-server HOST:PORT --alter --topic REGEX --partitions N [--replica-assignment ...] [--if-exists] [--json]\n" +
			"   strata topics --bootstrap-server HOST:PORT --delete --topic REGEX [--if-exists] [--json]",
		Description: `Kafka's kafka-topics.sh with Kafka's flags and output. Speaks the Kafka protocol
(Metadata, DescribeConfigs, ListPartitionReassignments where the broker has it,
CreateTopics, CreatePartitions, DeleteTopics), so it works against strata and any other
Kafka-compatible broker. With --zookeeper HOST:PORT[,HOST:PORT...][/chroot] instead it
reads and writes Kafka's znodes itself (Kafka 2.x's way): the live brokers from
/brokers/ids, topics from /brokers/topics, /config/topics and the partition state
znodes; the controller picks up what it writes. Exactly one action:

  --create    creates --topic (a name, not a pattern); --partitions and
              --replication-factor default to the cluster's; --replica-assignment
              lists each partition's brokers (1:2,2:3 is two partitions on brokers
              1,2 and 2,3) instead of both; --config k=v sets a topic config;
              --if-not-exists makes an existing topic no error
  --list      topic names, one per line
  --describe  per topic: "Topic: T  TopicId: ..  PartitionCount: P
              ReplicationFactor: R  Configs: k=v,.." (the configs not at their
              default), then one line per partition: leader ("none" if none),
              replicas and in-sync replicas. The report flags keep only the
              partitions that are under-replicated (fewer in-sync replicas than
              replicas), unavailable (no leader, or a leader that is not a live
              broker), under or at min.insync.replicas, and drop the topic lines;
              given together a partition shows if any applies.
              --topics-with-overrides shows only the topic lines of topics with
              configs not at their default
  --alter     grows --topic to --partitions partitions (never shrinks);
              --replica-assignment then lists every partition's brokers, the
              existing ones first
  --delete    deletes --topic

--topic is a regular expression matched against whole names, as in Kafka, except with
--create (commas mean "or"; write "a\.b" for a literal dot). Without --topic, --list and
--describe show every topic, internal ones unless --exclude-internal. A --topic that
matches nothing is an error unless --if-exists. --command-config FILE reads Kafka client
properties (bootstrap.servers, client.id; security settings other than PLAINTEXT are
refused for now). --json prints one JSON document instead of Kafka's text.

Exit status: 0 done, 1 a problem found (no such topic, or the broker refused: Kafka's
error name is printed, e.g. TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR), 2 usage
error or no broker reachable (or one without the request).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] of the broker(s) to talk to"},
			commandConfigFlag(),
			&cli.StringFlag{Name: "zookeeper", Usage: "HOST:PORT[,HOST:PORT...][/chroot] (Kafka 2.x's way: reads and writes the znodes)"},
			&cli.BoolFlag{Name: "create", Usage: "create a topic"},
			&cli.BoolFlag{Name: "list", Usage: "list the topics"},
			&cli.BoolFlag{Name: "describe", Usage: "describe topics: partitions, leaders, replicas, ISR, configs"},
			&cli.BoolFlag{Name: "alter", Usage: "add partitions to topics"},
			&cli.BoolFlag{Name: "delete", Usage: "delete topics"},
			&cli.StringFlag{Name: "topic", Usage: "the topic; a regular expression except with --create"},
			&cli.IntFlag{Name: "partitions", Usage: "partitions of the topic created, or the new count of --alter"},
			&cli.IntFlag{Name: "replication-factor", Usage: "replicas of each partition of the topic created"},
			&cli.StringFlag{Name: "replica-assignment", Usage: "brokers of each partition: 1:2,2:3 (partition 0 on 1,2; partition 1 on 2,3)"},
			&cli.GenericFlag{Name: "config", Value: &multiString{}, Usage: "a topic config k=v for --create; repeatable"},
			&cli.BoolFlag{Name: "if-exists", Usage: "--alter, --delete, --describe: no error if --topic matches nothing"},
			&cli.BoolFlag{Name: "if-not-exists", Usage: "--create: no error if the topic exists"},
			&cli.BoolFlag{Name: "exclude-internal", Usage: "--list, --describe: leave out internal topics"},
			&cli.BoolFlag{Name: "under-replicated-partitions", Usage: "--describe: only partitions with fewer in-sync replicas than replicas"},
			&cli.BoolFlag{Name: "unavailable-partitions", Usage: "--describe: only partitions without a live leader"},
			&cli.BoolFlag{Name: "under-min-isr-partitions", Usage: "--describe: only partitions with fewer in-sync replicas than min.insync.replicas"},
			&cli.BoolFlag{Name: "at-min-isr-partitions", Usage: "--describe: only partitions with exactly min.insync.replicas in-sync replicas"},
			&cli.BoolFlag{Name: "topics-with-overrides", Usage: "--describe: only topics with configs not at their default"},
			&cli.BoolFlag{Name: "json", Usage: "machine-readable output"},
			&cli.Int64Flag{Name: "timeout", Value: 30000, Usage: "milliseconds to wait for the brokers"},
		},
		Action: runTopics,
	}
}

// topicsRun is one invocation of strata topics.
type topicsRun struct {
	c       *cli.Context
	w       io.Writer // data
	errw    io.Writer // messages
	json    bool
	topic   string         // --topic as given
	filter  *regexp.Regexp // --topic as Kafka's IncludeList, nil without --topic
	backend topicsBackend
}

// topicsFlagActions names the actions each action-specific flag goes with
// (Kafka's TopicCommandOptions.checkInvalidArgs).
var topicsFlagActions = map[string]string{
	"partitions": "create alter", "replication-factor": "create", "replica-assignment": "create alter",
	"config": "create", "if-exists": "alter delete describe", "if-not-exists": "create",
	"exclude-internal": "list describe", "under-replicated-partitions": "describe",
	"unavailable-partitions": "describe", "under-min-isr-partitions": "describe",
	"at-min-isr-partitions": "describe", "topics-with-overrides": "describe",
}

// reportFlags are --describe's partition filters.
var reportFlags = []string{"under-replicated-partitions", "unavailable-partitions", "under-min-isr-partitions", "at-min-isr-partitions"}

// topicsAction checks the flag combination and returns the one action.
func topicsAction(c *cli.Context) (string, error) {
	var action string
	for _, a := range []string{"create", "list", "describe", "alter", "delete"} {
		if c.Bool(a) {
			if action != "" {
				return "", usageErr("--%s and --%s: give exactly one of --list, --describe, --create, --alter or --delete", action, a)
			}
			action = a
		}
	}
	if action == "" {
		return "", usageErr("give exactly one of --list, --describe, --create, --alter or --delete")
	}
	for _, flag := range sortedKeys(topicsFlagActions) {
		if actions := topicsFlagActions[flag]; c.IsSet(flag) && !strings.Contains(" "+actions+" ", " "+action+" ") {
			if flag == "config" && action == "alter" {
				return "", usageErr("--config does not go with --alter: topic configs are altered with IncrementalAlterConfigs (kafka-configs.sh), which strata topics does not send")
			}
			return "", usageErr("--%s does not go with --%s", flag, action)
		}
	}
	if c.Bool("topics-with-overrides") {
		for _, f := range reportFlags {
			if c.Bool(f) {
				return "", usageErr("--topics-with-overrides does not go with --%s", f)
			}
		}
	}
	if action != "list" && action != "describe" && c.String("topic") == "" {
		return "", usageErr("--%s needs --topic", action)
	}
	if action == "describe" && c.Bool("if-exists") && c.String("topic") == "" {
		return "", usageErr("--describe --if-exists needs --topic")
	}
	if action == "alter" && !c.IsSet("partitions") {
		return "", usageErr("--alter needs --partitions")
	}
	if action == "create" && c.IsSet("replica-assignment") && (c.IsSet("partitions") || c.IsSet("replication-factor")) {
		return "", usageErr("--replica-assignment does not go with --partitions or --replication-factor on --create: it gives both")
	}
	if c.String("zookeeper") != "" && c.String("bootstrap-server") != "" {
		return "", usageErr("Only one of --bootstrap-server or --zookeeper must be specified")
	}
	if c.String("zookeeper") != "" && c.String("command-config") != "" {
		return "", usageErr("--command-config goes with --bootstrap-server, not --zookeeper")
	}
	if action == "create" && c.String("zookeeper") != "" && !c.IsSet("replica-assignment") &&
		(!c.IsSet("partitions") || !c.IsSet("replication-factor")) {
		return "", usageErr("--create with --zookeeper needs --partitions and --replication-factor (or --replica-assignment)")
	}
	return action, nil
}

func runTopics(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("topics takes no arguments, got %q", c.Args().First())
	}
	action, err := topicsAction(c)
	if err != nil {
		return err
	}
	timeout := time.Duration(c.Int64("timeout")) * time.Millisecond
	if timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	r := &topicsRun{c: c, w: c.App.Writer, errw: c.App.ErrWriter, json: c.Bool("json"), topic: c.String("topic")}
	if r.topic != "" && action != "create" {
		if r.filter, err = topicFilter(r.topic); err != nil {
			return err
		}
	}
	// Parse what the action sends before connecting: a bad flag value is
	// a usage error whether or not a broker is up.
	var create newTopic
	var grow growRequest
	switch action {
	case "create":
		if create, err = parseCreate(c); err != nil {
			return err
		}
	case "alter":
		if grow, err = parseAlter(c); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	if r.backend, err = openTopicsBackend(ctx, c, action, timeout, r.errw); err != nil {
		return err
	}
	defer r.backend.close()
	switch action {
	case "create":
		return r.create(ctx, create)
	case "list":
		return r.list(ctx)
	case "describe":
		return r.describe(ctx)
	case "alter":
		return r.alter(ctx, grow)
	default:
		return r.deleteTopics(ctx)
	}
}

// openTopicsBackend connects to the cluster the flags name.
func openTopicsBackend(ctx context.Context, c *cli.Context, action string, timeout time.Duration, errw io.Writer) (topicsBackend, error) {
	if zk := c.String("zookeeper"); zk != "" {
		return openZooKeeperBackend(zk, timeout)
	}
	cfg, err := clientFromFlags(c, "strata-topics")
	if err != nil {
		return nil, err
	}
	return dialAdmin(ctx, cfg, action, timeout)
}

// splitServers splits a comma-separated server list, dropping blanks.
func splitServers(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// topicFilter is --topic as Kafka's IncludeList reads it: surrounding
// quotes and blanks dropped, commas meaning "or", the whole name matched.
func topicFilter(raw string) (*regexp.Regexp, error) {
	re := strings.TrimSpace(raw)
	re = strings.ReplaceAll(re, ",", "|")
	re = strings.ReplaceAll(re, " ", "")
	re = strings.TrimLeft(re, `"'`)
	re = strings.TrimRight(re, `"'`)
	f, err := regexp.Compile("^(?:" + re + ")$")
	if err != nil {
		return nil, usageErr("--topic %s is an invalid regex: %v", re, err)
	}
	return f, nil
}

// matchTopics lists the topics and keeps those --topic and
// --exclude-internal allow, sorted by name. A --topic that matches nothing
// is an error (exit 1) unless --if-exists, as Kafka's ensureTopicExists.
func (r *topicsRun) matchTopics(ctx context.Context) ([]topicListing, error) {
	all, err := r.backend.list(ctx)
	if err != nil {
		return nil, clusterErr("list topics", err)
	}
	exclude := r.c.Bool("exclude-internal")
	var out []topicListing
	for _, t := range all {
		if exclude && t.internal {
			continue
		}
		if r.filter != nil && !r.filter.MatchString(t.name) {
			continue
		}
		out = append(out, t)
	}
	if len(out) == 0 && r.topic != "" && !r.c.Bool("if-exists") {
		return nil, refused("Topic '%s' does not exist as expected", r.topic)
	}
	return out, nil
}

func listingNames(ts []topicListing) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}

// writeOut prints v as one JSON document.
func writeOut(w io.Writer, v any) error {
	if err := writeJSON(w, v); err != nil {
		return failErr(err)
	}
	return nil
}

// writeText prints s as it is.
func writeText(w io.Writer, s string) error {
	if _, err := io.WriteString(w, s); err != nil {
		return failErr(err)
	}
	return nil
}

// firstProblem is nil for no problems, the problem itself for one, and for
// several prints each on errw and returns a count (exit 1).
func firstProblem(errw io.Writer, problems []error, total int, what string) error {
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	code := ExitProblems
	for _, p := range problems {
		fmt.Fprintf(errw, "Error: %v\n", p)
		var ee *exitError
		if errors.As(p, &ee) {
			code = max(code, ee.code)
		}
	}
	return &exitError{code: code, err: fmt.Errorf("%d of %d %s", len(problems), total, what)}
}

// clusterErr is brokerErr keeping the whole error text: a refusal by the
// cluster (Kafka's error, with the broker's message when it sent one)
// exits 1, anything else 2.
func clusterErr(what string, err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) && !isShardErr(err) {
		return &exitError{code: ExitProblems, err: fmt.Errorf("%s: %w", what, err)}
	}
	return brokerErr(what, err)
}

// reportTopics ends a per-topic action (--alter, --delete) from the
// cluster's answer per topic: row makes each topic's --json row from the
// topic's error (nil: done; else the clusterErr of action+name), a topic
// the answer does not name failing; the rows are written with --json, and
// the problems end as firstProblem says (what: "topics were not ...").
func (r *topicsRun) reportTopics(names []string, results map[string]error, action, what string, row func(name string, err error) any) error {
	var problems []error
	out := make([]any, 0, len(names))
	for _, name := range names {
		terr, ok := results[name]
		if !ok {
			terr = errors.New("the broker's answer does not name the topic")
		}
		var perr error
		if terr != nil {
			perr = clusterErr(action+name, terr)
			problems = append(problems, perr)
		}
		out = append(out, row(name, perr))
	}
	if r.json {
		if err := writeOut(r.w, out); err != nil {
			return err
		}
	}
	return firstProblem(r.errw, problems, len(names), what)
}

// errText is err's text, "" for nil (a --json row's omitted error).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
