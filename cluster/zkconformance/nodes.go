package zkconformance

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/stratalog/strata/cluster"
)

func testCreateModes(x *h) {
	z := x.session()
	if got := x.create(z, x.p("/per"), "p", cluster.Persistent); got != x.p("/per") {
		x.t.Fatalf("created %s", got)
	}
	if got := x.create(z, x.p("/eph"), "e", cluster.Ephemeral); got != x.p("/eph") {
		x.t.Fatalf("created %s", got)
	}
	data, st := x.get(z, x.p("/per"))
	if data != "p" || st.EphemeralOwner != 0 || st.Version != 0 || st.Czxid == 0 {
		x.t.Fatalf("persistent: %q %+v", data, st)
	}
	data, est := x.get(z, x.p("/eph"))
	if data != "e" || est.EphemeralOwner != z.SessionID() || est.Czxid <= st.Czxid {
		x.t.Fatalf("ephemeral: %q %+v (session 0x%x, persistent czxid %d)", data, est, z.SessionID(), st.Czxid)
	}
	// binary and empty data round trip
	bin := []byte{0, 1, 2, 0xff, '\n'}
	if _, err := z.Create(x.p("/bin"), bin, cluster.Persistent); err != nil {
		x.t.Fatal(err)
	}
	if b, _, err := z.Get(x.p("/bin")); err != nil || !bytes.Equal(b, bin) {
		x.t.Fatalf("binary data %q %v", b, err)
	}
	x.create(z, x.p("/empty"), "", cluster.Persistent)
	if b, _, err := z.Get(x.p("/empty")); err != nil || len(b) != 0 {
		x.t.Fatalf("empty data %q %v", b, err)
	}
	_, err := z.Create(x.p("/per"), nil, cluster.Persistent)
	x.is(err, cluster.ErrNodeExists, "create existing")
	_, err = z.Create(x.p("/no/parent"), nil, cluster.Persistent)
	x.is(err, cluster.ErrNoNode, "create without parent")
	_, err = z.Create(x.p("/eph/child"), nil, cluster.Persistent)
	x.is(err, cluster.ErrBadRequest, "child of an ephemeral")
	if ok, st, err := z.Exists(x.p("/none")); ok || err != nil || st != (cluster.Stat{}) {
		x.t.Fatalf("exists of a missing znode: %v %+v %v", ok, st, err)
	}
	_, _, err = z.Get(x.p("/none"))
	x.is(err, cluster.ErrNoNode, "get missing")
	_, _, err = z.Children(x.p("/none"))
	x.is(err, cluster.ErrNoNode, "children missing")
	if got := children(x, z, x.root); got != "bin,empty,eph,per" {
		x.t.Fatalf("children %q", got)
	}
	_, rst, err := z.Get(x.root)
	if err != nil || rst.NumChildren != 4 {
		x.t.Fatalf("root stat %+v %v", rst, err)
	}
}

func testBadPaths(x *h) {
	z := x.session()
	for _, p := range []string{"", "rel", x.p("/a/"), x.p("//a"), x.p("/./a"), x.p("/../a"), x.p("/a\x00b"), x.p("/a\x01")} {
		_, err := z.Create(p, nil, cluster.Persistent)
		x.is(err, cluster.ErrBadRequest, fmt.Sprintf("create %q", p))
		_, _, err = z.Get(p)
		x.is(err, cluster.ErrBadRequest, fmt.Sprintf("get %q", p))
		_, err = z.Multi(cluster.Op{Kind: cluster.OpCheck, Path: p})
		x.is(err, cluster.ErrBadRequest, fmt.Sprintf("multi check %q", p))
	}
	_, err := z.Create(x.p("/m"), nil, cluster.CreateMode(42))
	x.is(err, cluster.ErrBadRequest, "bad create mode")
	x.is(z.Delete("/", -1), cluster.ErrBadRequest, "delete /")
}

