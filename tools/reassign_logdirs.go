package tools

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// sendLogDirs is --execute's AlterReplicaLogDirs for the replicas of plan
// whose log_dirs entry names a dir, sent before the reassignment starts so
// that new replicas are created in their dir.
func (r *reassigner) sendLogDirs(ctx context.Context, plan []planPartition) error {
	moves := planDirMoves(plan)
	if len(moves) == 0 {
		return nil
	}
	if !r.b.apis[34] {
		return failErr(fmt.Errorf("the broker does not support AlterReplicaLogDirs (key 34): the plan's log_dirs cannot be applied"))
	}
	moved, pending, failed := sendDirMoves(ctx, r.b.adm, moves)
	if len(failed) > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("log dirs refused, nothing started: %s", strings.Join(failed, "; "))}
	}
	printDirMoves(r.out, moved, pending)
	return nil
}

// verifyLogDirs is --verify's report of the plan's log dir moves: done
// when every replica is in its dir.
func (r *reassigner) verifyLogDirs(ctx context.Context, plan []planPartition) (bool, error) {
	moves := planDirMoves(plan)
	if len(moves) == 0 {
		return true, nil
	}
	lines, done, err := dirMoveStatus(ctx, r.b.adm, moves)
	if err != nil {
		return false, failErr(err)
	}
	fmt.Fprintln(r.out, "\nStatus of replica log directory moves:")
	for _, l := range lines {
		fmt.Fprintln(r.out, l)
	}
	return done, nil
}

// setDirThrottle is --replica-alter-log-dirs-throttle: the brokers of the
// plan's log dir moves get replica.alter.log.dirs.io.max.bytes.per.second.
func (r *reassigner) setDirThrottle(ctx context.Context, plan []planPartition, rate int64) error {
	moves := planDirMoves(plan)
	if rate < 0 || len(moves) == 0 {
		return nil
	}
	var brokers []int32
	for _, m := range moves {
		if !slices.Contains(brokers, m.broker) {
			brokers = append(brokers, m.broker)
		}
	}
	slices.Sort(brokers)
	v := strconv.FormatInt(rate, 10)
	resps, err := r.b.adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cfgAlterLogDirsRate, Value: &v}}, brokers...)
	if err = alterConfigsErr(resps, err); err != nil {
		return &exitError{code: ExitProblems, err: fmt.Errorf("setting the log dir copy rate on brokers %s: %w; nothing was started", fmtReplicas(brokers), err)}
	}
	fmt.Fprintf(r.out, "The replica-alter-dir throttle limit was set to %d B/s\n", rate)
	return nil
}
