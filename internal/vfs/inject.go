package vfs

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// OpKind names a filesystem operation seen by an Injector.
type OpKind uint8

// Operation kinds. OpenFile with O_CREATE or O_TRUNC, and Create, are OpCreate;
// other opens are OpOpen. OpStat covers FS.Stat and File.Stat.
const (
	OpOpen OpKind = iota
	OpCreate
	OpRead
	OpReadAt
	OpWrite
	OpWriteAt
	OpSeek
	OpSync
	OpTruncate
	OpClose
	OpStat
	OpRename
	OpRemove
	OpRemoveAll
	OpMkdirAll
	OpReadDir
	OpSyncDir
	OpAllocate
	// OpMapWrite is a write through a shared memory mapping of the file: no
	// system call, so the injector sees it only when the writer announces it
	// (MapWriteCheck). A failed one stands for a fault in the mapping (an
	// I/O error or a file cut behind the writer's back: SIGBUS).
	OpMapWrite
	numOpKinds
)

var opNames = [numOpKinds]string{
	"open", "create", "read", "readat", "write", "writeat", "seek", "sync", "truncate",
	"close", "stat", "rename", "remove", "removeall", "mkdirall", "readdir", "syncdir",
	"allocate", "mapwrite",
}

func (k OpKind) String() string {
	if k < numOpKinds {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// MutatingOps are the kinds that change the filesystem: the write and sync points
// of a workload.
var MutatingOps = []OpKind{
	OpCreate, OpWrite, OpWriteAt, OpSync, OpTruncate, OpRename, OpRemove, OpRemoveAll,
	OpMkdirAll, OpSyncDir, OpAllocate, OpMapWrite,
}

// Mutating reports whether k changes the filesystem.
func (k OpKind) Mutating() bool { return slices.Contains(MutatingOps, k) }

// Op is one operation passed to an Injector.
type Op struct {
	Kind    OpKind
	Path    string // the file or directory (the old name for OpRename)
	NewPath string // OpRename's new name
	Flag    int    // OpOpen and OpCreate flags
	Off     int64  // OpReadAt, OpWriteAt and OpMapWrite offset, OpTruncate and OpAllocate size, OpSeek offset
	Len     int    // bytes asked for by reads and writes
}

func (o Op) String() string {
	switch o.Kind {
	case OpRename:
		return fmt.Sprintf("rename %s -> %s", o.Path, o.NewPath)
	case OpRead, OpWrite:
		return fmt.Sprintf("%s %s (%d bytes)", o.Kind, o.Path, o.Len)
	case OpReadAt, OpWriteAt, OpMapWrite:
		return fmt.Sprintf("%s %s (%d bytes at %d)", o.Kind, o.Path, o.Len, o.Off)
	case OpTruncate, OpAllocate:
		return fmt.Sprintf("%s %s to %d", o.Kind, o.Path, o.Off)
	}
	return fmt.Sprintf("%s %s", o.Kind, o.Path)
}

// Injector decides whether an operation fails. MaybeError is called before the
// operation, possibly from several goroutines; a non-nil error fails it, and the
// operation is not performed.
type Injector interface {
	MaybeError(op Op) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op) error

// MaybeError calls f.
func (f InjectorFunc) MaybeError(op Op) error { return f(op) }

// InjectedError is the error an injected FS returns for a failed operation. It
// matches ErrInjected with errors.Is, and unwraps to the injector's error.
type InjectedError struct {
	Op  Op
	Err error
}

func (e *InjectedError) Error() string {
	if e.Err == nil || e.Err == ErrInjected {
		return fmt.Sprintf("%v: %v", ErrInjected, e.Op)
	}
	return fmt.Sprintf("%v: %v: %v", ErrInjected, e.Op, e.Err)
}

func (e *InjectedError) Unwrap() error { return e.Err }

// Is makes every InjectedError match ErrInjected.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected }

// InjectFS is the FS Inject returns.
type InjectFS struct {
	fs       FS
	inj      Injector
	injected atomic.Int64
}

// Inject wraps fs so that every operation (see OpKind) is first shown to inj,
// which may fail it. The result is an *InjectFS. Files it opens implement OSFiler
// when fs's do (writes through a mapping are not seen by inj).
func Inject(fs FS, inj Injector) FS {
	return &InjectFS{fs: fs, inj: inj}
}

// Injected returns how many operations inj has failed so far.
func (i *InjectFS) Injected() int { return int(i.injected.Load()) }

// Unwrap returns the wrapped FS.
func (i *InjectFS) Unwrap() FS { return i.fs }

func (i *InjectFS) check(op Op) error {
	err := i.inj.MaybeError(op)
	if err == nil {
		return nil
	}
	i.injected.Add(1)
	return &InjectedError{Op: op, Err: err}
}

func (i *InjectFS) open(name string, flag int, call func() (File, error)) (File, error) {
	kind := OpOpen
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		kind = OpCreate
	}
	if err := i.check(Op{Kind: kind, Path: name, Flag: flag}); err != nil {
		return nil, err
	}
	f, err := call()
	if err != nil {
		return nil, err
	}
	return &injectFile{f: f, fs: i}, nil
}

func (i *InjectFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return i.open(name, flag, func() (File, error) { return i.fs.OpenFile(name, flag, perm) })
}

func (i *InjectFS) Open(name string) (File, error) {
	return i.open(name, os.O_RDONLY, func() (File, error) { return i.fs.Open(name) })
}

func (i *InjectFS) Create(name string) (File, error) {
	return i.open(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, func() (File, error) { return i.fs.Create(name) })
}

func (i *InjectFS) Remove(name string) error {
	if err := i.check(Op{Kind: OpRemove, Path: name}); err != nil {
		return err
	}
	return i.fs.Remove(name)
}

func (i *InjectFS) RemoveAll(name string) error {
	if err := i.check(Op{Kind: OpRemoveAll, Path: name}); err != nil {
		return err
	}
	return i.fs.RemoveAll(name)
}

func (i *InjectFS) Rename(oldname, newname string) error {
	if err := i.check(Op{Kind: OpRename, Path: oldname, NewPath: newname}); err != nil {
		return err
	}
	return i.fs.Rename(oldname, newname)
}

func (i *InjectFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := i.check(Op{Kind: OpMkdirAll, Path: dir}); err != nil {
		return err
	}
	return i.fs.MkdirAll(dir, perm)
}

func (i *InjectFS) ReadDir(dir string) ([]string, error) {
	if err := i.check(Op{Kind: OpReadDir, Path: dir}); err != nil {
		return nil, err
	}
	return i.fs.ReadDir(dir)
}

func (i *InjectFS) Stat(name string) (os.FileInfo, error) {
	if err := i.check(Op{Kind: OpStat, Path: name}); err != nil {
		return nil, err
	}
	return i.fs.Stat(name)
}

func (i *InjectFS) SyncDir(dir string) error {
	if err := i.check(Op{Kind: OpSyncDir, Path: dir}); err != nil {
		return err
	}
	return i.fs.SyncDir(dir)
}

type injectFile struct {
	f  File
	fs *InjectFS
}

var _ OSFiler = (*injectFile)(nil)

func (f *injectFile) op(kind OpKind, off int64, n int) error {
	return f.fs.check(Op{Kind: kind, Path: f.f.Name(), Off: off, Len: n})
}

func (f *injectFile) Read(p []byte) (int, error) {
	if err := f.op(OpRead, 0, len(p)); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.op(OpReadAt, off, len(p)); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *injectFile) Write(p []byte) (int, error) {
	if err := f.op(OpWrite, 0, len(p)); err != nil {
		return 0, err
	}
	return f.f.Write(p)
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.op(OpWriteAt, off, len(p)); err != nil {
		return 0, err
	}
	return f.f.WriteAt(p, off)
}

func (f *injectFile) Seek(offset int64, whence int) (int64, error) {
	if err := f.op(OpSeek, offset, 0); err != nil {
		return 0, err
	}
	return f.f.Seek(offset, whence)
}

// Close closes the underlying file even when the injector fails the close, so
// injected failures leak no descriptors.
func (f *injectFile) Close() error {
	err := f.op(OpClose, 0, 0)
	cerr := f.f.Close()
	if err != nil {
		return err
	}
	return cerr
}

func (f *injectFile) Sync() error {
	if err := f.op(OpSync, 0, 0); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.op(OpTruncate, size, 0); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *injectFile) Allocate(size int64) error {
	if err := f.op(OpAllocate, size, 0); err != nil {
		return err
	}
	return f.f.Allocate(size)
}

func (f *injectFile) Stat() (os.FileInfo, error) {
	if err := f.op(OpStat, 0, 0); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

func (f *injectFile) Name() string { return f.f.Name() }

// MapWriteCheck shows a write through a mapping of n bytes at off to the
// injector (see MapWriteChecker).
func (f *injectFile) MapWriteCheck(off int64, n int) error {
	if err := f.op(OpMapWrite, off, n); err != nil {
		return err
	}
	if c, ok := f.f.(MapWriteChecker); ok {
		return c.MapWriteCheck(off, n)
	}
	return nil
}

// OSFile returns the wrapped file's *os.File, or nil.
func (f *injectFile) OSFile() *os.File {
	if o, ok := f.f.(OSFiler); ok {
		return o.OSFile()
	}
	return nil
}

// matcher matches op kinds; no kinds matches every kind.
type matcher []OpKind

func (m matcher) match(k OpKind) bool { return len(m) == 0 || slices.Contains(m, k) }

// FailAtInjector fails one operation; see FailAt.
type FailAtInjector struct {
	k     int
	kinds matcher
	mu    sync.Mutex
	seen  int
	fails int
}

// FailAt returns an injector that fails the k-th (counting from 0) operation whose
// kind is one of kinds (any kind if none are given), and nothing else.
func FailAt(k int, kinds ...OpKind) *FailAtInjector {
	return &FailAtInjector{k: k, kinds: kinds}
}

// MaybeError implements Injector.
func (f *FailAtInjector) MaybeError(op Op) error {
	if !f.kinds.match(op.Kind) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen++
	if f.seen-1 == f.k {
		f.fails++
		return ErrInjected
	}
	return nil
}

// Injected returns how many errors f has returned (0 or 1).
func (f *FailAtInjector) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails
}

// Counter counts operations without failing any; see NewCounter.
type Counter struct {
	kinds matcher
	n     atomic.Int64
}

// NewCounter returns an injector that counts operations whose kind is one of kinds
// (any kind if none are given). A crash harness runs its workload once under a
// Counter of MutatingOps, then once per k under CrashAt(k, MutatingOps...).
func NewCounter(kinds ...OpKind) *Counter { return &Counter{kinds: kinds} }

// MaybeError implements Injector; it never fails.
func (c *Counter) MaybeError(op Op) error {
	if c.kinds.match(op.Kind) {
		c.n.Add(1)
	}
	return nil
}

// Count returns the number of matching operations seen.
func (c *Counter) Count() int { return int(c.n.Load()) }

// CrashInjector simulates the process dying; see CrashAt.
type CrashInjector struct {
	k       int
	kinds   matcher
	mu      sync.Mutex
	seen    int
	crashed bool
	fails   int
}

// CrashAt returns an injector under which the first k operations whose kind is one
// of kinds (any kind if none are given) succeed; the next one fails, and so does
// every mutating operation (MutatingOps) after it: the process has died, and
// nothing it does reaches the disk any more. Reads, seeks and closes still work.
// Take MemFS.CrashClone or AllCrashStates of the underlying MemFS afterwards.
func CrashAt(k int, kinds ...OpKind) *CrashInjector {
	return &CrashInjector{k: k, kinds: kinds}
}

// MaybeError implements Injector.
func (c *CrashInjector) MaybeError(op Op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crashed && c.kinds.match(op.Kind) {
		if c.seen == c.k {
			c.crashed = true
			c.fails++
			return ErrInjected
		}
		c.seen++
	}
	if c.crashed && op.Kind.Mutating() {
		c.fails++
		return ErrInjected
	}
	return nil
}

// Crashed reports whether the crash point was reached.
func (c *CrashInjector) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// Injected returns how many errors c has returned.
func (c *CrashInjector) Injected() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fails
}

// IsInjected reports whether err is, or wraps, an injected error.
func IsInjected(err error) bool { return errors.Is(err, ErrInjected) }
