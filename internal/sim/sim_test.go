package sim

import (
	"os"
	"strconv"
	"testing"
)

// seeds returns the seeds to run: SIM_SEED alone, or SIM_SEEDS of them
// (default n; fewer under -short).
func seeds(t *testing.T, n int) []uint64 {
	if v := os.Getenv("SIM_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SIM_SEED=%q: %v", v, err)
		}
		return []uint64{s}
	}
	if v := os.Getenv("SIM_SEEDS"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("SIM_SEEDS=%q: %v", v, err)
		}
		n = c
	}
	if testing.Short() {
		n = min(n, 10)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

func runSeeds(t *testing.T, name string, n int, opt Options) {
	verbose := os.Getenv("SIM_VERBOSE") != ""
	var total struct {
		Stats
		checked int
	}
	for _, seed := range seeds(t, n) {
		o := opt
		o.Seed, o.Verbose = seed, verbose
		s := New(o)
		err := s.Run()
		st := s.Stats()
		total.Steps += st.Steps
		total.ProcessCrashes += st.ProcessCrashes
		total.PowerLosses += st.PowerLosses
		total.LinkCuts += st.LinkCuts
		total.Isolations += st.Isolations
		total.LeaderMoves += st.LeaderMoves
		total.ControllerFailovers += st.ControllerFailovers
		total.DeleteRecords += st.DeleteRecords
		total.Diverging += st.Diverging
		total.OutOfRange += st.OutOfRange
		total.Fenced += st.Fenced
		total.ListOffsets += st.ListOffsets
		if err != nil {
			t.Fatalf("%s seed %d failed (replay: SIM_SEED=%d go test -run '%s' ./internal/sim/):\n%v\n\ntrace:\n%s", name, seed, seed, t.Name(), err, s.W.Trace())
		}
		if rep := s.Report(); rep == nil || rep.CheckedAcked == 0 || rep.Reads == 0 {
			t.Fatalf("seed %d checked nothing: %v", seed, rep)
		}
		total.checked += s.Report().CheckedAcked
	}
	t.Logf("%s: %+v, %d acknowledged records checked", name, total.Stats, total.checked)
}

// TestSimNoFaults: the cluster replicates and acknowledges under load
// without faults.
func TestSimNoFaults(t *testing.T) {
	runSeeds(t, "no faults", 2, Options{DurationMs: 3000})
}

// TestSimFaults: random crashes, power loss, network faults and leader moves
// over many seeds, Kafka's default flush policy (nothing fsynced).
func TestSimFaults(t *testing.T) {
	runSeeds(t, "faults", 50, Options{Faults: true})
}

// TestSimFaultsFsync: the same with flush.messages=1, where any broker may
// lose power at any time.
func TestSimFaultsFsync(t *testing.T) {
	runSeeds(t, "faults, fsync", 30, Options{Faults: true, FlushEveryMessage: true})
}

// TestSimDeterministic: a seed replays exactly (the same trace twice).
func TestSimDeterministic(t *testing.T) {
	run := func() string {
		s := New(Options{Seed: 7, Faults: true, Verbose: true, DurationMs: 5000})
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return s.W.Trace()
	}
	a, b := run(), run()
	if a != b {
		for i := 0; i < min(len(a), len(b)); i++ {
			if a[i] != b[i] {
				t.Fatalf("runs differ at byte %d:\n%s\n---\n%s", i, a[max(0, i-300):min(len(a), i+300)], b[max(0, i-300):min(len(b), i+300)])
			}
		}
		t.Fatalf("runs differ in length: %d and %d", len(a), len(b))
	}
	if len(a) < 10000 {
		t.Fatalf("trace of %d bytes: the run did little", len(a))
	}
}
