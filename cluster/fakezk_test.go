package cluster

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// fakeZK is a small in-memory ZooKeeper for the controller and loader
// tests: znodes with data, version and czxid, ephemeral owners, and
// all-or-nothing multi. No watches. It stands in until cluster/zksim.
type fakeZK struct {
	nodes   map[string]*fakeNode
	zxid    int64
	session int64
	// failNext, when set, decides the outcome of the next Multi: applied
	// tells whether its ops take effect, err what it returns.
	failNext func(ops []Op) (applied bool, err error)
}

type fakeNode struct {
	data    []byte
	version int32
	czxid   int64
	owner   int64
}

func newFakeZK() *fakeZK {
	z := &fakeZK{nodes: map[string]*fakeNode{"/": {}}, session: 0x100}
	for _, p := range []string{"/brokers", "/brokers/ids", "/brokers/topics", "/admin", "/admin/delete_topics",
		"/config", "/config/topics", "/log_dir_event_notification"} {
		z.mustCreate(p, nil, Persistent)
	}
	return z
}

func (z *fakeZK) mustCreate(p string, data []byte, mode CreateMode) {
	if _, err := z.Create(p, data, mode); err != nil {
		panic(err)
	}
}

func (z *fakeZK) mustSet(p string, data []byte) {
	if _, err := z.Set(p, data, -1); err != nil {
		panic(err)
	}
}

func (z *fakeZK) Get(p string) ([]byte, Stat, error) {
	n := z.nodes[p]
	if n == nil {
		return nil, Stat{}, fmt.Errorf("get %s: %w", p, ErrNoNode)
	}
	return slices.Clone(n.data), z.stat(p), nil
}

func (z *fakeZK) stat(p string) Stat {
	n := z.nodes[p]
	return Stat{Version: n.version, Czxid: n.czxid, EphemeralOwner: n.owner, NumChildren: int32(len(z.kids(p)))}
}

func (z *fakeZK) kids(p string) []string {
	prefix := strings.TrimSuffix(p, "/") + "/"
	var out []string
	for q := range z.nodes {
		if q != "/" && strings.HasPrefix(q, prefix) && !strings.Contains(q[len(prefix):], "/") {
			out = append(out, q[len(prefix):])
		}
	}
	slices.Sort(out)
	return out
}

func (z *fakeZK) GetW(p string) ([]byte, Stat, <-chan WatchEvent, error) {
	d, s, err := z.Get(p)
	return d, s, nil, err
}

func (z *fakeZK) Children(p string) ([]string, Stat, error) {
	if z.nodes[p] == nil {
		return nil, Stat{}, fmt.Errorf("children %s: %w", p, ErrNoNode)
	}
	return z.kids(p), z.stat(p), nil
}

func (z *fakeZK) ChildrenW(p string) ([]string, Stat, <-chan WatchEvent, error) {
	k, s, err := z.Children(p)
	return k, s, nil, err
}

func (z *fakeZK) Exists(p string) (bool, Stat, error) {
	if z.nodes[p] == nil {
		return false, Stat{}, nil
	}
	return true, z.stat(p), nil
}

func (z *fakeZK) ExistsW(p string) (bool, Stat, <-chan WatchEvent, error) {
	ok, s, err := z.Exists(p)
	return ok, s, nil, err
}

func (z *fakeZK) Create(p string, data []byte, mode CreateMode) (string, error) {
	if z.nodes[p] != nil {
		return "", fmt.Errorf("create %s: %w", p, ErrNodeExists)
	}
	if z.nodes[path.Dir(p)] == nil {
		return "", fmt.Errorf("create %s: parent: %w", p, ErrNoNode)
	}
	z.zxid++
	n := &fakeNode{data: slices.Clone(data), czxid: z.zxid}
	if mode == Ephemeral {
		n.owner = z.session
	}
	z.nodes[p] = n
	return p, nil
}

func (z *fakeZK) Set(p string, data []byte, version int32) (Stat, error) {
	n := z.nodes[p]
	if n == nil {
		return Stat{}, fmt.Errorf("set %s: %w", p, ErrNoNode)
	}
	if version != -1 && version != n.version {
		return Stat{}, fmt.Errorf("set %s at %d (is %d): %w", p, version, n.version, ErrBadVersion)
	}
	z.zxid++
	n.data = slices.Clone(data)
	n.version++
	return z.stat(p), nil
}

func (z *fakeZK) Delete(p string, version int32) error {
	n := z.nodes[p]
	if n == nil {
		return fmt.Errorf("delete %s: %w", p, ErrNoNode)
	}
	if version != -1 && version != n.version {
		return fmt.Errorf("delete %s: %w", p, ErrBadVersion)
	}
	if len(z.kids(p)) > 0 {
		return fmt.Errorf("delete %s: %w", p, ErrNotEmpty)
	}
	z.zxid++
	delete(z.nodes, p)
	return nil
}

func (z *fakeZK) Multi(ops ...Op) ([]OpResult, error) {
	applied, injected := true, error(nil)
	if z.failNext != nil {
		f := z.failNext
		z.failNext = nil
		applied, injected = f(ops)
		if !applied {
			return nil, injected
		}
	}
	saved := map[string]*fakeNode{}
	for p, n := range z.nodes {
		c := *n
		saved[p] = &c
	}
	zxid := z.zxid
	res := make([]OpResult, len(ops))
	for i, op := range ops {
		var err error
		switch op.Kind {
		case OpCreate:
			res[i].Path, err = z.Create(op.Path, op.Data, op.Mode)
		case OpSet:
			res[i].Stat, err = z.Set(op.Path, op.Data, op.Version)
		case OpDelete:
			err = z.Delete(op.Path, op.Version)
		case OpCheck:
			if n := z.nodes[op.Path]; n == nil {
				err = ErrNoNode
			} else if n.version != op.Version {
				err = ErrBadVersion
			}
		}
		if err != nil {
			z.nodes, z.zxid = saved, zxid
			for j := range res {
				res[j] = OpResult{Err: ErrRolledBack}
			}
			res[i].Err = err
			return res, err
		}
	}
	return res, injected
}

func (z *fakeZK) SessionID() int64            { return z.session }
func (z *fakeZK) Events() <-chan SessionEvent { return nil }
func (z *fakeZK) Close()                      {}

var _ ZK = (*fakeZK)(nil)
