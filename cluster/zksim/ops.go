package zksim

import (
	"fmt"

	"github.com/stratalog/strata/cluster"
)

func checkPath(p string) error {
	if err := cluster.CheckPath(p); err != nil {
		return fmt.Errorf("%w: %v", cluster.ErrBadRequest, err)
	}
	return nil
}

// snap is what a read returns, copied under the lock.
type snap struct {
	data  []byte
	stat  cluster.Stat
	names []string
}

func (h *Session) read(op, p string, kind watchKind, watch bool) (sn *snap, ch <-chan cluster.WatchEvent, err error) {
	s := h.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkPath(p); err != nil {
		return nil, nil, err
	}
	p = h.full(p)
	run, lose, err := h.begin(op, p)
	if !run {
		return nil, nil, err
	}
	if n := s.tree.nodes[p]; n != nil {
		sn = &snap{data: clone(n.data), stat: n.stat()}
		if kind == watchChild {
			sn.names = n.childNames()
		}
	}
	if watch && !lose && (sn != nil || kind == watchExist) {
		ch = s.addWatch(h, kind, p)
	}
	if sn == nil && kind != watchExist {
		err = fmt.Errorf("%w: %s", cluster.ErrNoNode, p)
	}
	return sn, ch, h.end(h.rel(p), lose, err)
}

// Get reads a znode.
func (h *Session) Get(p string) ([]byte, cluster.Stat, error) {
	sn, _, err := h.read("get", p, watchData, false)
	if err != nil {
		return nil, cluster.Stat{}, err
	}
	return sn.data, sn.stat, nil
}

// GetW reads a znode and watches its data and deletion.
func (h *Session) GetW(p string) ([]byte, cluster.Stat, <-chan cluster.WatchEvent, error) {
	sn, ch, err := h.read("getw", p, watchData, true)
	if err != nil {
		return nil, cluster.Stat{}, nil, err
	}
	return sn.data, sn.stat, ch, nil
}

// Children lists a znode's children (sorted here; ZooKeeper's are unsorted).
func (h *Session) Children(p string) ([]string, cluster.Stat, error) {
	sn, _, err := h.read("children", p, watchChild, false)
	if err != nil {
		return nil, cluster.Stat{}, err
	}
	return sn.names, sn.stat, nil
}

// ChildrenW lists a znode's children and watches the list and deletion.
func (h *Session) ChildrenW(p string) ([]string, cluster.Stat, <-chan cluster.WatchEvent, error) {
	sn, ch, err := h.read("childrenw", p, watchChild, true)
	if err != nil {
		return nil, cluster.Stat{}, nil, err
	}
	return sn.names, sn.stat, ch, nil
}

// Exists tells whether a znode exists.
func (h *Session) Exists(p string) (bool, cluster.Stat, error) {
	sn, _, err := h.read("exists", p, watchExist, false)
	if err != nil || sn == nil {
		return false, cluster.Stat{}, err
	}
	return true, sn.stat, nil
}

// ExistsW tells whether a znode exists and watches its creation, data
// change and deletion.
func (h *Session) ExistsW(p string) (bool, cluster.Stat, <-chan cluster.WatchEvent, error) {
	sn, ch, err := h.read("existsw", p, watchExist, true)
	if err != nil {
		return false, cluster.Stat{}, nil, err
	}
	if sn == nil {
		return false, cluster.Stat{}, ch, nil
	}
	return true, sn.stat, ch, nil
}

// Create creates a znode.
func (h *Session) Create(p string, data []byte, mode cluster.CreateMode) (string, error) {
	res, err := h.Multi(cluster.Op{Kind: cluster.OpCreate, Path: p, Data: data, Mode: mode})
	if err != nil {
		return "", err
	}
	return res[0].Path, nil
}

// Set writes a znode's data if its version is version (-1: any).
func (h *Session) Set(p string, data []byte, version int32) (cluster.Stat, error) {
	res, err := h.Multi(cluster.Op{Kind: cluster.OpSet, Path: p, Data: data, Version: version})
	if err != nil {
		return cluster.Stat{}, err
	}
	return res[0].Stat, nil
}

// Delete removes a childless znode if its version is version (-1: any).
func (h *Session) Delete(p string, version int32) error {
	_, err := h.Multi(cluster.Op{Kind: cluster.OpDelete, Path: p, Version: version})
	return err
}

// Multi applies ops atomically.
func (h *Session) Multi(ops ...cluster.Op) ([]cluster.OpResult, error) {
	s := h.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, op := range ops {
		if err := checkOp(op); err != nil {
			if len(ops) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("multi op %d: %w", i, err)
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	name := "multi"
	if len(ops) == 1 {
		name = [...]string{"create", "set", "delete", "check"}[ops[0].Kind]
	}
	run, lose, err := h.begin(name, ops[0].Path)
	if !run {
		return nil, err
	}
	full := make([]cluster.Op, len(ops))
	for i, op := range ops {
		op.Path = h.full(op.Path)
		full[i] = op
	}
	res, err := s.apply(h, full)
	for i := range res {
		if res[i].Path != "" {
			res[i].Path = h.rel(res[i].Path)
		}
	}
	err = h.end(ops[0].Path, lose, err)
	if lose {
		return nil, err
	}
	return res, err
}

func checkOp(op cluster.Op) error {
	switch op.Kind {
	case cluster.OpCreate:
		switch op.Mode {
		case cluster.PersistentSequential, cluster.EphemeralSequential:
			return checkPath(op.Path + "0") // a sequential path may end in '/'
		case cluster.Persistent, cluster.Ephemeral:
			return checkPath(op.Path)
		}
		return fmt.Errorf("%w: create mode %d", cluster.ErrBadRequest, op.Mode)
	case cluster.OpSet, cluster.OpDelete, cluster.OpCheck:
		return checkPath(op.Path)
	}
	return fmt.Errorf("%w: multi op kind %d", cluster.ErrBadRequest, op.Kind)
}

// apply runs ops as one transaction, undoing all of them when one fails.
func (s *Server) apply(h *Session, ops []cluster.Op) ([]cluster.OpResult, error) {
	t := s.tree
	zxid := s.zxid + 1
	t.rec, t.undo = true, t.undo[:0]
	res := make([]cluster.OpResult, len(ops))
	var failed error
	for i, op := range ops {
		if failed != nil {
			res[i].Err = cluster.ErrRolledBack
			continue
		}
		var err error
		switch op.Kind {
		case cluster.OpCreate:
			res[i].Path, err = t.create(op.Path, op.Data, op.Mode, h.id, zxid)
		case cluster.OpSet:
			res[i].Stat, err = t.set(op.Path, op.Data, op.Version, zxid)
		case cluster.OpDelete:
			err = t.delete(op.Path, op.Version)
		case cluster.OpCheck:
			err = t.check(op.Path, op.Version)
		}
		if err != nil {
			failed, res[i].Err = err, err
		}
	}
	t.rec = false
	if failed != nil {
		for i := len(t.undo) - 1; i >= 0; i-- {
			t.undo[i]()
		}
		for i := range res {
			res[i].Path, res[i].Stat = "", cluster.Stat{}
		}
		t.undo = t.undo[:0]
		return res, failed
	}
	t.undo = t.undo[:0]
	s.zxid = zxid
	return res, nil
}
