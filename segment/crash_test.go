package segment

import (
	"fmt"
	"hash/maphash"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// The crash-consistency harness (pebble's error_test.go loop, on the partition
// log). A scripted workload of appends (1-6 records, codecs none/gzip/lz4),
// flushes, rolls, prefix deletes, retention, log start moves and clean and
// unclean reopens runs once under a counter of mutating filesystem operations
// (K of them); then, for every k in [0, K), on a fresh MemFS where the process
// dies at the k-th one (vfs.CrashAt). The run records what the log promised
// before it died. States a power loss at that moment could leave (unsynced data
// lost or torn, files extended with zeros or garbage, unsynced directory entries
// lost; see sampleCrashStates for which) are then opened as after a crash and
// checked by checkRecovered / checkPromises (crash_helpers_test.go, where the
// invariant is spelled out). TestIOErrorConsistency (fault_harness_test.go)
// runs the same loop failing one operation at a time instead (vfs.FailAt).
//
// The recovery point each state is opened with cycles through 0 (scan
// everything), the checkpoint a recovery-point file could hold at the crash
// (wlResult.checkpoint: the live log's FlushedOffset, which an unclean reopen
// sets back to the stale value it was given) and half of it. No log-start
// checkpoint is given, so the log starts at its first segment.
//
// Surfacing: an injected crash or error must reach the workload as an error
// returned by a Log method (wrapping vfs.ErrInjected), or be logged at Error
// level by the log: the flush after a roll runs in a background goroutine,
// and removing .deleted files (and closing their handles) is Kafka's
// fire-and-forget delete task; both only log. Anything else is a swallowed
// error and a violation.
//
// The count line ("crash harness: N crash points, M crash states explored, 0
// violations") is printed on stdout: go test -v shows it (go test prints the
// output of passing packages only with -v).

// crashWorkloads are the scripts the harness runs. Small segments and index
// intervals make rolls and index entries frequent.
func crashWorkloads() []crashWorkload {
	now := func() int64 { return 1_700_000_500_000 }
	base := Options{
		SegmentBytes:       900,
		IndexIntervalBytes: 150,
		SegmentIndexBytes:  120, // ten offset entries: index-full rolls happen too
		FileDeleteDelayMs:  -1,
		RetentionMs:        -1,
		Now:                now,
	}
	a := base
	a.RetentionBytes = 2500
	b := base
	b.SegmentBytes = 600
	b.FlushMessages = 9
	b.IndexIntervalBytes = 60
	// Preallocated segments: every crash of the active segment leaves a
	// zero-filled tail (or loses the unsynced allocation), and a roll's trim
	// may be lost too.
	c := base
	c.Preallocate = true
	c.FlushMessages = 7
	// Segments of several pages, flushed often: the writer zero-fills the
	// reserve ahead of itself (segment_zero.go), and crashes tear those
	// zero writes too.
	d := base
	d.Preallocate = true
	d.FlushMessages = 3
	d.SegmentBytes = 12 << 10
	d.SegmentIndexBytes = 1200
	ws := []crashWorkload{
		newCrashWorkload("retention-bytes", 1, 70, a),
		newCrashWorkload("flush-messages", 2, 60, b),
		newCrashWorkload("preallocate", 3, 60, c),
		newCrashWorkload("zero-fill", 4, 60, d),
	}
	// STRATA_CRASH_SEEDS=3,4,... adds scripts from more seeds (for long
	// exploratory runs).
	for _, f := range strings.Split(os.Getenv("STRATA_CRASH_SEEDS"), ",") {
		if seed, err := strconv.ParseUint(f, 10, 64); err == nil {
			o := []Options{a, b, c, d}[seed%4]
			ws = append(ws, newCrashWorkload(fmt.Sprintf("seed-%d", seed), seed, 70, o))
		}
	}
	return ws
}

// crashDir is the partition directory. Its parent, the log dir, exists and is
// durable before the workload starts (the broker creates log.dirs).
const crashDir = "/data/topic-0"

func newDataDirMem() *vfs.MemFS {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/data", 0o755); err != nil {
		panic(err)
	}
	mem.SyncAll()
	return mem
}

// crashStats counts what the harness did.
type crashStats struct {
	points, states, violations, unreached atomic.Int64
}

// statesPerPoint is how many distinct power-loss states are checked per crash
// point. The full product of per-file variants explodes (thousands per point
// once a few segments and indexes have unsynced changes), so the harness takes
// the first ones AllCrashStates enumerates plus distinct random ones (see
// sampleCrashStates). STRATA_CRASH_STATES overrides it.
func statesPerPoint() int {
	if v, err := strconv.Atoi(os.Getenv("STRATA_CRASH_STATES")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		return 3
	}
	return 11
}

// sampleCrashStates yields up to max distinct power-loss states of mem: the
// first half from AllCrashStates (the first one loses every unsynced change,
// the next ones vary the first files and directories), the rest drawn by
// CrashClone with a random choice per file and directory, seeded by (k, draw)
// so every state can be rebuilt, and deduplicated by content.
func sampleCrashStates(mem *vfs.MemFS, k, max int) iter.Seq2[string, *vfs.MemFS] {
	return func(yield func(string, *vfs.MemFS) bool) {
		seen := map[uint64]bool{}
		n := 0
		for desc, st := range mem.AllCrashStates(vfs.CrashOptions{}) {
			if n >= (max+1)/2 {
				break
			}
			seen[hashFS(st)] = true
			n++
			if !yield(desc, st) {
				return
			}
		}
		for draw := 0; n < max && draw < 8*max; draw++ {
			st := mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewPCG(uint64(k), uint64(draw)))})
			h := hashFS(st)
			if seen[h] {
				continue
			}
			seen[h] = true
			n++
			if !yield(fmt.Sprintf("random choice, PCG(%d, %d)", k, draw), st) {
				return
			}
		}
	}
}

