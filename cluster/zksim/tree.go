package zksim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stratalog/strata/cluster"
)

// node is one znode.
type node struct {
	path     string
	data     []byte
	version  int32
	cversion int32 // child creations: the next sequential suffix (deletes do not count, as in ZooKeeper 3.8)
	czxid    int64
	mzxid    int64
	owner    int64 // ephemeral owner session, 0 for persistent
	children map[string]*node
}

func (n *node) stat() cluster.Stat {
	return cluster.Stat{Version: n.version, Czxid: n.czxid, EphemeralOwner: n.owner, NumChildren: int32(len(n.children))}
}

func (n *node) childNames() []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func parentOf(p string) (string, string) {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

// tree is the znode tree with an undo log for multi.
type tree struct {
	nodes map[string]*node
	undo  []func() // while recording: how to reverse each change
	rec   bool
	fired []fired // watch triggers of the current transaction
}

type fired struct {
	typ  cluster.WatchEventType
	path string
}

func newTree() *tree {
	t := &tree{nodes: map[string]*node{}}
	t.nodes["/"] = &node{path: "/", children: map[string]*node{}}
	// ZooKeeper's own subtree
	for _, p := range []string{"/zookeeper", "/zookeeper/config", "/zookeeper/quota"} {
		parent, name := parentOf(p)
		n := &node{path: p, children: map[string]*node{}}
		t.nodes[p] = n
		t.nodes[parent].children[name] = n
	}
	return t
}

func (t *tree) record(f func()) {
	if t.rec {
		t.undo = append(t.undo, f)
	}
}

func (t *tree) fire(typ cluster.WatchEventType, p string) { t.fired = append(t.fired, fired{typ, p}) }

func errf(sentinel error, p string) error { return fmt.Errorf("%w: %s", sentinel, p) }

// create adds a znode; p has been checked.
func (t *tree) create(p string, data []byte, mode cluster.CreateMode, session, zxid int64) (string, error) {
	parentPath, name := parentOf(p)
	parent := t.nodes[parentPath]
	if parent == nil {
		return "", errf(cluster.ErrNoNode, p)
	}
	if parent.owner != 0 {
		return "", fmt.Errorf("%w: %s: ephemeral nodes may not have children", cluster.ErrBadRequest, p)
	}
	if mode == cluster.PersistentSequential || mode == cluster.EphemeralSequential {
		name += fmt.Sprintf("%010d", parent.cversion)
		p = joinPath(parentPath, name)
	}
	if t.nodes[p] != nil {
		return "", errf(cluster.ErrNodeExists, p)
	}
	n := &node{path: p, data: clone(data), czxid: zxid, mzxid: zxid, children: map[string]*node{}}
	if mode == cluster.Ephemeral || mode == cluster.EphemeralSequential {
		n.owner = session
	}
	t.nodes[p] = n
	parent.children[name] = n
	parent.cversion++
	t.record(func() {
		delete(t.nodes, p)
		delete(parent.children, name)
		parent.cversion--
	})
	t.fire(cluster.NodeCreated, p)
	t.fire(cluster.NodeChildrenChanged, parentPath)
	return p, nil
}

func (t *tree) set(p string, data []byte, version int32, zxid int64) (cluster.Stat, error) {
	n := t.nodes[p]
	if n == nil {
		return cluster.Stat{}, errf(cluster.ErrNoNode, p)
	}
	if version != -1 && version != n.version {
		return cluster.Stat{}, errf(cluster.ErrBadVersion, p)
	}
	old, oldVersion, oldM := n.data, n.version, n.mzxid
	n.data, n.version, n.mzxid = clone(data), n.version+1, zxid
	t.record(func() { n.data, n.version, n.mzxid = old, oldVersion, oldM })
	t.fire(cluster.NodeDataChanged, p)
	return n.stat(), nil
}

func (t *tree) delete(p string, version int32) error {
	if p == "/" || p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return fmt.Errorf("%w: %s: cannot delete", cluster.ErrBadRequest, p)
	}
	n := t.nodes[p]
	if n == nil {
		return errf(cluster.ErrNoNode, p)
	}
	if version != -1 && version != n.version {
		return errf(cluster.ErrBadVersion, p)
	}
	if len(n.children) > 0 {
		return errf(cluster.ErrNotEmpty, p)
	}
	parentPath, name := parentOf(p)
	parent := t.nodes[parentPath]
	delete(t.nodes, p)
	delete(parent.children, name)
	t.record(func() {
		t.nodes[p] = n
		parent.children[name] = n
	})
	t.fire(cluster.NodeDeleted, p)
	t.fire(cluster.NodeChildrenChanged, parentPath)
	return nil
}

func (t *tree) check(p string, version int32) error {
	n := t.nodes[p]
	if n == nil {
		return errf(cluster.ErrNoNode, p)
	}
	if version != n.version {
		return errf(cluster.ErrBadVersion, p)
	}
	return nil
}

// ephemerals lists session's ephemeral znodes, sorted.
func (t *tree) ephemerals(session int64) []string {
	var ps []string
	for p, n := range t.nodes {
		if n.owner == session {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
