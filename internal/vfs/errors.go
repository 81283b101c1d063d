package vfs

import "errors"

var (
	// ErrInjected is the error an Injector returns to fail an operation. Errors
	// returned by an injected FS wrap it together with the failed Op (see
	// InjectedError), so errors.Is(err, ErrInjected) tells an injected failure
	// from a real one.
	ErrInjected = errors.New("vfs: injected error")

	// ErrLocked is returned by LockDir when another process (or another open file
	// description in this process) holds the directory's lock.
	ErrLocked = errors.New("vfs: directory is locked")
)
