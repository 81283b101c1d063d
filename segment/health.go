package segment

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Health is the failure state of one log directory, shared by every log in
// it: Kafka's LogDirFailureChannel for one directory. The first I/O error a
// log cannot undo (see the package doc) fails it; from then on every log
// sharing it refuses appends, flushes, truncations and deletions, and reads,
// with an error wrapping ErrOffline and that first cause. It never recovers:
// the directory is repaired offline (strata verify / recover) and reopened.
//
// A log opened without Options.Health gets one of its own.
type Health struct {
	err    atomic.Pointer[error]
	onFail func(err error)

	mu     sync.Mutex
	joined []*Health
}

// NewHealth returns a healthy Health. onFail (may be nil) is called once,
// by the goroutine whose error failed it, possibly while a log's writer lock
// is held: it must not call back into the logs, only record or signal (a
// data directory reports the directory offline from it).
func NewHealth(onFail func(err error)) *Health {
	return &Health{onFail: onFail}
}

// Err is nil while healthy, else the error that failed it (wrapping
// ErrOffline and the cause).
func (h *Health) Err() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Fail fails h with cause unless it has failed already, and returns the
// error every later operation returns: the first failure's. Healths joined
// to h fail with it.
func (h *Health) Fail(cause error) error {
	err, _ := h.fail(cause)
	return err
}

// fail is Fail also reporting whether this call failed h.
func (h *Health) fail(cause error) (error, bool) {
	err := fmt.Errorf("%w: %w", ErrOffline, cause)
	if !h.err.CompareAndSwap(nil, &err) {
		return h.Err(), false
	}
	h.mu.Lock()
	joined := h.joined
	h.mu.Unlock()
	for _, j := range joined {
		j.Fail(cause)
	}
	if h.onFail != nil {
		h.onFail(err)
	}
	return err, true
}

// Join makes h and o fail together: a failure of either fails the other
// (with the same cause). A data directory joins the Health of a log opened
// outside it when it adopts the log. If one has already failed, the other
// fails now.
func (h *Health) Join(o *Health) {
	if h == o || o == nil {
		return
	}
	h.mu.Lock()
	h.joined = append(h.joined, o)
	h.mu.Unlock()
	o.mu.Lock()
	o.joined = append(o.joined, h)
	o.mu.Unlock()
	if p := h.err.Load(); p != nil {
		o.Fail(cause(*p))
	} else if p := o.err.Load(); p != nil {
		h.Fail(cause(*p))
	}
}

// cause unwraps the ErrOffline wrapping Fail added.
func cause(err error) error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := u.Unwrap(); len(errs) == 2 {
			return errs[1]
		}
	}
	return err
}
