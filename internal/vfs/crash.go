package vfs

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"iter"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// DefaultTornPoints is how many torn states a file with unsynced writes offers
// when CrashOptions.TornPoints is 0.
const DefaultTornPoints = 3

// CrashOptions choose the state CrashClone returns and shape the states
// CrashStates enumerates.
//
// A crash state is one choice per "dimension": every file with unsynced changes
// and every directory with unsynced entry changes that is reachable under some
// choice. A file offers, in this order and without duplicates (by content):
//
//	0 lose:    the synced bytes only
//	1 keep:    the current bytes
//	  torn:    the synced bytes plus the first k units of the unsynced changes
//	           (a unit is a written byte or a truncate), for TornPoints values of k
//	           spread evenly over (0, units), so cuts fall inside writes
//	  zero:    the synced bytes extended with zeros to the current size
//	  garbage: the synced bytes extended with garbage to the current size
//
// (zero and garbage only when the current size exceeds the synced size). A
// directory with n unsynced entry changes offers the durable entries plus the first
// j changes: j = 0 (lose), j = n (keep), then 1..n-1, without duplicates.
type CrashOptions struct {
	// Rand, if set, makes CrashClone pick every dimension's variant uniformly at
	// random. CrashStates ignores it.
	Rand *rand.Rand
	// KeepUnsynced makes CrashClone (with Rand nil) keep every unsynced change: the
	// state a process crash, not a power loss, leaves. By default CrashClone loses
	// every unsynced change.
	KeepUnsynced bool
	// TornPoints is the number of torn states per file: 0 means DefaultTornPoints,
	// a negative number means none.
	TornPoints int
	// NoExtend leaves out the zero- and garbage-extended states.
	NoExtend bool
}

func (o CrashOptions) tornPoints() int {
	switch {
	case o.TornPoints == 0:
		return DefaultTornPoints
	case o.TornPoints < 0:
		return 0
	}
	return o.TornPoints
}

// CrashClone returns a new, independent filesystem holding a state a power loss
// could leave behind (see CrashOptions). Everything in it is durable. Open files of
// m are not carried over.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	p := m.plan(opts)
	choice := make([]int, len(p.dims))
	for i, d := range p.dims {
		switch {
		case opts.Rand != nil:
			choice[i] = opts.Rand.IntN(d.numVariants())
		case opts.KeepUnsynced:
			choice[i] = d.keep
		}
	}
	return p.build(choice)
}

// AllCrashStates enumerates the distinct states a power loss at this moment could
// leave (see CrashOptions), each with a description of the choices that made it.
// The first state loses every unsynced change. The set is fixed when
// AllCrashStates is called; m may be changed while iterating. Each state is an
// independent filesystem; building one costs O(number of files and directories):
// file contents are shared copy-on-write.
//
// The number of states is the number of distinct filesystem contents (paths,
// directories, file bytes) in the product of the dimensions' variants; the product
// counts a file's variants once more for every choice of its directories under
// which it is reachable.
func (m *MemFS) AllCrashStates(opts CrashOptions) iter.Seq2[string, *MemFS] {
	p := m.plan(opts)
	return func(yield func(string, *MemFS) bool) {
		seen := map[uint64]struct{}{}
		choice := make([]int, len(p.dims))
		for {
			fp := p.fingerprint(choice)
			if _, dup := seen[fp]; !dup {
				seen[fp] = struct{}{}
				if !yield(p.describe(choice), p.build(choice)) {
					return
				}
			}
			i := 0
			for ; i < len(choice); i++ {
				choice[i]++
				if choice[i] < p.dims[i].numVariants() {
					break
				}
				choice[i] = 0
			}
			if i == len(choice) {
				return
			}
		}
	}
}

// CrashStates returns the first max states of AllCrashStates (all if max <= 0).
func (m *MemFS) CrashStates(opts CrashOptions, max int) []*MemFS {
	var out []*MemFS
	for _, fs := range m.AllCrashStates(opts) {
		out = append(out, fs)
		if max > 0 && len(out) == max {
			break
		}
	}
	return out
}

// crashPlan is an immutable snapshot of every node reachable in some crash state,
// with each node's possible post-crash contents.
type crashPlan struct {
	seed   maphash.Seed
	root   *planNode
	byNode map[*memNode]*planNode
	dims   []*planNode
}