var hashSeed = maphash.MakeSeed()

// hashFS hashes every path and file content of fsys.
func hashFS(fsys *vfs.MemFS) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	var walk func(dir string)
	walk = func(dir string) {
		names, _ := fsys.ReadDir(dir)
		slices.Sort(names)
		for _, n := range names {
			p := path.Join(dir, n)
			h.WriteString(p)
			h.WriteByte(0)
			if fi, err := fsys.Stat(p); err == nil && fi.IsDir() {
				walk(p)
				continue
			}
			if f, err := fsys.Open(p); err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				h.Write(b)
				h.WriteByte(1)
			}
		}
	}
	walk("/")
	return h.Sum64()
}

func TestCrashConsistency(t *testing.T) {
	t0 := time.Now()
	var st crashStats
	var v violations
	report := func(s string) {
		st.violations.Add(1)
		v.add(s)
	}
	for _, w := range crashWorkloads() {
		counter := vfs.NewCounter(vfs.MutatingOps...)
		res := w.run(vfs.Inject(newDataDirMem(), counter), crashDir)
		if res.err != nil {
			t.Fatalf("%s: workload fails without injection at step %d: %v", w.name, res.errStep, res.err)
		}
		K := counter.Count()
		if res.log != nil {
			res.log.Close()
		}
		t.Logf("%s: %d crash points", w.name, K)
		if v, err := strconv.Atoi(os.Getenv("CRASH_MAXK")); err == nil && v < K {
			K = v
		}
		forEachK(K, func(k int) {
			mem := newDataDirMem()
			crash := vfs.CrashAt(k, vfs.MutatingOps...)
			seen := vfs.NewCounter(vfs.MutatingOps...) // the ops this run really made
			res := w.run(vfs.Inject(vfs.Inject(mem, seen), crash), crashDir)
			where := fmt.Sprintf("%s k=%d/%d (stopped at step %d)", w.name, k, K, res.errStep)
			switch {
			case !crash.Crashed():
				// Not every run has exactly K operations: when an append both rolls
				// and reaches flush.messages, the roll's background flush and the
				// inline flush race for the flush lock, and whichever comes second
				// may find nothing left to sync. The last few k can then lie past
				// the end of this run.
				if seen.Count() > k {
					report(where + ": the crash point was never reached")
				}
				st.unreached.Add(1)
				return
			case res.err == nil && res.logged.injected() == 0:
				report(where + ": the injected crash was swallowed: no error returned or logged")
			case res.err != nil && !vfs.IsInjected(res.err):
				report(fmt.Sprintf("%s: error does not wrap the injected one: %v", where, res.err))
			}
			st.points.Add(1)
			n := 0
			for desc, state := range sampleCrashStates(mem, k, statesPerPoint()) {
				rp := []int64{0, res.checkpoint, res.checkpoint / 2}[n%3]
				if err := checkRecovered(state, crashDir, w.opts, rp, res); err != nil {
					report(fmt.Sprintf("%s, state %d [%s]: %v", where, n, desc, err))
				}
				n++
				st.states.Add(1)
			}
		})
	}
	v.report(t)
	msg := fmt.Sprintf("crash harness: %d crash points, %d crash states explored, %d violations (%v)",
		st.points.Load(), st.states.Load(), st.violations.Load(), time.Since(t0).Round(time.Millisecond))
	t.Log(msg)
	fmt.Println(msg)
	if !testing.Short() && st.states.Load() < 10000 {
		t.Errorf("only %d crash states explored, want at least 10000", st.states.Load())
	}
}

// violations groups violation reports by their message with numbers and
// state descriptions blanked, keeping the first two of each kind.
type violations struct {
	mu    sync.Mutex
	kinds []string
	first map[string][]string
	count map[string]int
}

var digits = regexp.MustCompile(`[0-9]+|\[[^]]*\]`)

func (v *violations) add(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.first == nil {
		v.first, v.count = map[string][]string{}, map[string]int{}
	}
	msg := s
	if i := strings.LastIndex(s, "]: "); i >= 0 {
		msg = s[i+3:]
	} else if i := strings.Index(s, "): "); i >= 0 {
		msg = s[i+3:]
	}
	key := digits.ReplaceAllString(msg, "#")
	if v.count[key] == 0 {
		v.kinds = append(v.kinds, key)
	}
	v.count[key]++
	if len(v.first[key]) < 2 {
		v.first[key] = append(v.first[key], s)
	}
}

func (v *violations) total() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, c := range v.count {
		n += c
	}
	return n
}

func (v *violations) report(t *testing.T) {
	for _, k := range v.kinds {
		t.Errorf("%d violations of the kind %q, first:\n\t%s", v.count[k], k, strings.Join(v.first[k], "\n\t"))
	}
}

// forEachK runs f for every k in [0, n) on GOMAXPROCS workers.
func forEachK(n int, f func(k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				f(k)
			}
		}()
	}
	wg.Wait()
}

var _ = os.Stdout
