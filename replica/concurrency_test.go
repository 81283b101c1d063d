package replica

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// TestConcurrentUse drives two managers the way the broker will: producers
// appending and waiting with Await, a fetcher loop, the Runner's Ready loop,
// and leadership moving back and forth, all at once (run it under -race).
// Every acks=-1 produce must end, committed or told that leadership moved.
func TestConcurrentUse(t *testing.T) {
	m1, m2 := newTestManager(t, 1, vfs.NewMem()), newTestManager(t, 2, vfs.NewMem())
	var clock sync.Mutex
	now := t0
	tick := func() int64 {
		clock.Lock()
		defer clock.Unlock()
		now++
		return now
	}
	elect := func(leader, epoch int32) {
		req := lisr(1, 5, lisrPart(0, leader, epoch, []int32{1, 2}, 1, 2))
		m1.LeaderAndIsr(req, tick())
		m2.LeaderAndIsr(req, tick())
	}
	elect(1, 0)
	managers := map[int32]*Manager{1: m1, 2: m2}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Fetcher loops: each broker fetches from whoever it follows.
	for _, m := range []*Manager{m1, m2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := m.Ready(tick())
				for _, f := range r.Fetches {
					leader := managers[f.Target.Broker]
					m.FetchResponse(f.Target, f.Req, leader.HandleFetch(f.Req, tick()), nil, tick())
				}
				if r.AlterPartition != nil {
					m.AlterPartitionResponse(nil, context.Canceled, tick()) // no controller here
				}
				if r.Empty() {
					select {
					case <-m.Wake():
					case <-time.After(time.Millisecond):
					case <-stop:
						return
					}
				}
			}
		}()
	}
	// Producers: acks=-1 to whoever leads, waiting with Await.
	var producers sync.WaitGroup
	var committed, lost atomic.Int64
	for g := 0; g < 3; g++ {
		buf := batch(t, "v")
		producers.Add(1)
		go func() {
			defer producers.Done()
			for i := 0; i < 200; i++ {
				for _, m := range []*Manager{m1, m2} {
					p := m.Partition(testTopic, 0)
					res, err := p.AppendAsLeader(buf, -1, 2, tick())
					if err != nil {
						continue
					}
					w := res.Wait
					w.Deadline = tick() + 1e9
					switch s := Await(ctx, p, &w, tick); s {
					case AckCommitted:
						committed.Add(1)
					case AckNotLeader:
						lost.Add(1)
					default:
						t.Errorf("produce ended %v", s)
						return
					}
				}
			}
		}()
	}
	// Leadership moves meanwhile.
	done := make(chan struct{})
	go func() {
		producers.Wait()
		close(done)
	}()
	for e := int32(1); ; e++ {
		select {
		case <-done:
		default:
			elect(1+e%2, e)
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}
	// Leadership settles: a produce now commits.
	p := m2.Partition(testTopic, 0)
	if p.Role() != RoleLeader {
		p = m1.Partition(testTopic, 0)
	}
	res, err := p.AppendAsLeader(batch(t, "last"), -1, 2, tick())
	if err != nil {
		t.Fatal(err)
	}
	w := res.Wait
	w.Deadline = tick() + 1e9
	if s := Await(ctx, p, &w, tick); s != AckCommitted {
		t.Fatalf("the last produce ended %v", s)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d produces committed, %d lost leadership", committed.Load(), lost.Load())
	for _, m := range []*Manager{m1, m2} {
		if err := m.Partition(testTopic, 0).Failed(); err != nil {
			t.Fatal(err)
		}
	}
}
