package vfs

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory filesystem that remembers what is durable, for crash tests.
// It is safe for concurrent use (one mutex guards the whole tree).
//
// What is modelled:
//   - Inodes. A directory entry points at a node; open files keep their node even
//     after the name is removed or renamed; after a crash a node reachable under two
//     names (a cross-directory rename whose two directories were not synced together)
//     is one node, like a hard link.
//   - File data. Each file holds its current bytes and its synced bytes (the state at
//     its last File.Sync), plus the ordered list of writes and truncates made since.
//     A crash keeps the synced bytes and then, per file: none of the later changes,
//     all of them, a prefix of them cut at a byte inside a write (a torn write: the
//     bytes of a write land in order and the file is as long as what landed), or the
//     synced bytes extended to the current size with zeros or with garbage (the size
//     reached the disk, the data did not). An unsynced truncate is thus lost (the
//     file comes back longer, with its old bytes) or kept, in order with the writes.
//   - Directory entries. Each directory holds its current entries and its durable
//     entries (as of its last SyncDir), plus the ordered list of entry changes since
//     (create, remove, rename; a rename within one directory is one change). A crash
//     keeps the durable entries and a prefix of the later changes, so an unsynced new
//     file vanishes and an unsynced rename reappears under the old name. A cross-
//     directory rename is one change in each directory, and the two may land
//     independently (the file may show up under both names or under neither).
//   - A directory's own entry is in its parent: MkdirAll is durable only after
//     SyncDir of the parent, as on a real filesystem.
//
// What is not modelled: metadata other than size and mode (times are not durable
// state), page-granular reordering of writes within one file (writes land in the
// order they were made), partial sector damage inside synced data, write errors
// (use Inject), file permissions (modes are recorded, never enforced), symlinks and
// hard links (other than the crash case above), disk-full.
type MemFS struct {
	mu   sync.Mutex
	root *memNode
}

// NewMem returns an empty in-memory filesystem whose root directory "/" exists and
// is durable. Relative paths are taken relative to "/".
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(0o755)}
}

type memNode struct {
	isDir bool
	mode  os.FileMode
	mtime time.Time

	// Files. data[:frozen] of data's backing array may be shared with immutable
	// views (synced, crash clones): it is copied before being written over.
	data    []byte
	frozen  int
	synced  []byte   // contents at the last Sync; never written to
	pending []fileOp // changes since the last Sync, in order

	// Directories.
	children map[string]*memNode
	durable  map[string]*memNode
	dirOps   []dirOp // entry changes since the last SyncDir, in order
}

// fileOp is an unsynced write (data != nil) or truncate (to size off).
type fileOp struct {
	truncate bool
	off      int64
	data     []byte
}

// dirOp is one atomic change to a directory's entries; node nil removes name.
type dirOp []entryChange

type entryChange struct {
	name string
	node *memNode
}

func newDirNode(mode os.FileMode) *memNode {
	return &memNode{
		isDir:    true,
		mode:     os.ModeDir | mode.Perm(),
		mtime:    time.Now(),
		children: map[string]*memNode{},
		durable:  map[string]*memNode{},
	}
}

func newFileNode(mode os.FileMode) *memNode {
	return &memNode{mode: mode.Perm(), mtime: time.Now()}
}

// own makes data's backing array private if position pos of it is shared.
func (n *memNode) own(pos int) {
	if pos < n.frozen {
		d := make([]byte, len(n.data), cap(n.data))
		copy(d, n.data)
		n.data = d
		n.frozen = 0
	}
}

// freeze returns data[:l] as an immutable view.
func (n *memNode) freeze(l int) []byte {
	if l > n.frozen {
		n.frozen = l
	}
	return n.data[:l:l]
}

// resize sets len(data) to size, zero-filling growth.
func (n *memNode) resize(size int) {
	old := len(n.data)
	if size <= old {
		n.data = n.data[:size]
		return
	}
	n.own(old)
	if size <= cap(n.data) {
		n.data = n.data[:size]
		clear(n.data[old:size])
		return
	}
	d := make([]byte, size, max(size, 2*cap(n.data)))
	copy(d, n.data)
	n.data = d
	n.frozen = 0
}

func (n *memNode) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	o := int(off)
	end := o + len(p)
	if end > len(n.data) {
		n.resize(end)
	}
	n.own(o)
	copy(n.data[o:end], p)
	n.pending = append(n.pending, fileOp{off: off, data: append([]byte(nil), p...)})
	n.mtime = time.Now()
}

