// Package zksim is an in-memory ZooKeeper for tests and the deterministic
// simulation: one Server holds the znode tree and many sessions, each
// session handle implements cluster.ZK.
//
// # Model
//
// The tree keeps what strata reads of a znode's stat: the data version,
// czxid and mzxid from one zxid counter (one per transaction: a create, a
// set, a delete, a whole multi, a session's creation and its end), the
// count of children ever created (a sequential child's suffix, 10 digits;
// a delete does not give a number back, a rolled-back create does, as in
// ZooKeeper 3.8) and the ephemeral owner. Errors are
// cluster's sentinels, for the same causes as ZooKeeper's (no parent, node
// exists, version mismatch, children left, a child under an ephemeral, an
// invalid path).
//
// Watches are one-shot, set by GetW (data change, deletion), ExistsW
// (creation, data change, deletion) and ChildrenW (child list change,
// deletion), and fire as ZooKeeper's do. A multi is atomic: its ops see each
// other's effects, a failure undoes all of them, and reports nil for the ops
// before the failing one, the failure for it and ErrRolledBack after it; its
// watches fire only when it commits.
//
// # Faults
//
//   - Server.ExpireSession(id): the session's ephemerals are deleted (other
//     sessions' watches fire), its own watches report WatchLost. A connected
//     handle then sees Disconnected, Expired and Connected with a new
//     session id, and its next call returns ErrSessionExpired without
//     running (the request that was in flight); a disconnected handle learns
//     all this when it reconnects.
//   - Session.Disconnect / Session.Reconnect: the connection drops and comes
//     back within the session timeout; calls in between return
//     ErrConnectionLoss without running; watches stay set and what fired
//     meanwhile is delivered after the reconnect.
//   - Options.Fault: a hook asked before every call, which can lose the
//     request (not run) or the response (run), either way ErrConnectionLoss
//     with a Disconnected/Connected pair, as a dropped connection.
//
// # Delivery
//
// Watch and session events go into a per-handle queue, in order, and are
// delivered (sent to the watch channel or to Events) at once unless
// Options.Hold keeps them back; Server.Pending, Deliver and DeliverAll let a
// simulation decide when held events arrive. Per handle the order is kept,
// and every call first delivers what is queued for its handle: a client
// sees a watch event before the data that triggered it, as ZooKeeper
// guarantees. Watch events wait while the handle is disconnected.
//
// Deterministic: no goroutines, no clock, no map-order dependence (children
// are listed sorted, sessions handled in id order). A mutex makes it safe
// to call from several goroutines in ordinary tests.
package zksim
