// Package vfs is the small filesystem interface all storage code goes through.
//
// Production code uses OS (the real filesystem). Tests use NewMem, an in-memory
// filesystem that remembers what has been synced, so that a simulated power loss
// (CrashClone) can drop unsynced data and unsynced directory entries, tear the last
// write, or extend a file with garbage, and Inject, which wraps any FS and fails or
// counts operations on demand, including writes through a memory mapping
// that the writer announces (MapWriteChecker, OpMapWrite).
//
// Semantics every implementation keeps:
//   - File.Sync makes the file's data and size durable (fdatasync). It does not make
//     the file's directory entry durable: that takes SyncDir on the parent directory.
//   - Rename and Remove are atomic in memory but durable only after SyncDir.
//   - File.Write appends at the file's own offset (files opened for writing start at
//     offset 0 unless opened with os.O_APPEND); WriteAt and ReadAt take explicit
//     offsets and do not move it.
//
// What MemFS models of a power loss, and what it does not, is documented on
// MemFS; the states a crash can leave are described on CrashOptions and
// enumerated by MemFS.AllCrashStates (see the crash-loop example). LockDir
// (Linux) keeps a second process, strata or a Kafka broker, out of a directory.
package vfs

import (
	"io"
	"os"
)

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	// Sync flushes the file's data and size to stable storage (fdatasync).
	Sync() error
	// Truncate changes the size of the file.
	Truncate(size int64) error
	// Allocate reserves space so the file is at least size bytes long, the new
	// bytes reading as zeros (fallocate mode 0; never shrinks). Like a write
	// extending the file, the new size is durable only after Sync.
	Allocate(size int64) error
	// Stat returns the file's metadata.
	Stat() (os.FileInfo, error)
	// Name returns the name the file was opened with.
	Name() string
}

// FS is a filesystem.
type FS interface {
	// OpenFile opens a file with os.OpenFile's flag and permission semantics.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Open opens a file read-only.
	Open(name string) (File, error)
	// Create creates or truncates a file for reading and writing.
	Create(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a path and everything below it.
	RemoveAll(name string) error
	// Rename atomically renames a file, replacing newname if it exists.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir lists the names in a directory, sorted.
	ReadDir(dir string) ([]string, error)
	// Stat describes a path.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries (creations, renames, removals) durable.
	SyncDir(dir string) error
}

// OSFiler is implemented by files backed by a real operating-system file; mmap and
// sendfile need the descriptor.
type OSFiler interface {
	OSFile() *os.File
}

// MapWriteChecker is implemented by files whose writes through a memory
// mapping can be watched: code that copies into a shared mapping of such a
// file calls MapWriteCheck(off, n) first and treats an error as a fault in
// the mapping. Injected files implement it (OpMapWrite), so fault injection
// reaches mapped writes, which make no system call; the OS's files do not.
type MapWriteChecker interface {
	MapWriteCheck(off int64, n int) error
}

// MapWriteCheckFunc returns f's MapWriteCheck, or nil when f has none (a
// writer keeps it with its mapping, so the hot path pays a nil check).
func MapWriteCheckFunc(f File) func(off int64, n int) error {
	if c, ok := f.(MapWriteChecker); ok {
		return c.MapWriteCheck
	}
	return nil
}

// AsOSFile returns the *os.File behind f when there is one.
func AsOSFile(f File) (*os.File, bool) {
	if o, ok := f.(OSFiler); ok {
		if of := o.OSFile(); of != nil {
			return of, true
		}
	}
	return nil, false
}
