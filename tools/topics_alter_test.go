package tools

import (
	"fmt"
	"testing"
)

// TestPlanGrowth: --replica-assignment of --alter lists every partition,
// the existing ones first (Kafka's alterTopic drops as many entries as the
// topic has partitions); a topic that already has them all gets an empty,
// non-nil assignment for the broker to refuse rather than nil, which would
// let the broker place replicas the operator did not ask for.
func TestPlanGrowth(t *testing.T) {
	g := growRequest{partitions: 3, assignment: [][]int32{{1, 2}, {2, 3}, {3, 1}}}
	got := planGrowth([]string{"a", "b", "c"}, g, map[string]int{"a": 1, "b": 3, "c": 5})
	want := "[{a 3 [[2 3] [3 1]]} {b 3 []} {c 3 []}]"
	if s := fmt.Sprint(got); s != want {
		t.Errorf("plan %s, want %s", s, want)
	}
	if got[1].assignment == nil || got[2].assignment == nil {
		t.Error("a topic with all the listed partitions got a nil assignment")
	}
	if p := planGrowth([]string{"a"}, growRequest{partitions: 4}, nil); p[0].assignment != nil || p[0].total != 4 {
		t.Errorf("without --replica-assignment: %+v", p)
	}
}
