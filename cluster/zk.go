package cluster

// ZK is the part of ZooKeeper strata uses, one session's view. The production
// implementation wraps github.com/go-zookeeper/zk (zkconn.go); the simulation
// implements it in memory (package cluster/zksim) with sessions that expire on
// demand and watches delivered when the simulation decides. Both pass the same
// conformance suite. Paths are absolute within the chroot (the implementation
// adds the chroot). Errors are this package's sentinels (ErrNoNode,
// ErrNodeExists, ErrBadVersion, ErrNotEmpty, ErrSessionExpired,
// ErrConnectionLoss), so callers never see the client library's.
type ZK interface {
	// Get reads a znode's data and stat.
	Get(path string) ([]byte, Stat, error)
	// GetW is Get and leaves a one-shot watch for the znode's data change or
	// deletion.
	GetW(path string) ([]byte, Stat, <-chan WatchEvent, error)
	// Children lists a znode's children, unsorted.
	Children(path string) ([]string, Stat, error)
	// ChildrenW is Children and leaves a one-shot watch for a change of the
	// child list or the znode's deletion.
	ChildrenW(path string) ([]string, Stat, <-chan WatchEvent, error)
	// Exists tells whether a znode exists.
	Exists(path string) (bool, Stat, error)
	// ExistsW is Exists and leaves a one-shot watch for its creation,
	// deletion or data change.
	ExistsW(path string) (bool, Stat, <-chan WatchEvent, error)
	// Create creates a znode and returns its path (with the sequence suffix
	// for sequential modes). Parents must exist.
	Create(path string, data []byte, mode CreateMode) (string, error)
	// Set writes a znode's data if its version is version (-1: any).
	Set(path string, data []byte, version int32) (Stat, error)
	// Delete removes a childless znode if its version is version (-1: any).
	Delete(path string, version int32) error
	// Multi applies ops atomically: all or none. On failure the error is the
	// first failing op's, and the results tell which op failed.
	Multi(ops ...Op) ([]OpResult, error)
	// SessionID is the current session's id (0 while none is established).
	SessionID() int64
	// Events delivers session state changes: connected, disconnected,
	// expired (after which a new session is being established and every
	// ephemeral znode and watch of the old one is gone).
	Events() <-chan SessionEvent
	// Close ends the session; its ephemeral znodes go at once.
	Close()
}

// Stat is the part of a znode's stat strata uses.
type Stat struct {
	Version        int32 // data version: the fencing token of conditional writes
	Czxid          int64 // creation zxid: a broker registration's czxid is its broker epoch
	EphemeralOwner int64 // owning session of an ephemeral znode, else 0
	NumChildren    int32
}

// CreateMode is a znode's lifetime and naming.
type CreateMode int

// Create modes.
const (
	Persistent CreateMode = iota
	Ephemeral
	PersistentSequential
	EphemeralSequential
)

// OpKind is the kind of one operation of a Multi.
type OpKind int

// Multi operation kinds.
const (
	OpCreate OpKind = iota
	OpSet
	OpDelete
	OpCheck // a version check: fails the multi unless Path has Version
)

// Op is one operation of a Multi.
type Op struct {
	Kind    OpKind
	Path    string
	Data    []byte     // OpCreate, OpSet
	Version int32      // OpSet, OpDelete, OpCheck (-1: any for Set/Delete)
	Mode    CreateMode // OpCreate
}

// OpResult is the outcome of one op of a Multi.
type OpResult struct {
	Path string // OpCreate: the created path
	Stat Stat   // OpSet: the new stat
	Err  error  // nil, or why this op failed (the others then report ErrRolledBack or nil)
}

// WatchEventType says what a watch saw.
type WatchEventType int

// Watch event types.
const (
	NodeCreated WatchEventType = iota + 1
	NodeDeleted
	NodeDataChanged
	NodeChildrenChanged
	// WatchLost: the session that set the watch expired or was closed
	// before anything changed; the watcher must re-read and watch again.
	WatchLost
)

// WatchEvent is one fired watch.
type WatchEvent struct {
	Type WatchEventType
	Path string
}

// SessionState is the state of the ZooKeeper session.
type SessionState int

// Session states.
const (
	SessionConnected SessionState = iota + 1
	SessionDisconnected
	SessionExpired
)

// SessionEvent is a change of the session's state. After SessionExpired a
// SessionConnected with a new SessionID follows once a new session is made.
type SessionEvent struct {
	State     SessionState
	SessionID int64
}
