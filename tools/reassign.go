package tools

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/cluster"
)

// reassignCommand is "strata reassign": Kafka's
// kafka-reassign-partitions.sh over the Kafka protocol (Metadata,
// AlterPartitionReassignments, ListPartitionReassignments).
func reassignCommand() *cli.Command {
	return &cli.Command{
		Name:  "reassign",
		Usage: "move partition replicas between brokers (kafka-reassign-partitions.sh)",
		UsageText: "strata reassign --bootstrap-server HOST:PORT --generate --topics-to-move-json-file F --broker-list 1,2,3\n" +
			"   strata reassign --bootstrap-server HOST:PORT --generate --decommission-broker N [--topics-to-move-json-file F]\n" +
			"   strata reassign --bootstrap-server HOST:PORT --execute --reassignment-json-file F\n" +
			"   strata reassign --bootstrap-server HOST:PORT --verify --reassignment-json-file F\n" +
			"   strata reassign --bootstrap-server HOST:PORT --cancel --reassignment-json-file F",
		Description: `Kafka's kafka-reassign-partitions.sh with Kafka's flags, JSON and text. Exactly one action:

  --generate  prints the current assignment of the topics of --topics-to-move-json-file
              ({"version":1,"topics":[{"topic":"foo"}]}) and a proposed one over
              --broker-list, placed as topic creation places replicas (same partition count
              and replication factor). With --decommission-broker N instead: a plan moving
              every replica off N (all topics, or those of the file), each replaced in place
              by the broker with the fewest replicas that is not already one of the
              partition's (the fewest preferred leaderships first for a first replica), so
              no partition has two replicas on one broker and leadership stays balanced.
  --execute   starts the reassignment of --reassignment-json-file
              ({"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3]}]});
              prints the current assignment first, to save for a rollback. The whole plan
              is checked first, nothing starts when any of it is wrong: malformed JSON, a
              partition that does not exist or is listed twice, an empty replica list, a
              broker listed twice or not in the cluster. Refused while another
              reassignment is in progress. Increasing the replication factor is a plan with
              more replicas.
  --verify    per partition of the file: complete, still in progress, or failed (no
              reassignment in progress but other replicas than the plan's); and per
              replica the plan's log_dirs send to a log dir: completed, still in
              progress, or not moving
  --cancel    cancels the reassignments of the file's partitions still in progress: the
              original replicas stay, the new ones are deleted

A partition's "log_dirs" (one per replica: "any" or an absolute path) puts replicas in
those log dirs of their brokers: --execute sends AlterReplicaLogDirs to each broker
before it starts the reassignment (a broker remembers the dir of a replica it does not
have yet and creates it there; one it has is copied there while it serves it). A broker
refusing (LOG_DIR_NOT_FOUND for a dir it does not have) stops --execute before anything
starts.

--replica-alter-log-dirs-throttle BYTES_PER_SEC (with --execute) sets the dynamic broker
config replica.alter.log.dirs.io.max.bytes.per.second on the brokers of those moves;
--verify removes it with the other throttles once everything is complete.

--throttle BYTES_PER_SEC (with --execute) throttles the moving replicas as Kafka does: the
brokers' leader.replication.throttled.rate and follower.replication.throttled.rate, the
topics' leader.replication.throttled.replicas (current replicas of moving partitions) and
follower.replication.throttled.replicas (the replicas being added); only replicas out of
the ISR are held back. --verify removes them once every partition of the plan is
complete: run it until it says so. Exit status: 0 done,
1 refused by the cluster or a reassignment failed, 2 usage error, bad plan or no broker.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] of the broker(s) to talk to"},
			commandConfigFlag(),
			&cli.BoolFlag{Name: "generate", Usage: "propose a reassignment"},
			&cli.BoolFlag{Name: "execute", Usage: "start the reassignment of --reassignment-json-file"},
			&cli.BoolFlag{Name: "verify", Usage: "report the status of the reassignment of --reassignment-json-file"},
			&cli.BoolFlag{Name: "cancel", Usage: "cancel the reassignments of --reassignment-json-file"},
			&cli.StringFlag{Name: "topics-to-move-json-file", Usage: "the topics to move (--generate)"},
			&cli.StringFlag{Name: "broker-list", Usage: "the brokers to move them to (--generate)"},
			&cli.StringFlag{Name: "reassignment-json-file", Usage: "the reassignment plan"},
			&cli.IntFlag{Name: "decommission-broker", Value: -1, Usage: "plan moving every replica off this broker (--generate)"},
			&cli.Int64Flag{Name: "throttle", Value: -1, Usage: "replication throttle of the moving replicas in bytes/sec (--execute)"},
			&cli.Int64Flag{Name: "replica-alter-log-dirs-throttle", Value: -1, Usage: "copy rate of replicas moving between log dirs in bytes/sec (--execute)"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the cluster"},
		},
		Action: runReassign,
	}
}

func runReassign(c *cli.Context) error {
	var actions []string
	for _, a := range []string{"generate", "execute", "verify", "cancel"} {
		if c.Bool(a) {
			actions = append(actions, a)
		}
	}
	if len(actions) != 1 {
		return usageErr("give exactly one of --generate, --execute, --verify, --cancel")
	}
	action := actions[0]
	throttle := int64(-1)
	if c.IsSet("throttle") {
		if action != "execute" {
			return usageErr("--throttle goes with --execute")
		}
		if throttle = c.Int64("throttle"); throttle < 1 {
			return usageErr("--throttle %d: want bytes per second > 0", throttle)
		}
	}
	dirThrottle := int64(-1)
	if c.IsSet("replica-alter-log-dirs-throttle") {
		if action != "execute" {
			return usageErr("--replica-alter-log-dirs-throttle goes with --execute")
		}
		if dirThrottle = c.Int64("replica-alter-log-dirs-throttle"); dirThrottle < 1 {
			return usageErr("--replica-alter-log-dirs-throttle %d: want bytes per second > 0", dirThrottle)
		}
	}
	// Check the input files before touching the cluster.
	var plan []planPartition
	var topics []string
	var err error
	switch action {
	case "generate":
		if f := c.String("topics-to-move-json-file"); f != "" {
			if topics, err = readTopicsToMove(f); err != nil {
				return err
			}
		} else if c.Int("decommission-broker") < 0 {
			return usageErr("--generate needs --topics-to-move-json-file (and --broker-list) or --decommission-broker")
		}
		if c.Int("decommission-broker") < 0 && c.String("broker-list") == "" {
			return usageErr("--generate needs --broker-list")
		}
	default:
		f := c.String("reassignment-json-file")
		if f == "" {
			return usageErr("--%s needs --reassignment-json-file", action)
		}
		if plan, err = readPlan(f); err != nil {
			return err
		}
	}
	b, ctx, done, err := adminFromFlags(c, "strata-reassign", "list")
	if err != nil {
		return err
	}
	defer done()
	for _, k := range []int16{keyAlterPartitionReassignments, keyListPartitionReassignments} {
		if !b.apis[k] {
			return failErr(fmt.Errorf("the broker does not support %s (key %d): not a cluster?", kmsg.NameForKey(k), k))
		}
	}
	r := &reassigner{b: b, out: c.App.Writer}
	if err := r.loadMetadata(ctx); err != nil {
		return err
	}
	switch action {
	case "generate":
		if n := c.Int("decommission-broker"); n >= 0 {
			return r.decommission(int32(n), topics)
		}
		brokers, err := parseBrokerList(c.String("broker-list"))
		if err != nil {
			return err
		}
		return r.generate(topics, brokers)
	case "execute":
		return r.execute(ctx, plan, throttle, dirThrottle)
	case "verify":
		return r.verify(ctx, plan)
	default:
		return r.cancel(ctx, plan)
	}
}

const keyAlterPartitionReassignments = 45

type reassigner struct {
	b       *adminBackend
	out     io.Writer
	md      kadm.Metadata
	brokers []int32
}

func (r *reassigner) loadMetadata(ctx context.Context) error {
	r.brokers = nil
	md, err := r.b.adm.Metadata(ctx)
	if err != nil {
		return failErr(fmt.Errorf("metadata: %w", err))
	}
	r.md = md
	for _, b := range md.Brokers {
		r.brokers = append(r.brokers, b.NodeID)
	}
	slices.Sort(r.brokers)
	return nil
}

// current lists the assignment of topics' partitions (every topic when
// nil), sorted.
func (r *reassigner) current(topics []string) ([]planPartition, error) {
	var out []planPartition
	for _, td := range r.md.Topics.Sorted() {
		if td.Err != nil || (topics != nil && !slices.Contains(topics, td.Topic)) {
			continue
		}
		for _, pd := range td.Partitions.Sorted() {
			out = append(out, planPartition{Topic: td.Topic, Partition: pd.Partition, Replicas: slices.Clone(pd.Replicas)})
		}
	}
	for _, t := range topics {
		if td, ok := r.md.Topics[t]; !ok || td.Err != nil {
			return nil, usageErr("topic %s does not exist", t)
		}
	}
	return out, nil
}

// check refuses a plan naming a partition or a broker the cluster does
// not have.
func (r *reassigner) check(plan []planPartition) error {
	var missing []string
	var unknown []int32
	for _, p := range plan {
		td, ok := r.md.Topics[p.Topic]
		if !ok || td.Err != nil {
			missing = append(missing, p.name())
			continue
		}
		if _, ok := td.Partitions[p.Partition]; !ok {
			missing = append(missing, p.name())
		}
		for _, b := range p.Replicas {
			if !slices.Contains(r.brokers, b) && !slices.Contains(unknown, b) {
				unknown = append(unknown, b)
			}
		}
	}
	if len(missing) > 0 {
		return usageErr("the plan names partitions that do not exist: %s; nothing was started", strings.Join(missing, ","))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return usageErr("the plan names brokers that are not in the cluster: %s (live brokers %s); nothing was started",
			fmtReplicas(unknown), fmtReplicas(r.brokers))
	}
	return nil
}

func (r *reassigner) generate(topics []string, brokers []int32) error {
	var placement []cluster.PlacementBroker
	for _, id := range brokers {
		if !slices.Contains(r.brokers, id) {
			return usageErr("--broker-list: broker %d is not in the cluster (live brokers %s)", id, fmtReplicas(r.brokers))
		}
		pb := cluster.PlacementBroker{ID: id}
		if mb, ok := r.brokerMeta(id); ok && mb.Rack != nil {
			pb.Rack = *mb.Rack
		}
		placement = append(placement, pb)
	}
	cur, err := r.current(topics)
	if err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var proposed []planPartition
	for _, t := range topics {
		td := r.md.Topics[t]
		rf := 0
		if pd, ok := td.Partitions[0]; ok {
			rf = len(pd.Replicas)
		}
		as, err := cluster.AssignReplicas(placement, len(td.Partitions), rf, rnd)
		if err != nil {
			return usageErr("topic %s: %v", t, err)
		}
		for p, rs := range as {
			proposed = append(proposed, planPartition{Topic: t, Partition: int32(p), Replicas: rs})
		}
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", planJSON(cur), planJSON(proposed))
	return nil
}

func (r *reassigner) brokerMeta(id int32) (kadm.BrokerDetail, bool) {
	for _, b := range r.md.Brokers {
		if b.NodeID == id {
			return b, true
		}
	}
	return kadm.BrokerDetail{}, false
}

func (r *reassigner) decommission(gone int32, topics []string) error {
	cur, err := r.current(topics)
	if err != nil {
		return err
	}
	var rest []int32
	for _, b := range r.brokers {
		if b != gone {
			rest = append(rest, b)
		}
	}
	plan, err := decommissionPlan(cur, gone, rest)
	if err != nil {
		return err
	}
	var moved []planPartition
	for _, p := range cur {
		if slices.Contains(p.Replicas, gone) {
			moved = append(moved, p)
		}
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", planJSON(moved), planJSON(plan))
	return nil
}

// inProgress lists every reassignment in progress (ListPartitionReassignments
// with topics null).
func (r *reassigner) inProgress(ctx context.Context) (map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(min(r.b.timeout.Milliseconds(), 1<<31-1))
	resp, err := req.RequestWith(ctx, r.b.cl)
	if err != nil {
		return nil, failErr(fmt.Errorf("ListPartitionReassignments: %w", err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, &exitError{code: ExitProblems, err: fmt.Errorf("ListPartitionReassignments: %w", err)}
	}
	out := map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[planPartition{Topic: t.Topic, Partition: p.Partition}.name()] = p
		}
	}
	return out, nil
}

func (r *reassigner) execute(ctx context.Context, plan []planPartition, throttle, dirThrottle int64) error {
	if err := r.check(plan); err != nil {
		return err
	}
	running, err := r.inProgress(ctx)
	if err != nil {
		return err
	}
	if len(running) > 0 {
		names := make([]string, 0, len(running))
		for n := range running {
			names = append(names, n)
		}
		slices.Sort(names)
		return &exitError{code: ExitProblems, err: fmt.Errorf("cannot execute: a reassignment is in progress (%s); verify or cancel it first", strings.Join(names, ","))}
	}
	var cur []planPartition
	for _, p := range plan {
		pd := r.md.Topics[p.Topic].Partitions[p.Partition]
		cur = append(cur, planPartition{Topic: p.Topic, Partition: p.Partition, Replicas: slices.Clone(pd.Replicas)})
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", planJSON(cur))
	if err := r.setDirThrottle(ctx, plan, dirThrottle); err != nil {
		return err
	}
	if err := r.sendLogDirs(ctx, plan); err != nil {
		return err
	}
	if throttle > 0 {
		if err := r.setThrottles(ctx, cur, plan, throttle); err != nil {
			return err
		}
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	return r.alter(ctx, req, plan, "started")
}

func (r *reassigner) alter(ctx context.Context, req kadm.AlterPartitionAssignmentsReq, plan []planPartition, what string) error {
	resps, err := r.b.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return failErr(fmt.Errorf("AlterPartitionReassignments: %w", err))
	}
	var ok, failed []string
	for _, p := range plan {
		resp, found := resps[p.Topic][p.Partition]
		switch {
		case !found:
			failed = append(failed, p.name()+": no answer")
		case resp.Err == nil:
			ok = append(ok, p.name())
		case what == "cancelled" && resp.Err == kerr.NoReassignmentInProgress:
			// not active: nothing to cancel
		default:
			msg := resp.Err.Error()
			if resp.ErrMessage != "" {
				msg += ": " + resp.ErrMessage
			}
			failed = append(failed, p.name()+": "+msg)
		}
	}
	switch {
	case len(ok) > 0 && what == "cancelled":
		fmt.Fprintf(r.out, "Successfully cancelled partition reassignments for: %s\n", strings.Join(ok, ","))
	case len(ok) > 0:
		fmt.Fprintf(r.out, "Successfully started partition reassignments for %s\n", strings.Join(ok, ","))
	case len(failed) == 0 && what == "cancelled":
		fmt.Fprintln(r.out, "None of the specified partition reassignments are active.")
	}
	if len(failed) > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("partition reassignments not %s: %s", what, strings.Join(failed, "; "))}
	}
	return nil
}

func (r *reassigner) verify(ctx context.Context, plan []planPartition) error {
	running, err := r.inProgress(ctx)
	if err != nil {
		return err
	}
	// The metadata read before the list may predate a completion the
	// controller reports; a broker's metadata may lag the controller's
	// (its UpdateMetadata waits behind the controller's other requests on
	// a loaded machine): read it again, for up to 10 s, before calling a
	// partition failed.
	for try := 0; try < 50; try++ {
		if err := r.loadMetadata(ctx); err != nil {
			return err
		}
		if !r.mismatch(plan, running) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Fprintln(r.out, "Status of partition reassignment:")
	var failed []string
	for _, p := range plan {
		if _, ok := running[p.name()]; ok {
			fmt.Fprintf(r.out, "Reassignment of partition %s is still in progress.\n", p.name())
			continue
		}
		var have []int32
		if td, ok := r.md.Topics[p.Topic]; ok {
			if pd, ok := td.Partitions[p.Partition]; ok {
				have = pd.Replicas
			}
		}
		if slices.Equal(have, p.Replicas) {
			fmt.Fprintf(r.out, "Reassignment of partition %s is complete.\n", p.name())
			continue
		}
		fmt.Fprintf(r.out, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n",
			p.name(), fmtReplicas(have), fmtReplicas(p.Replicas))
		failed = append(failed, p.name())
	}
	if len(failed) > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("reassignment failed for %s", strings.Join(failed, ","))}
	}
	for _, p := range plan {
		if _, ok := running[p.name()]; ok {
			return nil // throttles stay while any partition of the plan moves
		}
	}
	if done, err := r.verifyLogDirs(ctx, plan); err != nil || !done {
		return err
	}
	return r.clearThrottles(ctx, plan)
}

// mismatch tells whether a partition of plan not in progress has other
// replicas than the plan's in the metadata.
func (r *reassigner) mismatch(plan []planPartition, running map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition) bool {
	for _, p := range plan {
		if _, ok := running[p.name()]; ok {
			continue
		}
		if td, ok := r.md.Topics[p.Topic]; !ok || !slices.Equal(td.Partitions[p.Partition].Replicas, p.Replicas) {
			return true
		}
	}
	return false
}

func (r *reassigner) cancel(ctx context.Context, plan []planPartition) error {
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan {
		req.CancelAssign(p.Topic, p.Partition)
	}
	return r.alter(ctx, req, plan, "cancelled")
}
