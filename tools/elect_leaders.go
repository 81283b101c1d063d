package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// electLeadersCommand is "strata elect-leaders": Kafka's
// kafka-leader-election.sh over ElectLeaders (key 43).
func electLeadersCommand() *cli.Command {
	return &cli.Command{
		Name:  "elect-leaders",
		Usage: "move leadership to the preferred replicas, or elect leaderless partitions (kafka-leader-election.sh)",
		UsageText: "strata elect-leaders --bootstrap-server HOST:PORT --election-type preferred|unclean\n" +
			"        (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)",
		Description: `Kafka's kafka-leader-election.sh: an ElectLeaders request to the controller.
--election-type preferred moves each partition's leadership to its preferred replica (the
first assigned) when that replica is live and in sync; unclean elects a leader for
partitions without one, outside the ISR if need be (records only the old ISR had may be
lost). The partitions: --topic with --partition, --all-topic-partitions, or
--path-to-json-file ({"partitions":[{"topic":"t","partition":0}]}). Prints, as Kafka:

  Successfully completed leader election (PREFERRED) for partitions t-0, t-1
  Valid replica already elected for partitions t-2
  Error completing leader election (PREFERRED) for partition: t-3: <error>

Exit status: 0 done, 1 some partition could not be elected, 2 usage error or no broker.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] of the broker(s) to talk to"},
			commandConfigFlag(),
			&cli.StringFlag{Name: "election-type", Usage: "preferred or unclean"},
			&cli.StringFlag{Name: "topic", Usage: "the topic (with --partition)"},
			&cli.IntFlag{Name: "partition", Value: -1, Usage: "the partition (with --topic)"},
			&cli.BoolFlag{Name: "all-topic-partitions", Usage: "every partition of every topic"},
			&cli.StringFlag{Name: "path-to-json-file", Usage: `{"partitions":[{"topic":"t","partition":0}]}`},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the cluster"},
		},
		Action: runElectLeaders,
	}
}

func runElectLeaders(c *cli.Context) error {
	var typ int8
	var typName string
	switch strings.ToLower(c.String("election-type")) {
	case "preferred":
		typ, typName = 0, "PREFERRED"
	case "unclean":
		typ, typName = 1, "UNCLEAN"
	case "":
		return usageErr("--election-type is required: preferred or unclean")
	default:
		return usageErr("--election-type %q: want preferred or unclean", c.String("election-type"))
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 1
	req.ElectionType = typ
	n := 0
	if c.Bool("all-topic-partitions") {
		n++
		req.Topics = nil
	}
	if c.IsSet("topic") || c.IsSet("partition") {
		n++
		if c.String("topic") == "" || c.Int("partition") < 0 {
			return usageErr("--topic and --partition go together")
		}
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = c.String("topic"), []int32{int32(c.Int("partition"))}
		req.Topics = append(req.Topics, rt)
	}
	if f := c.String("path-to-json-file"); f != "" {
		n++
		ts, err := readElectionFile(f)
		if err != nil {
			return err
		}
		req.Topics = ts
	}
	if n != 1 {
		return usageErr("give exactly one of --topic/--partition, --all-topic-partitions, --path-to-json-file")
	}
	b, ctx, closeAdmin, err := adminFromFlags(c, "strata-elect-leaders", "list")
	if err != nil {
		return err
	}
	defer closeAdmin()
	if !b.apis[int16(kmsg.ElectLeaders)] {
		return failErr(fmt.Errorf("the broker does not support ElectLeaders (key 43): not a cluster?"))
	}
	req.TimeoutMillis = int32(min(c.Duration("timeout").Milliseconds(), 1<<31-1))
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return failErr(fmt.Errorf("ElectLeaders: %w", err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return &exitError{code: ExitProblems, err: fmt.Errorf("ElectLeaders: %w", err)}
	}
	var done, noop, failed []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			name := fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)
			switch rp.ErrorCode {
			case 0:
				done = append(done, name)
			case kerr.ElectionNotNeeded.Code:
				noop = append(noop, name)
			default:
				msg := kerr.ErrorForCode(rp.ErrorCode).Error()
				if rp.ErrorMessage != nil && *rp.ErrorMessage != "" {
					msg += ": " + *rp.ErrorMessage
				}
				failed = append(failed, name+": "+msg)
			}
		}
	}
	slices.Sort(done)
	slices.Sort(noop)
	slices.Sort(failed)
	w := c.App.Writer
	if len(done) > 0 {
		fmt.Fprintf(w, "Successfully completed leader election (%s) for partitions %s\n", typName, strings.Join(done, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", strings.Join(noop, ", "))
	}
	for _, f := range failed {
		fmt.Fprintf(w, "Error completing leader election (%s) for partition: %s\n", typName, f)
	}
	if len(failed) > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("%d replica(s) could not be elected", len(failed))}
	}
	return nil
}

// readElectionFile reads --path-to-json-file:
// {"partitions":[{"topic":"t","partition":0}]}.
func readElectionFile(path string) ([]kmsg.ElectLeadersRequestTopic, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("--path-to-json-file: %v", err)
	}
	var raw struct {
		Partitions []struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, usageErr("%s: malformed JSON: %v", path, err)
	}
	if len(raw.Partitions) == 0 {
		return nil, usageErr("%s: no partitions", path)
	}
	var out []kmsg.ElectLeadersRequestTopic
	for i, p := range raw.Partitions {
		if p.Topic == nil || *p.Topic == "" || p.Partition == nil || *p.Partition < 0 {
			return nil, usageErr("%s: partitions[%d]: \"topic\" and \"partition\" are required", path, i)
		}
		j := slices.IndexFunc(out, func(t kmsg.ElectLeadersRequestTopic) bool { return t.Topic == *p.Topic })
		if j < 0 {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = *p.Topic
			out = append(out, rt)
			j = len(out) - 1
		}
		if slices.Contains(out[j].Partitions, *p.Partition) {
			return nil, usageErr("%s: partition %s-%d listed twice", path, *p.Topic, *p.Partition)
		}
		out[j].Partitions = append(out[j].Partitions, *p.Partition)
	}
	return out, nil
}
