package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/server"
)

// TestBenchBrokerMetricsSlots: with --metrics both the two brokers run in
// two slots (data directories) and swap roles after two runs, each
// restarted on its directory with metrics flipped, so that over four runs
// metrics on and off each run twice in each slot and produce first twice;
// each run's topics are deleted at its end; the JSON says the layout and
// compares the runs by slot and by order too.
func TestBenchBrokerMetricsSlots(t *testing.T) {
	const records, passes = 2000, 2
	type seen struct {
		dir   string
		srv   *server.Server
		parts []string // the directory's bench partitions at the run's end
		in    uint64   // metrics on: messages in to the run's topic
	}
	var ends [][2]seen // by run, by slot
	benchSlotSeen = func(run, slot int, dir string, srv *server.Server) {
		if slot == 0 {
			ends = append(ends, [2]seen{})
		}
		e := seen{dir: dir, srv: srv}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Errorf("run %d slot %d: %v", run, slot, err)
		}
		for _, d := range ents {
			if d.IsDir() && strings.HasPrefix(d.Name(), "strata-bench-") && !strings.HasSuffix(d.Name(), "-delete") {
				e.parts = append(e.parts, d.Name())
			}
		}
		if m := srv.Metrics(); m != nil && len(e.parts) == 1 {
			e.in = m.Topic(strings.TrimSuffix(e.parts[0], "-0")).MessagesIn.Load()
		}
		ends[run][slot] = e
	}
	defer func() { benchSlotSeen = nil }()
	out, errOut, code := run(t, "bench", "broker", "--records", "2000", "--runs", "4", "--produce-passes", "2", "--consume-passes", "2", "--latency-seconds", "0", "--validation", "full", "--metrics", "both", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(ends) != 4 {
		t.Fatalf("%d runs seen, want 4", len(ends))
	}
	for run, e := range ends {
		on := (run / 2) % 2 // the on broker's slot: 0 in runs 0 and 1, 1 in runs 2 and 3
		for slot := range e {
			s, role := e[slot], "fulloff-"
			if slot == on {
				role = "fullon-"
			}
			if (s.srv.Metrics() != nil) != (slot == on) {
				t.Errorf("run %d slot %d: metrics %v, want %v", run, slot, s.srv.Metrics() != nil, slot == on)
			}
			// Each run's topics are deleted at its end: the slot holds
			// only this run's topic, of its role in this run.
			if len(s.parts) != 1 || !strings.Contains(s.parts[0], role) || !strings.HasSuffix(s.parts[0], fmt.Sprintf("-%d-0", run)) {
				t.Errorf("run %d slot %d: partitions %v, want the run's %s topic alone", run, slot, s.parts, role)
			}
			if slot == on && s.in != passes*(records+1) {
				t.Errorf("run %d slot %d (metrics on): %d messages in, want %d (2 passes of the warm-up record and the records)", run, slot, s.in, passes*(records+1))
			}
			if s.dir != ends[0][slot].dir {
				t.Errorf("run %d slot %d: directory %s, not the slot's %s", run, slot, s.dir, ends[0][slot].dir)
			}
			// Restarted (roles swapped) at run 2 only.
			if sameBroker := s.srv == ends[run&^1][slot].srv; !sameBroker {
				t.Errorf("run %d slot %d: not the broker of run %d", run, slot, run&^1)
			}
			if run >= 2 && s.srv == ends[0][slot].srv {
				t.Errorf("run %d slot %d: not restarted at the swap", run, slot)
			}
		}
	}

	var res BenchBrokerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.ProducePasses != 2 || res.ConsumePasses != 2 {
		t.Errorf("produce_passes %d, consume_passes %d, want 2 and 2", res.ProducePasses, res.ConsumePasses)
	}
	if len(res.MetricsOnVsOff) != 1 || len(res.Modes) != 2 {
		t.Fatalf("metrics_on_vs_off %+v, modes %d", res.MetricsOnVsOff, len(res.Modes))
	}
	o := res.MetricsOnVsOff[0]
	if !slices.Equal(o.OnSlotRuns, []int{0, 0, 1, 1}) || !slices.Equal(o.OnFirstRuns, []bool{true, false, false, true}) {
		t.Errorf("on_slot_runs %v, on_first_runs %v", o.OnSlotRuns, o.OnFirstRuns)
	}
	for _, m := range res.Modes {
		if len(m.ConsumeSecondsRuns) != 4 || len(m.ProduceSecondsRuns) != 4 {
			t.Fatalf("metrics %s: produce runs %v, consume runs %v", m.Metrics, m.ProduceSecondsRuns, m.ConsumeSecondsRuns)
		}
		for i, sec := range m.ProduceSecondsRuns {
			if got := m.ProduceRecordsPerSecs[i] * sec; math.Abs(got-2*records) > 1 {
				t.Errorf("metrics %s run %d: %v records produced, want 2 passes of %d", m.Metrics, i, got, records)
			}
		}
		for i, sec := range m.ConsumeSecondsRuns {
			if got := m.ConsumeRecordsPerSecs[i] * sec; math.Abs(got-2*records) > 1 {
				t.Errorf("metrics %s run %d: %v records consumed, want 2 passes of %d", m.Metrics, i, got, records)
			}
		}
	}
	// By slot: runs 0 and 1 as they are, runs 2 and 3 inverted; by order:
	// runs 0 and 3 as they are.
	medianOf := func(rs []float64) float64 {
		s := slices.Sorted(slices.Values(rs))
		return (s[1] + s[2]) / 2
	}
	p := o.ProduceRuns
	if len(p) != 4 {
		t.Fatalf("produce_runs %v", p)
	}
	if got, w := o.ProduceSlot0VsSlot1, medianOf([]float64{p[0], p[1], 1 / p[2], 1 / p[3]}); math.Abs(got-w) > 1e-9 {
		t.Errorf("produce_slot0_vs_slot1 %v, want %v", got, w)
	}
	if got, w := o.ProduceFirstVsSecond, medianOf([]float64{p[0], 1 / p[1], 1 / p[2], p[3]}); math.Abs(got-w) > 1e-9 {
		t.Errorf("produce_first_vs_second %v, want %v", got, w)
	}
	c := o.ConsumeRuns
	if got, w := o.ConsumeSlot0VsSlot1, medianOf([]float64{c[0], c[1], 1 / c[2], 1 / c[3]}); math.Abs(got-w) > 1e-9 {
		t.Errorf("consume_slot0_vs_slot1 %v, want %v", got, w)
	}
}
