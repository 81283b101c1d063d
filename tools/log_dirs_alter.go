package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

// replicaDirMove is one replica a plan's log_dirs sends to a log dir.
type replicaDirMove struct {
	topic     string
	partition int32
	broker    int32
	dir       string
}

func (m replicaDirMove) String() string {
	return fmt.Sprintf("%s-%d on broker %d to %s", m.topic, m.partition, m.broker, m.dir)
}

// planDirMoves lists the replicas of plan whose log_dirs entry is a path
// (not "any"), sorted.
func planDirMoves(plan []planPartition) []replicaDirMove {
	var out []replicaDirMove
	for _, p := range plan {
		for i, d := range p.LogDirs {
			if d != "any" && i < len(p.Replicas) {
				out = append(out, replicaDirMove{topic: p.Topic, partition: p.Partition, broker: p.Replicas[i], dir: d})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		if a.partition != b.partition {
			return a.partition < b.partition
		}
		return a.broker < b.broker
	})
	return out
}

// sendDirMoves sends AlterReplicaLogDirs to each broker of moves (Kafka's
// ReassignPartitionsCommand.alterReplicaLogDirs): moved are the replicas
// whose move started (or that are already there), pending those the broker
// does not host yet (REPLICA_NOT_AVAILABLE: the broker remembers the dir
// and creates the replica there), failed the others with the error.
func sendDirMoves(ctx context.Context, adm *kadm.Client, moves []replicaDirMove) (moved, pending []replicaDirMove, failed []string) {
	byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
	for _, m := range moves {
		req := byBroker[m.broker]
		req.Add(m.dir, kadm.TopicsSet{m.topic: {m.partition: {}}})
		byBroker[m.broker] = req
	}
	answers := map[int32]kadm.AlterReplicaLogDirsResponses{}
	errs := map[int32]error{}
	for b, req := range byBroker {
		resp, err := adm.AlterBrokerReplicaLogDirs(ctx, b, req)
		answers[b], errs[b] = resp, err
	}
	for _, m := range moves {
		if err := errs[m.broker]; err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", m, err))
			continue
		}
		r, ok := answers[m.broker][m.topic][m.partition]
		switch {
		case !ok:
			failed = append(failed, m.String()+": no answer")
		case r.Err == nil:
			moved = append(moved, m)
		case errors.Is(r.Err, kerr.ReplicaNotAvailable):
			pending = append(pending, m)
		default:
			failed = append(failed, fmt.Sprintf("%s: %v", m, r.Err))
		}
	}
	return moved, pending, failed
}

// printDirMoves prints what sendDirMoves did, Kafka's way.
func printDirMoves(w interface{ Write([]byte) (int, error) }, moved, pending []replicaDirMove) {
	if len(moved) > 0 {
		fmt.Fprintf(w, "Successfully started log directory move for: %s\n", joinMoves(moved))
	}
	if len(pending) > 0 {
		fmt.Fprintf(w, "Log directory remembered for replicas not created yet: %s\n", joinMoves(pending))
	}
}

func joinMoves(ms []replicaDirMove) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.String()
	}
	return strings.Join(s, ", ")
}

// dirMoveStatus is where DescribeLogDirs finds each replica of moves:
// complete (in the dir), in progress (a future replica there) or neither,
// with one line each for --verify. done is false while any moves.
func dirMoveStatus(ctx context.Context, adm *kadm.Client, moves []replicaDirMove) (lines []string, done bool, err error) {
	described := map[int32]kadm.DescribedLogDirs{}
	done = true
	for _, m := range moves {
		dirs, ok := described[m.broker]
		if !ok {
			dirs, err = adm.DescribeBrokerLogDirs(ctx, m.broker, nil)
			if err != nil {
				return nil, false, fmt.Errorf("DescribeLogDirs of broker %d: %w", m.broker, err)
			}
			described[m.broker] = dirs
		}
		var cur, fut string
		for name, d := range dirs {
			if p, ok := d.Topics[m.topic][m.partition]; ok {
				if p.IsFuture {
					fut = name
				} else {
					cur = name
				}
			}
		}
		switch {
		case cur == m.dir:
			lines = append(lines, fmt.Sprintf("Reassignment of replica %s-%d-%d completed successfully.", m.topic, m.partition, m.broker))
		case fut == m.dir:
			done = false
			lines = append(lines, fmt.Sprintf("Reassignment of replica %s-%d-%d is still in progress.", m.topic, m.partition, m.broker))
		case cur == "":
			done = false
			lines = append(lines, fmt.Sprintf("Partition %s-%d cannot be found in any live log directory on broker %d.", m.topic, m.partition, m.broker))
		default:
			done = false
			lines = append(lines, fmt.Sprintf("Partition %s-%d on broker %d is not being moved from log dir %s to %s.", m.topic, m.partition, m.broker, cur, m.dir))
		}
	}
	return lines, done, nil
}

// runLogDirsAlter is log-dirs --alter and --verify.
func runLogDirsAlter(c *cli.Context) error {
	if c.Bool("alter") && c.Bool("verify") || c.Bool("describe") {
		return usageErr("give one of --describe, --alter, --verify")
	}
	f := c.String("reassignment-json-file")
	if f == "" {
		return usageErr("--alter and --verify need --reassignment-json-file")
	}
	plan, err := readPlan(f)
	if err != nil {
		return err
	}
	moves := planDirMoves(plan)
	if len(moves) == 0 {
		return usageErr("%s: no log_dirs entry names a log dir (all \"any\")", f)
	}
	b, ctx, done, err := adminFromFlags(c, "strata-log-dirs", "list")
	if err != nil {
		return err
	}
	defer done()
	if !b.apis[34] {
		return failErr(fmt.Errorf("the broker does not support AlterReplicaLogDirs (key 34)"))
	}
	w := c.App.Writer
	if c.Bool("verify") {
		lines, complete, err := dirMoveStatus(ctx, b.adm, moves)
		if err != nil {
			return failErr(err)
		}
		fmt.Fprintln(w, "Status of log directory moves:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		if !complete {
			return &exitError{code: ExitProblems, err: fmt.Errorf("log directory moves not complete")}
		}
		return nil
	}
	moved, pending, failed := sendDirMoves(ctx, b.adm, moves)
	printDirMoves(w, moved, pending)
	if len(failed) > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("log directory moves refused: %s", strings.Join(failed, "; "))}
	}
	return nil
}
