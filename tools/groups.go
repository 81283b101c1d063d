package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// groupsCommand is "strata groups": Kafka's kafka-consumer-groups.sh over the
// Kafka protocol, so it works against any Kafka-compatible broker.
func groupsCommand() *cli.Command {
	return &cli.Command{
		Name:  "groups",
		Usage: "list, describe, reset or delete consumer groups on a running broker (kafka-consumer-groups.sh)",
		UsageText: "strata groups --bootstrap-server HOST:PORT --list [--state] [--json]\n" +
			"   strata groups --bootstrap-server HOST:PORT --describe (--group G | --all-groups) [--offsets | --members [--verbose] | --state] [--json]\n" +
			"   strata groups --bootstrap-server HOST:PORT --reset-offsets --group G (--topic T[:P,P] ... | --all-topics)\n" +
			"        (--to-earliest | --to-latest | --to-current | --to-datetime YYYY-MM-DDTHH:mm:SS.sss |\n" +
			"         --by-duration PnDTnHnMnS | --to-offset N | --shift-by N | --from-file CSV)\n" +
			"        [--dry-run | --execute] [--json | --export]\n" +
			"   strata groups --bootstrap-server HOST:PORT --delete (--group G | --all-groups) [--json]\n" +
			"   strata groups --bootstrap-server HOST:PORT --delete-offsets --group G --topic T[:P,P] ... [--json]",
		Description: `Speaks the Kafka protocol (FindCoordinator, ListGroups, DescribeGroups, OffsetFetch,
ListOffsets, OffsetCommit, DeleteGroups, OffsetDelete), so it works against strata and
any other Kafka-compatible broker. Exactly one action:

  --list            group ids, one per line (--state adds each group's state)
  --describe        per partition: committed offset, log end offset, lag and the member
                    that owns it ('-' where unknown); --members lists the members,
                    --state the group's coordinator, assignor, state and size
  --reset-offsets   plans new committed offsets for the group and prints them; only
                    --execute commits them. Refused unless the group is inactive (no
                    members). New offsets are clamped to [log start, log end] as Kafka
                    does. --to-datetime without a zone is local time; the offset is the
                    first record at or after it (the log end if none); --by-duration
                    is --to-datetime of now minus the duration. --to-current keeps the
                    committed offset (the log end where there is none). --export prints
                    the plan as CSV lines topic,partition,offset, which --from-file reads
                    back: --to-current --all-topics --export saves the offsets first.
                    --shift-by needs a committed offset on every partition.
                    --all-topics means every topic the group has committed offsets for.
  --delete          deletes the group and its offsets (refused while it has members)
  --delete-offsets  deletes the group's committed offsets of --topic

Exit status: 0 done, 1 the broker refused or the group is not in a state that allows
it (does not exist, has members, ...), 2 usage error or the broker cannot be reached
(or does not support the request). Broker errors are printed with Kafka's error name.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] of the broker(s) to talk to (required)"},
			commandConfigFlag(),
			&cli.BoolFlag{Name: "list", Usage: "list all consumer groups"},
			&cli.BoolFlag{Name: "describe", Usage: "describe a group: offsets and lag per partition"},
			&cli.BoolFlag{Name: "reset-offsets", Usage: "reset the group's committed offsets (dry run unless --execute)"},
			&cli.BoolFlag{Name: "delete", Usage: "delete a group"},
			&cli.BoolFlag{Name: "delete-offsets", Usage: "delete a group's committed offsets of --topic"},
			&cli.StringFlag{Name: "group", Usage: "the consumer group"},
			&cli.BoolFlag{Name: "all-groups", Usage: "describe or delete every group the brokers list"},
			&cli.GenericFlag{Name: "topic", Value: &multiString{}, Usage: "topic, or topic:partition,partition; repeatable"},
			&cli.BoolFlag{Name: "all-topics", Usage: "reset: every topic the group has committed offsets for"},
			&cli.BoolFlag{Name: "to-earliest", Usage: "reset to the log start offset"},
			&cli.BoolFlag{Name: "to-latest", Usage: "reset to the log end offset"},
			&cli.BoolFlag{Name: "to-current", Usage: "reset to the committed offset (the log end where none)"},
			&cli.StringFlag{Name: "to-datetime", Usage: "reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[zone]"},
			&cli.StringFlag{Name: "by-duration", Usage: "reset to the first offset at or after now minus PnDTnHnMnS (or 90m)"},
			&cli.Int64Flag{Name: "to-offset", Usage: "reset to offset N"},
			&cli.Int64Flag{Name: "shift-by", Usage: "move the committed offset by N (negative: back)"},
			&cli.StringFlag{Name: "from-file", Usage: "reset to the offsets of a CSV file (topic,partition,offset lines, as --export prints)"},
			&cli.BoolFlag{Name: "export", Usage: "reset: print the plan as CSV (topic,partition,offset) for --from-file"},
			&cli.BoolFlag{Name: "dry-run", Usage: "reset: only print the plan (the default)"},
			&cli.BoolFlag{Name: "execute", Usage: "reset: commit the planned offsets"},
			&cli.BoolFlag{Name: "offsets", Usage: "describe: offsets and lag per partition (the default view)"},
			&cli.BoolFlag{Name: "members", Usage: "describe: the group's members"},
			&cli.BoolFlag{Name: "state", Usage: "describe: the group's state; list: add each group's state"},
			&cli.BoolFlag{Name: "verbose", Usage: "describe --members: each member's assignment too"},
			&cli.BoolFlag{Name: "json", Usage: "machine-readable output"},
			&cli.Int64Flag{Name: "timeout", Value: 5000, Usage: "milliseconds to wait for the broker"},
		},
		Action: runGroups,
	}
}

// multiString is a repeatable string flag that keeps commas (topic:0,1).
type multiString struct{ vals []string }

func (m *multiString) Set(s string) error { m.vals = append(m.vals, s); return nil }
func (m *multiString) String() string {
	if m == nil {
		return ""
	}
	return strings.Join(m.vals, " ")
}

// groupsRun is one invocation of strata groups.
type groupsRun struct {
	c     *cli.Context
	w     io.Writer // data
	errw  io.Writer // messages
	json  bool
	group string
	adm   *kadm.Client
}

func runGroups(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("groups takes no arguments, got %q", c.Args().First())
	}
	action, err := groupsAction(c)
	if err != nil {
		return err
	}
	timeout := time.Duration(c.Int64("timeout")) * time.Millisecond
	if timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	var reset *resetRequest
	if action == "reset-offsets" {
		if reset, err = parseResetFlags(c); err != nil {
			return err
		}
	}
	cfg, err := clientFromFlags(c, "strata-groups")
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(cfg.kgoOpts(),
		kgo.DialTimeout(timeout), kgo.RetryTimeout(timeout), kgo.RequestTimeoutOverhead(timeout))...)
	if err != nil {
		return usageErr("--bootstrap-server: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return failErr(fmt.Errorf("cannot reach a broker at %s: %w", strings.Join(cfg.bootstrap, ","), err))
	}
	apis := groupsAPIs[action]
	if c.Bool("all-groups") {
		apis = append([]int16{16}, apis...) // ListGroups
	}
	if err := requireAPIs(ctx, cl, apis); err != nil {
		return err
	}
	r := &groupsRun{c: c, w: c.App.Writer, errw: c.App.ErrWriter, json: c.Bool("json"), group: c.String("group"), adm: kadm.NewClient(cl)}
	switch action {
	case "list":
		err = r.list(ctx)
	case "describe":
		err = r.describe(ctx)
	case "reset-offsets":
		err = r.reset(ctx, reset)
	case "delete":
		err = r.deleteGroup(ctx)
	case "delete-offsets":
		err = r.deleteOffsets(ctx)
	}
	return err
}

// groupsAction checks the flag combination and returns the one action.
func groupsAction(c *cli.Context) (string, error) {
	if c.String("bootstrap-server") == "" && c.String("command-config") == "" {
		return "", usageErr("--bootstrap-server HOST:PORT is required")
	}
	var action string
	for _, a := range []string{"list", "describe", "reset-offsets", "delete", "delete-offsets"} {
		if c.Bool(a) {
			if action != "" {
				return "", usageErr("--%s and --%s: give exactly one action", action, a)
			}
			action = a
		}
	}
	if action == "" {
		return "", usageErr("give one of --list, --describe, --reset-offsets, --delete, --delete-offsets")
	}
	if c.Bool("all-groups") && c.String("group") != "" {
		return "", usageErr("--group and --all-groups: give one")
	}
	if action != "list" && c.String("group") == "" && !c.Bool("all-groups") {
		if action == "describe" || action == "delete" {
			return "", usageErr("--%s needs --group or --all-groups", action)
		}
		return "", usageErr("--%s needs --group", action)
	}
	if action == "list" && c.String("group") != "" {
		return "", usageErr("--list takes no --group")
	}
	for _, flag := range sortedKeys(groupsFlagActions) {
		if actions := groupsFlagActions[flag]; c.IsSet(flag) && !strings.Contains(" "+actions+" ", " "+action+" ") {
			return "", usageErr("--%s does not go with --%s", flag, action)
		}
	}
	if n := btoi(c.Bool("offsets")) + btoi(c.Bool("members")) + btoi(c.Bool("state")); n > 1 && action == "describe" {
		return "", usageErr("--offsets, --members and --state: give at most one")
	}
	if c.Bool("verbose") && !c.Bool("members") {
		return "", usageErr("--verbose goes with --describe --members")
	}
	if action == "delete-offsets" && len(c.Generic("topic").(*multiString).vals) == 0 {
		return "", usageErr("--delete-offsets needs --topic")
	}
	return action, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// groupsFlagActions names the actions each action-specific flag goes with.
var groupsFlagActions = map[string]string{
	"all-topics": "reset-offsets", "to-earliest": "reset-offsets", "to-latest": "reset-offsets",
	"to-current": "reset-offsets", "to-datetime": "reset-offsets", "by-duration": "reset-offsets",
	"to-offset": "reset-offsets", "shift-by": "reset-offsets", "from-file": "reset-offsets",
	"export": "reset-offsets", "dry-run": "reset-offsets", "execute": "reset-offsets",
	"members": "describe", "verbose": "describe", "offsets": "describe",
	"state": "describe list", "all-groups": "describe delete",
	"topic": "reset-offsets delete-offsets",
}

// groupsAPIs are the requests each action sends.
var groupsAPIs = map[string][]int16{
	"list":           {16},                 // ListGroups
	"describe":       {10, 15, 9, 3, 2},    // FindCoordinator, DescribeGroups, OffsetFetch, Metadata, ListOffsets
	"reset-offsets":  {10, 15, 9, 3, 2, 8}, // ... and OffsetCommit
	"delete":         {10, 42},             // FindCoordinator, DeleteGroups
	"delete-offsets": {10, 3, 47},          // FindCoordinator, Metadata, OffsetDelete
}

// requireAPIs asks the broker for its ApiVersions and refuses (exit 2) an
// action it cannot serve, naming the missing request, rather than letting
// the client fail later with a vaguer error.
func requireAPIs(ctx context.Context, cl *kgo.Client, keys []int16) error {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return brokerErr("ApiVersions", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return brokerErr("ApiVersions", err)
	}
	have := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = true
	}
	var missing []string
	why := ""
	for _, k := range keys {
		if !have[k] {
			missing = append(missing, fmt.Sprintf("%s (key %d)", kmsg.NameForKey(k), k))
			if k != 2 && k != 3 {
				why = ": it has no group coordinator"
			}
		}
	}
	if len(missing) > 0 {
		return failErr(fmt.Errorf("the broker does not support %s (absent from its ApiVersions)%s", strings.Join(missing, ", "), why))
	}
	return nil
}

// brokerErr turns an error from the broker or the client into an exit code:
// an error the broker answered with (Kafka's error name) exits 1, anything
// else (unreachable, unsupported request, timeout) exits 2.
func brokerErr(what string, err error) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		err = se.Errs[0].Err // one group, one coordinator: one shard
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &exitError{code: ExitProblems, err: fmt.Errorf("%s: %w", what, ke)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return failErr(fmt.Errorf("%s: no answer from the broker in time (--timeout): %w", what, err))
	}
	return failErr(fmt.Errorf("%s: %w", what, err))
}

// refused is an exit-1 error for a request the group's state does not allow.
func refused(format string, args ...any) error {
	return &exitError{code: ExitProblems, err: fmt.Errorf(format, args...)}
}
