package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DirLocked reports whether someone holds the lock LockDir takes on dir (a
// running broker, strata's or Kafka's), without taking it and without
// creating anything: a missing .lock means unlocked. It asks with
// F_OFD_GETLK, which sees POSIX and OFD locks of other processes and OFD
// locks of other descriptions in this one.
func DirLocked(dir string) (bool, error) {
	name := filepath.Join(dir, LockFileName)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, &os.PathError{Op: "fcntl(F_OFD_GETLK)", Path: name, Err: err}
	}
	return lk.Type != unix.F_UNLCK, nil
}
