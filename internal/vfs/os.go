package vfs

import (
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// OS is the real filesystem. Its files implement OSFiler, so mmap and sendfile can
// reach the descriptor. File.Sync is fdatasync; SyncDir opens the directory and
// fsyncs it.
var OS FS = osFS{}

// Default is the filesystem production code uses; it is OS.
var Default = OS

type osFS struct{}

type osFile struct {
	*os.File
}

var _ OSFiler = osFile{}

// OSFile returns the underlying *os.File.
func (f osFile) OSFile() *os.File { return f.File }

// Sync flushes the file's data and size with fdatasync.
func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.File.Fd()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.File.Name(), Err: err}
		}
		return nil
	}
}

// Allocate extends the file to at least size bytes with fallocate(fd, 0, 0,
// size). A filesystem without fallocate (EOPNOTSUPP) gets a plain size
// extension instead, which reserves no blocks.
func (f osFile) Allocate(size int64) error {
	for {
		err := unix.Fallocate(int(f.File.Fd()), 0, 0, size)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP:
			st, serr := f.File.Stat()
			if serr != nil {
				return serr
			}
			if st.Size() >= size {
				return nil
			}
			return f.File.Truncate(size)
		}
		return &os.PathError{Op: "fallocate", Path: f.File.Name(), Err: err}
	}
}

func wrapOS(f *os.File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return wrapOS(os.OpenFile(name, flag, perm))
}

func (osFS) Open(name string) (File, error) { return wrapOS(os.Open(name)) }

func (osFS) Create(name string) (File, error) { return wrapOS(os.Create(name)) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) RemoveAll(name string) error { return os.RemoveAll(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) ReadDir(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
