package tools

import (
	"encoding/json"
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
// the JSON says the layout and compares the runs by slot and by order too.
func TestBenchBrokerMetricsSlots(t *testing.T) {
	type start struct {
		slot   int
		dir    string
		srv    *server.Server
		topics []string // the directory's partition dirs when the broker started
	}
	var starts []start
	benchSlotStarted = func(slot int, dir string, srv *server.Server) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Errorf("slot %d: %v", slot, err)
		}
		var topics []string
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), "strata-bench-") {
				topics = append(topics, e.Name())
			}
		}
		starts = append(starts, start{slot, dir, srv, topics})
	}
	defer func() { benchSlotStarted = nil }()
	const records = 2000
	out, errOut, code := run(t, "bench", "broker", "--records", "2000", "--runs", "4", "--produce-passes", "2", "--consume-passes", "2", "--latency-seconds", "0", "--validation", "full", "--metrics", "both", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Run 0: slot 0 on, slot 1 off; run 2: restarted the other way round.
	want := []struct {
		slot int
		on   bool
	}{{0, true}, {1, false}, {0, false}, {1, true}}
	if len(starts) != len(want) {
		t.Fatalf("%d brokers started, want %d", len(starts), len(want))
	}
	for i, w := range want {
		s := starts[i]
		if s.slot != w.slot || (s.srv.Metrics() != nil) != w.on {
			t.Errorf("start %d: slot %d metrics %v, want slot %d metrics %v", i, s.slot, s.srv.Metrics() != nil, w.slot, w.on)
		}
		if s.dir != starts[w.slot].dir {
			t.Errorf("start %d: slot %d restarted on %s, not its directory %s", i, s.slot, s.dir, starts[w.slot].dir)
		}
		if !w.on {
			continue
		}
		// The on broker counted the produces of its two runs, two
		// passes each (the warm-up record and the measured ones), and
		// nothing else.
		if got := s.srv.Metrics().Totals().MessagesIn; got != 2*2*(records+1) {
			t.Errorf("start %d (slot %d, metrics on): %d messages in, want %d", i, s.slot, got, 2*2*(records+1))
		}
	}
	// At the swap, each slot's directory holds runs 0 and 1 of the role
	// it had: slot 0 the on topics, slot 1 the off ones.
	for i, role := range map[int]string{2: "fullon-", 3: "fulloff-"} {
		if n := len(starts[i].topics); n != 2 {
			t.Errorf("slot %d at the swap: partitions %v, want runs 0 and 1", starts[i].slot, starts[i].topics)
			continue
		}
		for _, name := range starts[i].topics {
			if !strings.Contains(name, role) {
				t.Errorf("slot %d at the swap: partition %s, want only %s topics", starts[i].slot, name, role)
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
