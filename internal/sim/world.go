package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// World is the simulated clock and event queue.
type World struct {
	// Now is the current time in milliseconds.
	Now int64
	// Rand is the run's only source of randomness.
	Rand *rand.Rand

	q     events
	seq   uint64
	trace []string // the last TraceLen lines, a ring from head
	head  int
	all   []string // every line, when verbose
	steps int

	verbose bool
}

// TraceLen is how many trace lines a failure report shows.
const TraceLen = 400

// NewWorld returns a world at time start seeded with seed.
func NewWorld(seed uint64, start int64, verbose bool) *World {
	return &World{Now: start, Rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), verbose: verbose}
}

type event struct {
	at  int64
	seq uint64
	fn  func()
}

type events []*event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(*event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// At runs fn at time t (not before now).
func (w *World) At(t int64, fn func()) {
	if t < w.Now {
		t = w.Now
	}
	w.seq++
	heap.Push(&w.q, &event{at: t, seq: w.seq, fn: fn})
}

// After runs fn d milliseconds from now.
func (w *World) After(d int64, fn func()) { w.At(w.Now+d, fn) }

// Step runs the next event, if it is due by until; it reports whether one
// ran.
func (w *World) Step(until int64) bool {
	if len(w.q) == 0 || w.q[0].at > until {
		return false
	}
	e := heap.Pop(&w.q).(*event)
	w.Now = e.at
	w.steps++
	e.fn()
	return true
}

// RunUntil runs every event due by t, then sets the clock to t.
func (w *World) RunUntil(t int64) {
	for w.Step(t) {
	}
	if w.Now < t {
		w.Now = t
	}
}

// Steps is how many events have run.
func (w *World) Steps() int { return w.steps }

// Intn returns a random int in [0, n).
func (w *World) Intn(n int) int { return w.Rand.IntN(n) }

// Between returns a random int64 in [lo, hi].
func (w *World) Between(lo, hi int64) int64 { return lo + w.Rand.Int64N(hi-lo+1) }

// Chance reports true with probability p.
func (w *World) Chance(p float64) bool { return w.Rand.Float64() < p }

// Tracef records a line in the trace.
func (w *World) Tracef(format string, args ...any) {
	line := fmt.Sprintf("%8d %s", w.Now, fmt.Sprintf(format, args...))
	if w.verbose {
		w.all = append(w.all, line)
	}
	if len(w.trace) < TraceLen {
		w.trace = append(w.trace, line)
		return
	}
	w.trace[w.head] = line
	w.head = (w.head + 1) % TraceLen
}

// Trace returns the recorded trace: every line when verbose, else the last
// TraceLen.
func (w *World) Trace() string {
	if w.verbose {
		return strings.Join(w.all, "\n")
	}
	return strings.Join(append(slices.Clone(w.trace[w.head:]), w.trace[:w.head]...), "\n")
}

// Int64n returns a random int64 in [0, n).
func (w *World) Int64n(n int64) int64 { return w.Rand.Int64N(n) }
