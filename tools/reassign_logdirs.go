package tools

import (
	"context"
	"fmt"
	"strings"
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
