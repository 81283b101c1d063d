package cluster

import (
	"errors"
	"fmt"
)

// opOverhead is what one op adds to a multi besides its path and data
// (header, version, ACL list of a create), estimated high.
const opOverhead = 64

// addOp queues one op of the current step's writes; expect is the version
// a set must leave the znode at (-1 for other ops). Ops are cut into
// batches of at most MaxWriteBatchBytes.
func (c *Controller) addOp(op Op, expect int32) {
	size := len(op.Path) + len(op.Data) + opOverhead
	if len(c.ops) > 0 && c.opsBytes+size > c.opts.MaxWriteBatchBytes {
		c.cutWrites()
	}
	c.ops = append(c.ops, op)
	c.expects = append(c.expects, expect)
	c.opsBytes += size
}

// cutWrites makes the queued ops a WriteBatch, fenced by the check of
// /controller_epoch.
func (c *Controller) cutWrites() {
	if len(c.ops) == 0 {
		return
	}
	c.nextBatch++
	ops := make([]Op, 0, len(c.ops)+1)
	ops = append(ops, Op{Kind: OpCheck, Path: ctrlControllerEpochPath, Version: c.epochVersion})
	ops = append(ops, c.ops...)
	expects := make([]int32, 0, len(ops))
	expects = append(expects, -1)
	expects = append(expects, c.expects...)
	c.outWrites = append(c.outWrites, WriteBatch{ID: c.nextBatch, Ops: ops})
	c.inflight = append(c.inflight, inflightBatch{id: c.nextBatch, expects: expects})
	c.lastBatch = c.nextBatch
	c.ops, c.expects, c.opsBytes = c.ops[:0], c.expects[:0], 0
}

// writeState records a partition's new state: set at the known version, or
// create (with the partition's containers) when it has none. The
// controller's view changes at once; what depends on it waits for the
// batch (see flushRequests).
func (c *Controller) writeState(t *ctopic, p int32, st PartitionState) {
	part := &t.parts[p]
	st.ControllerEpoch = c.epoch
	c.scratch = appendStateJSON(c.scratch[:0], &st)
	data := append([]byte(nil), c.scratch...)
	if part.hasState {
		c.addOp(Op{Kind: OpSet, Path: ctrlStatePath(t.name, p), Data: data, Version: part.st.Version}, part.st.Version+1)
		st.Version = part.st.Version + 1
	} else {
		if !t.partitionsNode {
			c.addOp(Op{Kind: OpCreate, Path: ctrlPartitionsPath(t.name), Mode: Persistent}, -1)
			t.partitionsNode = true
		}
		if !part.node {
			c.addOp(Op{Kind: OpCreate, Path: ctrlPartitionPath(t.name, p), Mode: Persistent}, -1)
			part.node = true
		}
		c.addOp(Op{Kind: OpCreate, Path: ctrlStatePath(t.name, p), Data: data, Mode: Persistent}, -1)
		st.Version = 0
	}
	part.st = st
	part.hasState = true
}

// onWriteResult takes the outcome of the oldest batch in flight. Success
// releases what waited for it. A failure of the epoch check (or an expired
// session) means another controller was elected: resign. Any other failure
// leaves ZooKeeper in a state the controller cannot know: reload.
func (c *Controller) onWriteResult(r WriteResult) {
	if !c.active {
		return // a late result of a batch dropped when the controller stopped
	}
	if len(c.inflight) == 0 || r.Batch < c.inflight[0].id {
		c.logf("ignoring result of write batch %d: not in flight", r.Batch)
		return
	}
	b := c.inflight[0]
	if r.Batch != b.id {
		c.stop(false, fmt.Sprintf("write batch %d reported before batch %d: reloading", r.Batch, b.id))
		return
	}
	c.inflight = c.inflight[1:]
	if r.Err != nil {
		if fenced(r) {
			c.stop(true, fmt.Sprintf("write batch %d fenced (%v): another controller was elected", r.Batch, r.Err))
		} else {
			c.stop(false, fmt.Sprintf("write batch %d failed (%v): reloading", r.Batch, r.Err))
		}
		return
	}
	for i, want := range b.expects {
		if want >= 0 && i < len(r.Results) && r.Results[i].Stat.Version != want {
			c.stop(false, fmt.Sprintf("write batch %d: %s is at version %d, expected %d: reloading",
				r.Batch, r.Results[i].Path, r.Results[i].Stat.Version, want))
			return
		}
	}
	c.release()
}

// fenced tells whether a failed multi failed on its /controller_epoch
// check, or because the session is gone.
func fenced(r WriteResult) bool {
	if errors.Is(r.Err, ErrSessionExpired) || errors.Is(r.Err, ErrClosed) {
		return true
	}
	if len(r.Results) > 0 {
		e := r.Results[0].Err
		return errors.Is(e, ErrBadVersion) || errors.Is(e, ErrNoNode)
	}
	return false
}
