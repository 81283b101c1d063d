package tools

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// testWindow is a window of one record of t/0 at offset off, acknowledged
// or still awaiting the target.
func testWindow(s *mirrorStream, off int64, acked bool) *mirrorWindow {
	w := s.newWindow()
	p := &mirrorPoll{
		recs:  []*kgo.Record{{Topic: "t", Partition: 0, Offset: off}},
		src:   []mirrorSource{{partition: 0, offset: off}},
		state: make([]atomic.Int32, 1),
	}
	w.polls, w.records, w.start = []*mirrorPoll{p}, 1, time.Now()
	if acked {
		p.state[0].Store(recAcked)
	} else {
		w.pending.Add(1) // the target never answers
	}
	return w
}

// TestMirrorIncompleteWindowEndsCommits: at a stop, a window whose records
// the target has not all acknowledged within the shutdown timeout is not
// committed, and neither is the window produced after it, although the
// target acknowledged that one: its offsets would pass over the first
// window's records. The stream has no source client, so a commit would
// panic; the test also fails if the stop takes the shutdown timeout twice.
func TestMirrorIncompleteWindowEndsCommits(t *testing.T) {
	var out bytes.Buffer
	m := &mirror{opts: mirrorOptions{shutdown: 500 * time.Millisecond}, out: &lockedWriter{w: &out}}
	s := &mirrorStream{m: m}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := s.closeWindow(stopped, testWindow(s, 5, false)); err != nil {
		t.Fatal(err)
	}
	if !s.incomplete {
		t.Fatal("a window closed without its acknowledgements is not marked incomplete")
	}
	if err := s.closeWindow(stopped, testWindow(s, 6, true)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < 500*time.Millisecond || took >= time.Second {
		t.Errorf("closing both windows took %v, want the shutdown timeout once (500ms)", took)
	}
	for _, want := range []string{
		"stopping with 1 records of the window not committed (the target did not acknowledge them within 500ms)",
		"stopping with 1 records of the next window not committed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := m.committed.Load(); n != 0 {
		t.Errorf("%d records committed, want 0", n)
	}
}

// TestMirrorProducerBufferHoldsBothWindows: the target producer's record
// limit leaves room for a sealed and a filling window of every stream, full
// polls each, so Produce never blocks; without max.poll.records a window
// has no record bound and neither has the producer.
func TestMirrorProducerBufferHoldsBothWindows(t *testing.T) {
	for _, o := range []mirrorOptions{{maxPoll: 500, streams: 1}, {maxPoll: 5000, streams: 3}, {maxPoll: 1 << 30, streams: 4}} {
		if got, need := int64(o.producerBuffer()), min(int64(o.maxPoll)*mirrorWindowPolls*2*int64(o.streams), math.MaxInt32); got < need {
			t.Errorf("max.poll.records %d, %d streams: room for %d records, the windows hold %d", o.maxPoll, o.streams, got, need)
		}
	}
	if got := (mirrorOptions{streams: 2}).producerBuffer(); got != math.MaxInt32 {
		t.Errorf("no max.poll.records: room for %d records, want %d", got, math.MaxInt32)
	}
}