func (n *memNode) truncate(size int64) {
	n.resize(int(size))
	n.pending = append(n.pending, fileOp{truncate: true, off: size})
	n.mtime = time.Now()
}

func (n *memNode) sync() {
	if n.isDir {
		n.durable = maps.Clone(n.children)
		n.dirOps = nil
		return
	}
	n.synced = n.freeze(len(n.data))
	n.pending = nil
}

// addOp records an entry change and applies it to the current entries.
func (n *memNode) addOp(op dirOp) {
	for _, c := range op {
		if c.node == nil {
			delete(n.children, c.name)
		} else {
			n.children[c.name] = c.node
		}
	}
	n.dirOps = append(n.dirOps, op)
	n.mtime = time.Now()
}

func cleanPath(name string) string {
	return path.Clean("/" + name)
}

// walk resolves p to (parent dir, base name, node or nil). It fails if an
// intermediate component is missing or is not a directory.
func (m *MemFS) walk(op, name string) (parent *memNode, base string, n *memNode, err error) {
	p := cleanPath(name)
	if p == "/" {
		return nil, "/", m.root, nil
	}
	parts := strings.Split(p[1:], "/")
	dir := m.root
	for i, part := range parts {
		c := dir.children[part]
		if i == len(parts)-1 {
			return dir, part, c, nil
		}
		if c == nil {
			return nil, "", nil, &os.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if !c.isDir {
			return nil, "", nil, &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		dir = c
	}
	panic("unreachable")
}

// OpenFile opens name with os.OpenFile's flags (O_RDONLY, O_WRONLY, O_RDWR,
// O_APPEND, O_CREATE, O_EXCL, O_TRUNC; others are ignored).
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, base, n, err := m.walk("open", name)
	if err != nil {
		return nil, err
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	f := &memFile{
		fs:     m,
		name:   name,
		read:   acc == os.O_RDONLY || acc == os.O_RDWR,
		write:  acc == os.O_WRONLY || acc == os.O_RDWR,
		append: flag&os.O_APPEND != 0,
	}
	if n != nil {
		if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrExist}
		}
		if n.isDir && (f.write || flag&os.O_TRUNC != 0) {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
		}
		if flag&os.O_TRUNC != 0 && f.write && len(n.data) > 0 {
			n.truncate(0)
		}
	} else {
		if flag&os.O_CREATE == 0 || parent == nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		n = newFileNode(perm)
		parent.addOp(dirOp{{base, n}})
	}
	f.n = n
	return f, nil
}

// Open opens name read-only.
func (m *MemFS) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates name for reading and writing.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, base, n, err := m.walk("remove", name)
	if err != nil {
		return err
	}
	if n == nil {
		return &os.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if parent == nil {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EBUSY}
	}
	if n.isDir && len(n.children) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	parent.addOp(dirOp{{base, nil}})
	return nil
}

// RemoveAll removes name and everything below it; a missing name is not an error.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, base, n, err := m.walk("unlinkat", name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if n == nil {
		return nil
	}
	if parent == nil {
		return &os.PathError{Op: "unlinkat", Path: name, Err: syscall.EBUSY}
	}
	removeTree(n)
	parent.addOp(dirOp{{base, nil}})
	return nil
}

func removeTree(n *memNode) {
	if !n.isDir {
		return
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		removeTree(n.children[name])
		n.addOp(dirOp{{name, nil}})
	}
}

// Rename renames oldname to newname, replacing a file (or an empty directory, if
// oldname is a directory) at newname.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lerr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	op, ob, on, err := m.walk("rename", oldname)
	if err != nil {
		return lerr(errors.Unwrap(err))
	}
	if on == nil {
		return lerr(fs.ErrNotExist)
	}
	np, nb, nn, err := m.walk("rename", newname)
	if err != nil {
		return lerr(errors.Unwrap(err))
	}
	if op == nil || np == nil {
		return lerr(syscall.EBUSY)
	}
	if nn == on {
		return nil
	}
	if nn != nil {
		switch {
		case nn.isDir && !on.isDir:
			return lerr(syscall.EISDIR)
		case !nn.isDir && on.isDir:
			return lerr(syscall.ENOTDIR)
		case nn.isDir && len(nn.children) > 0:
			return lerr(syscall.ENOTEMPTY)
		}
	}
	if on.isDir {
		co, cn := cleanPath(oldname), cleanPath(newname)
		if strings.HasPrefix(cn, co+"/") {
			return lerr(syscall.EINVAL)
		}
	}
	if op == np {
		op.addOp(dirOp{{nb, on}, {ob, nil}})
	} else {
		np.addOp(dirOp{{nb, on}})
		op.addOp(dirOp{{ob, nil}})
	}
	return nil
}