func testSequential(x *h) {
	z := x.session()
	x.create(z, x.p("/q"), "", cluster.Persistent)
	a := x.create(z, x.p("/q/n-"), "a", cluster.PersistentSequential)
	b := x.create(z, x.p("/q/n-"), "b", cluster.EphemeralSequential)
	if a != x.p("/q/n-0000000000") || b != x.p("/q/n-0000000001") {
		x.t.Fatalf("sequential paths %s %s", a, b)
	}
	if _, st := x.get(z, b); st.EphemeralOwner != z.SessionID() {
		x.t.Fatalf("ephemeral sequential owner %x", st.EphemeralOwner)
	}
	x.must(z.Delete(a, -1), "delete")
	// the suffix counts the children created: a delete gives no number back
	if c := x.create(z, x.p("/q/n-"), "", cluster.PersistentSequential); c != x.p("/q/n-0000000002") {
		x.t.Fatalf("after a delete: %s", c)
	}
	// a path ending in '/' names the child by the number alone
	if d := x.create(z, x.p("/q/"), "", cluster.PersistentSequential); d != x.p("/q/0000000003") {
		x.t.Fatalf("bare sequential: %s", d)
	}
	if !strings.HasSuffix(x.create(z, x.p("/q/"), "", cluster.PersistentSequential), "0000000004") {
		x.t.Fatal("sequence did not advance")
	}
}

func testVersions(x *h) {
	z := x.session()
	x.create(z, x.p("/v"), "0", cluster.Persistent)
	_, st0 := x.get(z, x.p("/v"))
	st, err := z.Set(x.p("/v"), []byte("1"), 0)
	if err != nil || st.Version != 1 || st.Czxid != st0.Czxid {
		x.t.Fatalf("set v0: %+v %v", st, err)
	}
	_, err = z.Set(x.p("/v"), []byte("x"), 0)
	x.is(err, cluster.ErrBadVersion, "set stale version")
	if data, _ := x.get(z, x.p("/v")); data != "1" {
		x.t.Fatalf("a failed set changed the data to %q", data)
	}
	if st, err = z.Set(x.p("/v"), []byte("2"), -1); err != nil || st.Version != 2 {
		x.t.Fatalf("set any: %+v %v", st, err)
	}
	_, err = z.Set(x.p("/none"), nil, -1)
	x.is(err, cluster.ErrNoNode, "set missing")
	x.is(z.Delete(x.p("/v"), 1), cluster.ErrBadVersion, "delete stale version")
	x.create(z, x.p("/v/c"), "", cluster.Persistent)
	x.is(z.Delete(x.p("/v"), 2), cluster.ErrNotEmpty, "delete with a child")
	x.must(z.Delete(x.p("/v/c"), 0), "delete child")
	x.must(z.Delete(x.p("/v"), 2), "delete")
	x.is(z.Delete(x.p("/v"), -1), cluster.ErrNoNode, "delete missing")
	_, err = z.Multi(cluster.Op{Kind: cluster.OpCheck, Path: x.p("/v"), Version: 0})
	x.is(err, cluster.ErrNoNode, "check missing")
}

func testMultiCommit(x *h) {
	z := x.session()
	x.create(z, x.p("/old"), "o", cluster.Persistent)
	x.create(z, x.p("/gone"), "", cluster.Persistent)
	res, err := z.Multi(
		cluster.Op{Kind: cluster.OpCheck, Path: x.p("/old"), Version: 0},
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/new"), Data: []byte("n"), Mode: cluster.Persistent},
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/new/child"), Mode: cluster.Persistent}, // sees the op before it
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/new/s-"), Mode: cluster.PersistentSequential},
		cluster.Op{Kind: cluster.OpSet, Path: x.p("/old"), Data: []byte("o2"), Version: 0},
		cluster.Op{Kind: cluster.OpSet, Path: x.p("/old"), Data: []byte("o3"), Version: 1},
		cluster.Op{Kind: cluster.OpDelete, Path: x.p("/gone"), Version: 0},
	)
	x.must(err, "multi")
	if len(res) != 7 || res[1].Path != x.p("/new") || res[2].Path != x.p("/new/child") ||
		res[3].Path != x.p("/new/s-0000000001") || res[5].Stat.Version != 2 {
		x.t.Fatalf("multi results %+v", res)
	}
	for i, r := range res {
		if r.Err != nil {
			x.t.Fatalf("op %d: %v", i, r.Err)
		}
	}
	if data, st := x.get(z, x.p("/old")); data != "o3" || st.Version != 2 {
		x.t.Fatalf("/old %q %+v", data, st)
	}
	_, a := x.get(z, x.p("/new"))
	_, b := x.get(z, x.p("/new/child"))
	if a.Czxid != b.Czxid {
		x.t.Fatalf("one multi, two zxids: %d %d", a.Czxid, b.Czxid)
	}
	if x.exists(z, x.p("/gone")) {
		x.t.Fatal("/gone still there")
	}
	if res, err := z.Multi(); err != nil || len(res) != 0 {
		x.t.Fatalf("empty multi: %v %v", res, err)
	}
}

