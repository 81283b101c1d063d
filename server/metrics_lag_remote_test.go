package server

import (
	"testing"
	"time"
)

// TestRemoteHWsFill: the lag refresher's answers fill in the partitions
// with no local high watermark, never replace a local one, and are not
// used once their round began more than three intervals ago (a stuck
// refresher's values are not presented as fresh).
func TestRemoteHWsFill(t *testing.T) {
	far, near := topicPartition{"t", 0}, topicPartition{"t", 1}
	r := &remoteHWs{every: time.Second, hw: map[topicPartition]int64{far: 40, near: 7}, at: time.Now()}
	hws := map[topicPartition]int64{near: 9}
	r.fill(hws)
	if hws[far] != 40 || hws[near] != 9 {
		t.Fatalf("fresh round: %v, want t-0 40 from the leader and t-1 9 (local)", hws)
	}
	r.at = time.Now().Add(-4 * time.Second)
	hws = map[topicPartition]int64{}
	r.fill(hws)
	if len(hws) != 0 {
		t.Fatalf("a round begun 4 intervals ago filled %v", hws)
	}
	(&remoteHWs{every: time.Second}).fill(hws) // no round yet
	if len(hws) != 0 {
		t.Fatalf("no round yet filled %v", hws)
	}
}
