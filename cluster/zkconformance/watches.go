package zkconformance

import (
	"github.com/stratalog/strata/cluster"
)

func (x *h) getW(z cluster.ZK, p string) <-chan cluster.WatchEvent {
	x.t.Helper()
	_, _, ch, err := z.GetW(p)
	x.must(err, "getw "+p)
	return ch
}

func (x *h) childrenW(z cluster.ZK, p string) <-chan cluster.WatchEvent {
	x.t.Helper()
	_, _, ch, err := z.ChildrenW(p)
	x.must(err, "childrenw "+p)
	return ch
}

func (x *h) existsW(z cluster.ZK, p string) (bool, <-chan cluster.WatchEvent) {
	x.t.Helper()
	ok, _, ch, err := z.ExistsW(p)
	x.must(err, "existsw "+p)
	return ok, ch
}

// barrier changes a znode another watch of z waits on and waits for it:
// ZooKeeper delivers a session's events in order, so whatever was due
// before it has come.
func (x *h) barrier(z cluster.ZK, name string) {
	x.t.Helper()
	p := x.p("/barrier-" + name)
	x.create(z, p, "", cluster.Persistent)
	ch := x.getW(z, p)
	x.must(z.Delete(p, -1), "delete barrier")
	x.fire(ch, cluster.NodeDeleted, p)
}

func testDataWatch(x *h) {
	z := x.session()
	x.create(z, x.p("/d"), "0", cluster.Persistent)
	x.create(z, x.p("/d/c"), "", cluster.Persistent)
	w := x.getW(z, x.p("/d"))
	// a child change does not fire a data watch
	x.create(z, x.p("/d/c2"), "", cluster.Persistent)
	x.barrier(z, "1")
	x.quiet(w, "data watch after a child was created")
	_, err := z.Set(x.p("/d"), []byte("1"), -1)
	x.must(err, "set")
	x.fire(w, cluster.NodeDataChanged, x.p("/d"))
	// one-shot: a second change needs a new watch
	w2 := x.getW(z, x.p("/d"))
	_, err = z.Set(x.p("/d"), []byte("2"), -1)
	x.must(err, "set")
	x.fire(w2, cluster.NodeDataChanged, x.p("/d"))
	// deletion fires a data watch
	x.must(z.Delete(x.p("/d/c"), -1), "delete")
	x.must(z.Delete(x.p("/d/c2"), -1), "delete")
	w3 := x.getW(z, x.p("/d"))
	x.must(z.Delete(x.p("/d"), -1), "delete")
	x.fire(w3, cluster.NodeDeleted, x.p("/d"))
	// no watch is left on a missing znode by GetW
	if _, _, ch, err := z.GetW(x.p("/d")); !isNoNode(err) || ch != nil {
		x.t.Fatalf("getw of a missing znode: %v %v", ch, err)
	}
}

func testChildWatch(x *h) {
	z := x.session()
	x.create(z, x.p("/c"), "", cluster.Persistent)
	w := x.childrenW(z, x.p("/c"))
	// a data change of the parent does not fire a child watch
	_, err := z.Set(x.p("/c"), []byte("x"), -1)
	x.must(err, "set")
	x.barrier(z, "1")
	x.quiet(w, "child watch after a data change")
	x.create(z, x.p("/c/a"), "", cluster.Persistent)
	x.fire(w, cluster.NodeChildrenChanged, x.p("/c"))
	// a grandchild or a child's data change does not fire it
	w = x.childrenW(z, x.p("/c"))
	x.create(z, x.p("/c/a/g"), "", cluster.Persistent)
	_, err = z.Set(x.p("/c/a"), []byte("y"), -1)
	x.must(err, "set")
	x.barrier(z, "2")
	x.quiet(w, "child watch after a grandchild")
	// a deleted child fires it
	x.must(z.Delete(x.p("/c/a/g"), -1), "delete")
	x.must(z.Delete(x.p("/c/a"), -1), "delete")
	x.fire(w, cluster.NodeChildrenChanged, x.p("/c"))
	// the watched znode's deletion fires NodeDeleted
	w = x.childrenW(z, x.p("/c"))
	x.must(z.Delete(x.p("/c"), -1), "delete")
	x.fire(w, cluster.NodeDeleted, x.p("/c"))
}

