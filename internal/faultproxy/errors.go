package faultproxy

import "errors"

// ErrNoPeer: PeerPID found no local process holding the other end of the
// connection (not loopback, no /proc, or the peer already closed it).
var ErrNoPeer = errors.New("faultproxy: no local peer process")
