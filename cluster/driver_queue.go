package cluster

import "sync"

// eventQueue is the driver's inbox (Kafka's ControllerEventManager queue):
// unbounded and ordered, so watch callbacks, timers, the channel manager and
// the broker's request handlers never block on the event loop. A handler
// can see whether the next event is of its own read class and leave the
// read to it (a burst of watches costs one read; reads of different
// classes keep their order).
type eventQueue struct {
	mu     sync.Mutex
	q      []driverEvent
	head   int
	wake   chan struct{} // 1-buffered
	closed bool
}

func newEventQueue() *eventQueue { return &eventQueue{wake: make(chan struct{}, 1)} }

// push queues ev; false once closed.
func (q *eventQueue) push(ev driverEvent) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.q = append(q.q, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// tryPop takes the oldest event, if any.
func (q *eventQueue) tryPop() (driverEvent, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.q) {
		return driverEvent{}, false
	}
	ev := q.q[q.head]
	q.q[q.head] = driverEvent{}
	q.head++
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.q) {
		q.q = append(q.q[:0], q.q[q.head:]...)
		q.head = 0
	}
	return ev, true
}

// pop waits for the oldest event; false once closed (what is still queued
// is dropped).
func (q *eventQueue) pop() (driverEvent, bool) {
	for {
		q.mu.Lock()
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return driverEvent{}, false
		}
		if ev, ok := q.tryPop(); ok {
			return ev, true
		}
		<-q.wake
	}
}

// nextIs tells whether the next event is one of read class c.
func (q *eventQueue) nextIs(c readClass) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.head < len(q.q) && q.q[q.head].class() == c
}

// len is the number of queued events.
func (q *eventQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.q) - q.head
}

// close wakes pop for good; later pushes are dropped.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
