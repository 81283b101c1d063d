package server

import (
	"testing"
	"time"
)

// TestWaitAnyTwoChannels: a parked fetch waiting on two channels (a
// follower's fetch of one partition in cluster mode: the leader's log and
// the partition's notification) wakes on either, on its timeout and on
// shutdown, without a goroutine or channel per wait: the goroutine
// fan-out put an extra wake-up between an append and every follower
// waiting for it.
func TestWaitAnyTwoChannels(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	never := make(chan struct{})
	expired := make(chan time.Time, 1)
	for name, chans := range map[string][]<-chan struct{}{
		"first":  {closed, never},
		"second": {never, closed},
	} {
		done := make(chan struct{})
		go func() { waitAny(chans, nil, nil); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s channel closed: waitAny still waiting", name)
		}
	}
	expired <- time.Now()
	waitAny([]<-chan struct{}{never, never}, expired, nil) // returns: timeout
	waitAny([]<-chan struct{}{never, never}, nil, closed)  // returns: shutdown
	chans := []<-chan struct{}{never, closed}
	if n := testing.AllocsPerRun(100, func() { waitAny(chans, nil, nil) }); n != 0 {
		t.Errorf("waitAny on two channels allocates %.0f times per wait; want 0 (no goroutines)", n)
	}
}
