package server

import "sync"

// broadcast wakes every waiter at once: wait returns a channel closed by
// the next signal. A channel is made only when someone waits, so a signal
// nobody waits for costs a lock and nothing else.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) signal() {
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}

// appendedAsLeader wakes parked fetches after an append as leader (or a
// role change): followers for the records, consumers for a high watermark
// that an ISR of one moves at once.
func (cl *clusterNode) appendedAsLeader() {
	cl.appended.signal()
	cl.hwMoved.signal()
}