type planNode struct {
	path  string
	isDir bool
	mode  os.FileMode
	mtime time.Time
	keep  int // index of the "keep everything" variant
	descs []string
	dim   int // index into crashPlan.dims, or -1

	// Directories: entry variants and their sorted names.
	entries []map[string]*memNode
	names   [][]string
	// Files: content variants (immutable) and their hashes.
	datas [][]byte
	sums  []uint64
}

func (pn *planNode) numVariants() int { return len(pn.descs) }

func (m *MemFS) plan(opts CrashOptions) *crashPlan {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &crashPlan{seed: maphash.MakeSeed(), byNode: map[*memNode]*planNode{}}
	p.root = p.add(m.root, "/", opts)
	queue := []*planNode{p.root}
	for len(queue) > 0 {
		pn := queue[0]
		queue = queue[1:]
		if !pn.isDir {
			continue
		}
		var all []string
		for _, names := range pn.names {
			all = append(all, names...)
		}
		slices.Sort(all)
		all = slices.Compact(all)
		for _, name := range all {
			for _, ents := range pn.entries {
				c := ents[name]
				if c == nil || p.byNode[c] != nil {
					continue
				}
				queue = append(queue, p.add(c, path.Join(pn.path, name), opts))
			}
		}
	}
	return p
}

func (p *crashPlan) add(n *memNode, name string, opts CrashOptions) *planNode {
	pn := &planNode{path: name, isDir: n.isDir, mode: n.mode, mtime: n.mtime, dim: -1}
	p.byNode[n] = pn
	if n.isDir {
		pn.dirVariants(n)
	} else {
		pn.fileVariants(n, opts, p.seed)
	}
	if pn.numVariants() > 1 {
		pn.dim = len(p.dims)
		p.dims = append(p.dims, pn)
	}
	return pn
}

func (pn *planNode) dirVariants(n *memNode) {
	states := []map[string]*memNode{maps.Clone(n.durable)}
	for _, op := range n.dirOps {
		next := maps.Clone(states[len(states)-1])
		for _, c := range op {
			if c.node == nil {
				delete(next, c.name)
			} else {
				next[c.name] = c.node
			}
		}
		states = append(states, next)
	}
	nops := len(n.dirOps)
	order := []int{0}
	if nops > 0 {
		order = append(order, nops)
		for j := 1; j < nops; j++ {
			order = append(order, j)
		}
	}
	for _, j := range order {
		idx := slices.IndexFunc(pn.entries, func(e map[string]*memNode) bool { return maps.Equal(e, states[j]) })
		if idx < 0 {
			idx = len(pn.entries)
			pn.entries = append(pn.entries, states[j])
			pn.names = append(pn.names, slices.Sorted(maps.Keys(states[j])))
			switch j {
			case 0:
				pn.descs = append(pn.descs, fmt.Sprintf("lost %d entry changes", nops))
			case nops:
				pn.descs = append(pn.descs, fmt.Sprintf("kept %d entry changes", nops))
			default:
				pn.descs = append(pn.descs, fmt.Sprintf("kept %d/%d entry changes", j, nops))
			}
		}
		if j == nops {
			pn.keep = idx
		}
	}
}

func (pn *planNode) fileVariants(n *memNode, opts CrashOptions, seed maphash.Seed) {
	addv := func(data []byte, desc string) int {
		for i, d := range pn.datas {
			if bytes.Equal(d, data) {
				return i
			}
		}
		pn.datas = append(pn.datas, data)
		pn.sums = append(pn.sums, maphash.Bytes(seed, data))
		pn.descs = append(pn.descs, desc)
		return len(pn.datas) - 1
	}
	synced := n.synced[:len(n.synced):len(n.synced)]
	addv(synced, "lost unsynced changes")
	if len(n.pending) == 0 {
		return
	}
	cur := n.freeze(len(n.data))
	pn.keep = addv(cur, "kept unsynced changes")

	units := 0
	appendOnly := true
	end := int64(len(synced))
	for _, op := range n.pending {
		if op.truncate {
			units++
			appendOnly = false
			continue
		}
		units += len(op.data)
		if op.off != end {
			appendOnly = false
		}
		end = op.off + int64(len(op.data))
	}
	tp := opts.tornPoints()
	var ks []int
	if units-1 <= tp {
		for k := 1; k < units; k++ {
			ks = append(ks, k)
		}
	} else {
		for i := 1; i <= tp; i++ {
			ks = append(ks, i*units/(tp+1))
		}
	}
	for _, k := range ks {
		var data []byte
		if appendOnly {
			data = n.freeze(len(synced) + k)
		} else {
			data = applyOps(synced, n.pending, k)
		}
		addv(data, fmt.Sprintf("torn after %d/%d unsynced units", k, units))
	}
	if !opts.NoExtend && len(n.data) > len(synced) {
		z := make([]byte, len(n.data))
		copy(z, synced)
		addv(z, fmt.Sprintf("zero-extended %d->%d", len(synced), len(n.data)))
		g := make([]byte, len(n.data))
		copy(g, synced)
		x := uint64(len(synced))<<32 ^ uint64(len(n.data)) ^ 0x9e3779b97f4a7c15
		for i := len(synced); i < len(g); i++ {
			x = x*6364136223846793005 + 1442695040888963407
			g[i] = byte(x >> 56)
		}
		addv(g, fmt.Sprintf("garbage-extended %d->%d", len(synced), len(n.data)))
	}
}