func testMultiRollback(x *h) {
	z := x.session()
	x.create(z, x.p("/a"), "a", cluster.Persistent)
	x.create(z, x.p("/q"), "", cluster.Persistent)
	before := children(x, z, x.root)
	ops := []cluster.Op{
		{Kind: cluster.OpCreate, Path: x.p("/b"), Mode: cluster.Persistent},
		{Kind: cluster.OpCreate, Path: x.p("/q/s-"), Mode: cluster.PersistentSequential},
		{Kind: cluster.OpSet, Path: x.p("/a"), Data: []byte("changed"), Version: -1},
		{Kind: cluster.OpCheck, Path: x.p("/a"), Version: 0}, // fails: the set made it 1
		{Kind: cluster.OpDelete, Path: x.p("/a"), Version: -1},
	}
	res, err := z.Multi(ops...)
	x.is(err, cluster.ErrBadVersion, "multi")
	if len(res) != len(ops) {
		x.t.Fatalf("%d results for %d ops", len(res), len(ops))
	}
	for i, r := range res {
		switch {
		case i < 3 && r.Err != nil:
			x.t.Fatalf("op %d before the failure: %v", i, r.Err)
		case i == 3 && !errors.Is(r.Err, cluster.ErrBadVersion):
			x.t.Fatalf("failing op: %v", r.Err)
		case i > 3 && !errors.Is(r.Err, cluster.ErrRolledBack):
			x.t.Fatalf("op %d after the failure: %v", i, r.Err)
		}
		if r.Path != "" {
			x.t.Fatalf("op %d of a failed multi reports path %q", i, r.Path)
		}
	}
	if after := children(x, z, x.root); after != before {
		x.t.Fatalf("a failed multi changed the children: %q -> %q", before, after)
	}
	if data, st := x.get(z, x.p("/a")); data != "a" || st.Version != 0 {
		x.t.Fatalf("a failed multi changed /a: %q %+v", data, st)
	}
	// the sequence number was not used
	if s := x.create(z, x.p("/q/s-"), "", cluster.PersistentSequential); s != x.p("/q/s-0000000000") {
		x.t.Fatalf("sequence after a rollback: %s", s)
	}
	// the first failure's error, whatever its kind
	_, err = z.Multi(
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/a"), Mode: cluster.Persistent},
		cluster.Op{Kind: cluster.OpDelete, Path: x.p("/none"), Version: -1},
	)
	x.is(err, cluster.ErrNodeExists, "multi create existing")
	res, err = z.Multi(
		cluster.Op{Kind: cluster.OpDelete, Path: x.p("/none"), Version: -1},
		cluster.Op{Kind: cluster.OpCreate, Path: x.p("/a"), Mode: cluster.Persistent},
	)
	x.is(err, cluster.ErrNoNode, "multi delete missing")
	if len(res) != 2 || !errors.Is(res[1].Err, cluster.ErrRolledBack) {
		x.t.Fatalf("results %+v", res)
	}
}

func testBigMulti(x *h) {
	z := x.session()
	const n = 1000
	ops := make([]cluster.Op, 0, 2*n+1)
	ops = append(ops, cluster.Op{Kind: cluster.OpCreate, Path: x.p("/big"), Mode: cluster.Persistent})
	state := []byte(`{"controller_epoch":5,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2,3]}`)
	for i := 0; i < n; i++ {
		ops = append(ops, cluster.Op{Kind: cluster.OpCreate, Path: fmt.Sprintf("%s/big/%d", x.root, i), Data: state, Mode: cluster.Persistent})
	}
	for i := 0; i < n; i++ {
		ops = append(ops, cluster.Op{Kind: cluster.OpSet, Path: fmt.Sprintf("%s/big/%d", x.root, i), Data: state, Version: 0})
	}
	res, err := z.Multi(ops...)
	x.must(err, "multi of 2001 ops")
	if len(res) != len(ops) || res[2*n].Stat.Version != 1 {
		x.t.Fatalf("%d results, last %+v", len(res), res[len(res)-1])
	}
	if _, st := x.get(z, x.p("/big")); st.NumChildren != n {
		x.t.Fatalf("%d children", st.NumChildren)
	}
}