// MkdirAll creates dir and any missing parents.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(dir)
	if p == "/" {
		return nil
	}
	cur := m.root
	for _, part := range strings.Split(p[1:], "/") {
		c := cur.children[part]
		if c == nil {
			c = newDirNode(perm)
			cur.addOp(dirOp{{part, c}})
		} else if !c.isDir {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		cur = c
	}
	return nil
}

func (m *MemFS) dir(op, name string) (*memNode, error) {
	_, _, n, err := m.walk(op, name)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, &os.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if !n.isDir {
		return nil, &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	return n, nil
}

// ReadDir returns the sorted names in dir.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.dir("open", dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Stat describes name.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, base, n, err := m.walk("stat", name)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return n.info(base), nil
}

// SyncDir makes dir's current entries durable.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.dir("sync", dir)
	if err != nil {
		return err
	}
	n.sync()
	return nil
}

// SyncAll makes the whole current tree durable, as if every file and directory
// had been synced: handy after a test's setup.
func (m *MemFS) SyncAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rec func(n *memNode)
	rec = func(n *memNode) {
		n.sync()
		for _, c := range n.children {
			rec(c)
		}
	}
	rec(m.root)
}

func (n *memNode) info(name string) os.FileInfo {
	return &memInfo{name: name, size: int64(len(n.data)), mode: n.mode, mtime: n.mtime}
}

type memInfo struct {
	name  string
	size  int64
	mode  os.FileMode
	mtime time.Time
}

func (i *memInfo) Name() string       { return i.name }
func (i *memInfo) Size() int64        { return i.size }
func (i *memInfo) Mode() os.FileMode  { return i.mode }
func (i *memInfo) ModTime() time.Time { return i.mtime }
func (i *memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *memInfo) Sys() any           { return nil }

// memFile is an open MemFS file. Its offset is guarded by the filesystem's mutex.
type memFile struct {
	fs                  *MemFS
	n                   *memNode
	name                string
	read, write, append bool
	off                 int64
	closed              bool
}

var (
	errNegativeOffset = errors.New("negative offset")
	errWriteAtAppend  = errors.New("os: invalid use of WriteAt on file opened with O_APPEND")
)

const (
	needNone = iota
	needRead
	needWrite
)

// check fails the op on a closed file, or one not opened for what op needs.
func (f *memFile) check(op string, need int) error {
	if f.closed {
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	}
	if (need == needRead && !f.read) || (need == needWrite && !f.write) {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	if need == needRead && f.n.isDir {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", needRead); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[f.off:])
	f.off += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", needRead); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: errNegativeOffset}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", needWrite); err != nil {
		return 0, err
	}
	if f.append {
		f.off = int64(len(f.n.data))
	}
	f.n.writeAt(p, f.off)
	f.off += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", needWrite); err != nil {
		return 0, err
	}
	if f.append {
		return 0, errWriteAtAppend
	}
	if off < 0 {
		return 0, &os.PathError{Op: "writeat", Path: f.name, Err: errNegativeOffset}
	}
	f.n.writeAt(p, off)
	return len(p), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("seek", needNone); err != nil {
		return 0, err
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.off + offset
	case io.SeekEnd:
		abs = int64(len(f.n.data)) + offset
	default:
		return 0, &os.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	if abs < 0 {
		return 0, &os.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	f.off = abs
	return abs, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

// Sync makes the file's data and size durable; on a directory it is SyncDir.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync", needNone); err != nil {
		return err
	}
	f.n.sync()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "truncate", Path: f.name, Err: os.ErrClosed}
	}
	if !f.write || size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	f.n.truncate(size)
	return nil
}

// Allocate extends the file with zeros to size bytes (never shrinks); like
// Truncate, the new size is durable only after Sync.
func (f *memFile) Allocate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "fallocate", Path: f.name, Err: os.ErrClosed}
	}
	if !f.write || size < 0 {
		return &os.PathError{Op: "fallocate", Path: f.name, Err: syscall.EBADF}
	}
	if size > int64(len(f.n.data)) {
		f.n.truncate(size)
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat", needNone); err != nil {
		return nil, err
	}
	return f.n.info(path.Base(cleanPath(f.name))), nil
}

func (f *memFile) Name() string { return f.name }
