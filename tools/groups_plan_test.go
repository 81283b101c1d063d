package tools

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestParseOffsetsCSV(t *testing.T) {
	got, err := parseOffsetsCSV("# x\n\nt,0,5\n g , t , 1 , 7 \nother,t,2,9\nu,3,-1\n", "g")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(map[tp]int64{{"t", 0}: 5, {"t", 1}: 7, {"u", 3}: -1}) {
		t.Errorf("got %v", got)
	}
	for _, in := range []string{"", "# only\n", "t,0\n", "t,x,1\n", "t,0,y\n", "t,-1,0\n", ",0,1\n", "t,0,1\nt,0,2\n", "a,b,c,d,e\n", "other,t,0,1\n"} {
		if _, err := parseOffsetsCSV(in, "g"); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestParseTopicSpec(t *testing.T) {
	for in, want := range map[string]string{
		"t":        "t []",
		"t:0":      "t [0]",
		"t:2,0,2":  "t [2 0]",
		"a.b-c_d":  "a.b-c_d []",
		"t: 1, 3 ": "t [1 3]",
	} {
		ts, err := parseTopicSpec(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := ts.topic + " " + fmt.Sprint(ts.partitions); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{":0", "t:", "t:-1", "t:a", "t:1,,2", "t:99999999999"} {
		if _, err := parseTopicSpec(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestParseResetTime(t *testing.T) {
	loc := time.FixedZone("X", -5*3600)
	for in, want := range map[string]string{
		"2024-03-01T12:00:00.000":       "2024-03-01T17:00:00Z",
		"2024-03-01T12:00:00":           "2024-03-01T17:00:00Z",
		"2024-03-01T12:00:00.250Z":      "2024-03-01T12:00:00.25Z",
		"2024-03-01T12:00:00.000+01:00": "2024-03-01T11:00:00Z",
	} {
		got, err := parseResetTime(in, loc)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if s := got.UTC().Format(time.RFC3339Nano); s != want {
			t.Errorf("%q: %s, want %s", in, s, want)
		}
	}
	for _, in := range []string{"", "2024-03-01", "2024-13-01T00:00:00", "1709294400000", "2024-03-01 12:00:00"} {
		if _, err := parseResetTime(in, loc); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestParseResetDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT1H":        time.Hour,
		"P1D":         24 * time.Hour,
		"P1DT2H30M":   26*time.Hour + 30*time.Minute,
		"PT0.5S":      500 * time.Millisecond,
		"pt15m":       15 * time.Minute,
		"P2DT0H0M10S": 48*time.Hour + 10*time.Second,
		"90m":         90 * time.Minute,
		"0s":          0,
	} {
		got, err := parseResetDuration(in)
		if err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "1H", "PT1D", "P1H", "P-1D", "PTT1H", "PT1X", "-5m", "P1DT", "PTH"} {
		if d, err := parseResetDuration(in); err == nil {
			t.Errorf("%q: %v, no error", in, d)
		}
	}
}

// TestPlanReset checks the planner on hand-picked cases and against a
// reference written the long way on random partitions.
func TestPlanReset(t *testing.T) {
	p := func(start, end, committed, atTime int64) partitionOffsets {
		return partitionOffsets{Topic: "t", Partition: 0, Start: start, End: end, Committed: committed, AtTime: atTime}
	}
	for _, c := range []struct {
		sc      resetScenario
		part    partitionOffsets
		want    int64
		clamped bool
	}{
		{resetScenario{kind: "to-earliest"}, p(10, 20, 15, -1), 10, false},
		{resetScenario{kind: "to-latest"}, p(10, 20, 15, -1), 20, false},
		{resetScenario{kind: "to-datetime"}, p(10, 20, 15, 12), 12, false},
		{resetScenario{kind: "to-datetime"}, p(10, 20, 15, -1), 20, false},
		{resetScenario{kind: "to-offset", n: 14}, p(10, 20, -1, -1), 14, false},
		{resetScenario{kind: "to-offset", n: 20}, p(10, 20, -1, -1), 20, false},
		{resetScenario{kind: "to-offset", n: 3}, p(10, 20, -1, -1), 10, true},
		{resetScenario{kind: "to-offset", n: 99}, p(10, 20, -1, -1), 20, true},
		{resetScenario{kind: "shift-by", n: -3}, p(10, 20, 15, -1), 12, false},
		{resetScenario{kind: "shift-by", n: -9}, p(10, 20, 15, -1), 10, true},
		{resetScenario{kind: "shift-by", n: 9}, p(10, 20, 15, -1), 20, true},
		{resetScenario{kind: "shift-by", n: 0}, p(0, 0, 0, -1), 0, false},
		{resetScenario{kind: "to-current"}, p(10, 20, 15, -1), 15, false},
		{resetScenario{kind: "to-current"}, p(10, 20, -1, -1), 20, false},
		{resetScenario{kind: "to-current"}, p(10, 20, 3, -1), 10, true},
		{resetScenario{kind: "from-file", file: map[tp]int64{{"t", 0}: 12}}, p(10, 20, 3, -1), 12, false},
		{resetScenario{kind: "from-file", file: map[tp]int64{{"t", 0}: 25}}, p(10, 20, 3, -1), 20, true},
	} {
		plan, err := planReset(c.sc, []partitionOffsets{c.part})
		if err != nil {
			t.Errorf("%+v %+v: %v", c.sc, c.part, err)
			continue
		}
		if plan[0].NewOffset != c.want || plan[0].Clamped != c.clamped {
			t.Errorf("%+v %+v: %d (clamped %v), want %d (clamped %v)", c.sc, c.part, plan[0].NewOffset, plan[0].Clamped, c.want, c.clamped)
		}
	}
	if _, err := planReset(resetScenario{kind: "shift-by", n: 1}, []partitionOffsets{p(0, 5, -1, -1)}); err == nil {
		t.Error("shift-by without a committed offset: no error")
	}
	if _, err := planReset(resetScenario{kind: "to-nowhere"}, []partitionOffsets{p(0, 5, -1, -1)}); err == nil {
		t.Error("unknown scenario: no error")
	}

	// Random partitions against the reference.
	seed := uint64(time.Now().UnixNano())
	next := func(n int64) int64 { // xorshift, reproducible from the logged seed
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int64(seed % uint64(n))
	}
	t.Logf("seed %d", seed)
	kinds := []string{"to-earliest", "to-latest", "to-current", "to-datetime", "to-offset", "shift-by"}
	for range 2000 {
		sc := resetScenario{kind: kinds[next(int64(len(kinds)))], n: next(200) - 100}
		var parts []partitionOffsets
		for i := range next(5) {
			start := next(50)
			end := start + next(50)
			committed := next(150) - 1
			if sc.kind == "shift-by" && committed < 0 {
				committed = 0
			}
			at := int64(-1)
			if next(2) == 0 {
				at = start + next(end-start+1)
			}
			parts = append(parts, partitionOffsets{Topic: "t" + strconv.Itoa(int(next(2))), Partition: int32(i), Start: start, End: end, Committed: committed, AtTime: at})
		}
		plan, err := planReset(sc, parts)
		if err != nil {
			t.Fatalf("%+v %+v: %v", sc, parts, err)
		}
		if len(plan) != len(parts) {
			t.Fatalf("%d rows for %d partitions", len(plan), len(parts))
		}
		for i := 1; i < len(plan); i++ {
			a, b := plan[i-1], plan[i]
			if a.Topic > b.Topic || a.Topic == b.Topic && a.Partition >= b.Partition {
				t.Fatalf("plan not sorted: %+v", plan)
			}
		}
		for _, row := range plan {
			var part partitionOffsets
			for _, q := range parts {
				if q.Topic == row.Topic && q.Partition == row.Partition {
					part = q
				}
			}
			want := referenceReset(sc, part)
			if row.NewOffset != want {
				t.Fatalf("%+v %+v: %d, want %d", sc, part, row.NewOffset, want)
			}
			if row.NewOffset < part.Start || row.NewOffset > part.End {
				t.Fatalf("%+v %+v: %d outside the log", sc, part, row.NewOffset)
			}
		}
	}
}

// referenceReset is the planner's rule for one partition, spelled out.
func referenceReset(sc resetScenario, p partitionOffsets) int64 {
	var want int64
	switch sc.kind {
	case "to-earliest":
		return p.Start
	case "to-latest":
		return p.End
	case "to-current":
		if p.Committed == -1 {
			return p.End
		}
		want = p.Committed
	case "to-datetime":
		if p.AtTime == -1 {
			return p.End
		}
		want = p.AtTime
	case "to-offset":
		want = sc.n
	case "shift-by":
		want = p.Committed + sc.n
	}
	if want < p.Start {
		return p.Start
	}
	if want > p.End {
		return p.End
	}
	return want
}
