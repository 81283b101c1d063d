package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// LockFileName is the lock file LockDir creates in a directory, as Kafka's.
const LockFileName = ".lock"

// LockDir takes an exclusive lock on dir by write-locking the whole of
// <dir>/.lock (created if missing) with an open-file-description lock
// (F_OFD_SETLK). It conflicts with POSIX fcntl locks, which Java's
// FileChannel.tryLock takes (so a Kafka broker and strata keep each other out),
// with other processes' LockDir, and with a second LockDir in this process. The
// lock goes when unlock is called or the process exits.
//
// If the lock is held, the error wraps ErrLocked and names dir and, when the
// holder is a POSIX lock, its pid ("held by another process" otherwise: OFD
// holders report no pid).
func LockDir(dir string) (unlock func() error, err error) {
	name := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		defer f.Close()
		if err != unix.EAGAIN && err != unix.EACCES {
			return nil, &os.PathError{Op: "fcntl(F_OFD_SETLK)", Path: name, Err: err}
		}
		holder := "another process"
		q := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		if unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &q) == nil && q.Type != unix.F_UNLCK && q.Pid > 0 {
			holder = fmt.Sprintf("process %d", q.Pid)
		}
		return nil, fmt.Errorf("%w: %s: held by %s", ErrLocked, dir, holder)
	}
	// Closing the last descriptor releases the OFD lock.
	return sync.OnceValue(f.Close), nil
}
