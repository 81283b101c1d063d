package fsutil

import "errors"

// ErrAtomicWrite marks every error WriteFileAtomic returns; it wraps the
// underlying filesystem error.
var ErrAtomicWrite = errors.New("fsutil: atomic write failed")
