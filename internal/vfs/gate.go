package vfs

import (
	"strings"
	"sync"
	"sync/atomic"
)

// SyncGate is an injector that holds file syncs open: while it is closed
// (Hold), a sync of a file whose path ends with the suffix blocks until
// Release, after announcing itself on Entered. Tests use it to look at a log
// while an fsync is in progress.
type SyncGate struct {
	suffix   string
	held     atomic.Bool
	entered  chan string
	release  chan struct{}
	released sync.Once
}

// NewSyncGate returns an open gate for syncs of paths ending with suffix.
func NewSyncGate(suffix string) *SyncGate {
	return &SyncGate{suffix: suffix, entered: make(chan string, 16), release: make(chan struct{})}
}

// MaybeError implements Injector; it never fails, it only waits.
func (g *SyncGate) MaybeError(op Op) error {
	if op.Kind == OpSync && strings.HasSuffix(op.Path, g.suffix) && g.held.Load() {
		select {
		case g.entered <- op.Path:
		default:
		}
		<-g.release
	}
	return nil
}

// Hold makes later matching syncs wait for Release.
func (g *SyncGate) Hold() { g.held.Store(true) }

// Entered receives the path of each sync that starts waiting.
func (g *SyncGate) Entered() <-chan string { return g.entered }

// Release lets every waiting and later sync through; it may be called more
// than once (a test defers it so that a failed check leaves nothing held).
func (g *SyncGate) Release() {
	g.held.Store(false)
	g.released.Do(func() { close(g.release) })
}