// applyOps returns base with the first units units of ops applied.
func applyOps(base []byte, ops []fileOp, units int) []byte {
	buf := slices.Clone(base)
	resize := func(size int) {
		if size <= len(buf) {
			buf = buf[:size]
			return
		}
		buf = append(buf, make([]byte, size-len(buf))...)
	}
	for _, op := range ops {
		if units <= 0 {
			break
		}
		if op.truncate {
			resize(int(op.off))
			units--
			continue
		}
		d := op.data
		if len(d) > units {
			d = d[:units]
		}
		units -= len(d)
		if e := int(op.off) + len(d); e > len(buf) {
			resize(e)
		}
		copy(buf[op.off:], d)
	}
	return buf[:len(buf):len(buf)]
}

// visit walks the state chosen by choice, calling dir and file for every path in
// depth-first name order. A directory already on the current path (a cycle made
// possible by unsynced cross-directory renames) is left out.
func (p *crashPlan) visit(choice []int, dir func(pn *planNode, v int, name string), file func(pn *planNode, v int, name string)) {
	onPath := map[*planNode]bool{}
	var rec func(pn *planNode, name string)
	rec = func(pn *planNode, name string) {
		v := 0
		if pn.dim >= 0 {
			v = choice[pn.dim]
		}
		if !pn.isDir {
			file(pn, v, name)
			return
		}
		dir(pn, v, name)
		onPath[pn] = true
		for _, cn := range pn.names[v] {
			c := p.byNode[pn.entries[v][cn]]
			if onPath[c] {
				continue
			}
			rec(c, path.Join(name, cn))
		}
		delete(onPath, pn)
	}
	rec(p.root, "/")
}

func (p *crashPlan) fingerprint(choice []int) uint64 {
	var h maphash.Hash
	h.SetSeed(p.seed)
	var buf [8]byte
	p.visit(choice,
		func(_ *planNode, _ int, name string) {
			h.WriteString("d")
			h.WriteString(name)
			h.WriteByte(0)
		},
		func(pn *planNode, v int, name string) {
			h.WriteString("f")
			h.WriteString(name)
			h.WriteByte(0)
			s := pn.sums[v]
			for i := range buf {
				buf[i] = byte(s >> (8 * i))
			}
			h.Write(buf[:])
		})
	return h.Sum64()
}

func (p *crashPlan) build(choice []int) *MemFS {
	clones := map[*planNode]*memNode{}
	var rec func(pn *planNode) *memNode
	rec = func(pn *planNode) *memNode {
		if c, ok := clones[pn]; ok {
			return c
		}
		v := 0
		if pn.dim >= 0 {
			v = choice[pn.dim]
		}
		if !pn.isDir {
			d := pn.datas[v]
			c := &memNode{mode: pn.mode, mtime: pn.mtime, data: d, frozen: len(d), synced: d}
			clones[pn] = c
			return c
		}
		c := &memNode{isDir: true, mode: pn.mode, mtime: pn.mtime, children: map[string]*memNode{}}
		clones[pn] = nil // on the current path: a cycle is cut
		for _, name := range pn.names[v] {
			cp := p.byNode[pn.entries[v][name]]
			if cc, ok := clones[cp]; ok && cc == nil {
				continue
			}
			c.children[name] = rec(cp)
		}
		c.durable = maps.Clone(c.children)
		clones[pn] = c
		return c
	}
	return &MemFS{root: rec(p.root)}
}

func (p *crashPlan) describe(choice []int) string {
	var parts []string
	for i, d := range p.dims {
		if choice[i] != 0 {
			parts = append(parts, d.path+": "+d.descs[choice[i]])
		}
	}
	if len(parts) == 0 {
		return "all unsynced changes lost"
	}
	return strings.Join(parts, "; ")
}