func testExistsWatch(x *h) {
	z := x.session()
	ok, w := x.existsW(z, x.p("/e"))
	if ok || w == nil {
		x.t.Fatalf("existsw of a missing znode: %v %v", ok, w)
	}
	x.create(z, x.p("/e"), "", cluster.Persistent)
	x.fire(w, cluster.NodeCreated, x.p("/e"))
	ok, w = x.existsW(z, x.p("/e"))
	if !ok {
		x.t.Fatal("existsw: missing")
	}
	_, err := z.Set(x.p("/e"), []byte("1"), -1)
	x.must(err, "set")
	x.fire(w, cluster.NodeDataChanged, x.p("/e"))
	_, w = x.existsW(z, x.p("/e"))
	x.must(z.Delete(x.p("/e"), -1), "delete")
	x.fire(w, cluster.NodeDeleted, x.p("/e"))
	// two watches of different kinds on one znode both fire once
	x.create(z, x.p("/e"), "", cluster.Persistent)
	_, we := x.existsW(z, x.p("/e"))
	wd := x.getW(z, x.p("/e"))
	_, err = z.Set(x.p("/e"), []byte("2"), -1)
	x.must(err, "set")
	x.fire(we, cluster.NodeDataChanged, x.p("/e"))
	x.fire(wd, cluster.NodeDataChanged, x.p("/e"))
}

func testWatchOtherSession(x *h) {
	a := x.session()
	b := x.open(OpenOptions{})
	x.create(a, x.p("/o"), "", cluster.Persistent)
	wd := x.getW(b, x.p("/o"))
	wc := x.childrenW(b, x.p("/o"))
	_, wx := x.existsW(b, x.p("/o/k"))
	x.create(a, x.p("/o/k"), "", cluster.Ephemeral)
	x.fire(wc, cluster.NodeChildrenChanged, x.p("/o"))
	x.fire(wx, cluster.NodeCreated, x.p("/o/k"))
	_, err := a.Set(x.p("/o"), []byte("1"), -1)
	x.must(err, "set")
	x.fire(wd, cluster.NodeDataChanged, x.p("/o"))
}

func testMultiWatch(x *h) {
	z := x.session()
	x.create(z, x.p("/m"), "", cluster.Persistent)
	w := x.getW(z, x.p("/m"))
	wc := x.childrenW(z, x.p("/m"))
	// a failed multi fires nothing
	_, err := z.Multi(
		cluster.Op{Kind: cluster.OpSet, Path: x.p("/m"), Data: []byte("1"), Version: -1},
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/m/x"), Mode: cluster.Persistent},
		cluster.Op{Kind: cluster.OpCheck, Path: x.p("/m"), Version: 7},
	)
	x.is(err, cluster.ErrBadVersion, "multi")
	x.barrier(z, "1")
	x.quiet(w, "data watch after a failed multi")
	x.quiet(wc, "child watch after a failed multi")
	// a committed one fires each watch once
	_, err = z.Multi(
		cluster.Op{Kind: cluster.OpSet, Path: x.p("/m"), Data: []byte("1"), Version: -1},
		cluster.Op{Kind: cluster.OpSet, Path: x.p("/m"), Data: []byte("2"), Version: -1},
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/m/x"), Mode: cluster.Persistent},
	)
	x.must(err, "multi")
	x.fire(w, cluster.NodeDataChanged, x.p("/m"))
	x.fire(wc, cluster.NodeChildrenChanged, x.p("/m"))
}

func isNoNode(err error) bool {
	return err != nil && errorsIs(err, cluster.ErrNoNode)
}
