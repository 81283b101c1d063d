package replica

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestDivergingResponseKeepsHW: a fetch answer that says the follower's log
// diverges is applied by truncating only (Kafka's processFetchRequest
// takes either the truncation or the data, never both): the high watermark
// it carries is the leader's and says nothing of the follower's diverged
// tail, so taking it first raised the follower's high watermark over
// records about to be cut, and the cut was logged as "truncating below the
// high watermark", the warning for losing committed records. A leader
// isolated in epoch 1 (its followers gone to a new leader in epoch 2) is
// the case: the fault tests (internal/faults, isolate-leader) saw it.
func TestDivergingResponseKeepsHW(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	mustAppend(t, tr.l, t0, "a", "b")
	for i := 0; i < 3; i++ { // the followers learn the high watermark a fetch late
		replicate(t, tr.l, tr.f2, t0)
		replicate(t, tr.l, tr.f3, t0)
	}
	wantHW(t, tr.f2, 2)
	// Broker 2 leads epoch 1 but its followers never fetch: its appends
	// stay above the high watermark.
	mustLeader(t, tr.f2, state(2, 1, []int32{1, 2, 3}), t0)
	mustAppend(t, tr.f2, t0, "x", "y")
	// The controller moves on: broker 1 leads epoch 2 with broker 3 and
	// commits c.
	mustLeader(t, tr.l, state(1, 2, []int32{1, 3}), t0)
	mustFollower(t, tr.f3, state(1, 2, []int32{1, 3}), t0)
	mustAppend(t, tr.l, t0, "c")
	replicate(t, tr.l, tr.f3, t0)
	replicate(t, tr.l, tr.f3, t0)
	wantHW(t, tr.l, 3)

	var logs bytes.Buffer
	tr.f2.logger = slog.New(slog.NewTextHandler(&logs, nil))
	mustFollower(t, tr.f2, state(1, 2, []int32{1, 3}), t0)
	wantHW(t, tr.f2, 2)
	res := replicate(t, tr.l, tr.f2, t0)
	if res.DivergingEpoch != 0 || res.DivergingEndOffset != 2 {
		t.Fatalf("leader's answer: diverging epoch %d end %d, want 0 and 2", res.DivergingEpoch, res.DivergingEndOffset)
	}
	if leo := tr.f2.Log().LogEndOffset(); leo != 2 {
		t.Fatalf("follower's log ends at %d after the divergence, want 2", leo)
	}
	wantHW(t, tr.f2, 2)
	if strings.Contains(logs.String(), "below the high watermark") {
		t.Fatalf("the follower's high watermark passed its divergence:\n%s", logs.String())
	}
	// The next fetches bring c and the leader's high watermark.
	replicate(t, tr.l, tr.f2, t0)
	replicate(t, tr.l, tr.f2, t0)
	wantHW(t, tr.f2, 3)
	if got := values(readLog(t, tr.f2.Log(), -1)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("follower's log %v", got)
	}
}
