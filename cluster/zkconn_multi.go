package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Multi applies ops atomically. When it fails, ZooKeeper reports per op:
// the ops before the failing one nil, the failing one its error, the ones
// after it ErrRolledBack; the returned error is the failing op's. When the
// outcome is unknown (connection lost) there are no results.
func (z *ZKConn) Multi(ops ...Op) ([]OpResult, error) {
	if z.closed.Load() {
		return nil, ErrClosed
	}
	reqs := make([]any, len(ops))
	for i, op := range ops {
		var err error
		switch op.Kind {
		case OpCreate:
			if err = z.checkCreate(op.Path, op.Mode); err == nil {
				reqs[i] = &zk.CreateRequest{Path: z.full(op.Path), Data: op.Data,
					Acl: zk.WorldACL(zk.PermAll), Flags: zkFlags(op.Mode)}
			}
		case OpSet:
			if err = z.check(op.Path); err == nil {
				reqs[i] = &zk.SetDataRequest{Path: z.full(op.Path), Data: op.Data, Version: op.Version}
			}
		case OpDelete:
			if err = z.check(op.Path); err == nil {
				reqs[i] = &zk.DeleteRequest{Path: z.full(op.Path), Version: op.Version}
			}
		case OpCheck:
			if err = z.check(op.Path); err == nil {
				reqs[i] = &zk.CheckVersionRequest{Path: z.full(op.Path), Version: op.Version}
			}
		default:
			err = fmt.Errorf("%w: multi op kind %d", ErrBadRequest, op.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("multi op %d: %w", i, err)
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	res, err := z.conn.Multi(reqs...)
	if len(res) != len(ops) {
		// no per-op results: the request failed as a whole
		if err == nil {
			err = errors.New("multi: result count mismatch")
		}
		return nil, z.mapErr(multiPaths(ops), err)
	}
	out := make([]OpResult, len(ops))
	var first error
	for i, r := range res {
		o := OpResult{}
		switch {
		case r.Error == nil:
			if ops[i].Kind == OpCreate {
				o.Path = z.strip(r.String)
			}
			if ops[i].Kind == OpSet {
				o.Stat = toStat(r.Stat)
			}
		case isRolledBack(r.Error):
			o.Err = ErrRolledBack
		case first == nil:
			o.Err = z.mapErr(ops[i].Path, r.Error)
			first = o.Err
		default:
			o.Err = ErrRolledBack
		}
		out[i] = o
	}
	if first == nil && err != nil {
		return nil, z.mapErr(multiPaths(ops), err)
	}
	if first != nil {
		for i := range out { // nothing was applied
			out[i].Path, out[i].Stat = "", Stat{}
		}
	}
	return out, first
}

// isRolledBack: ZooKeeper's RUNTIMEINCONSISTENCY (-2), which go-zookeeper
// has no name for.
func isRolledBack(err error) bool { return strings.Contains(err.Error(), "unknown error: -2") }

func multiPaths(ops []Op) string {
	if len(ops) == 0 {
		return "multi"
	}
	return "multi(" + ops[0].Path + ",...)"
}
