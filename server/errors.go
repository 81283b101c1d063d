package server

import "errors"

// Sentinel errors of the broker. Wire-level problems are answered with Kafka
// error codes; these are what the Go API and the logs report.
var (
	// ErrConfig reports an invalid server.properties setting or override.
	ErrConfig = errors.New("server: invalid configuration")
	// ErrFrameSize is a request frame whose size prefix is negative or above
	// socket.request.max.bytes; the connection is closed.
	ErrFrameSize = errors.New("server: invalid request frame size")
	// ErrBadHeader is a request header that cannot be parsed.
	ErrBadHeader = errors.New("server: malformed request header")
	// ErrUnknownAPI is a request for an API key the broker does not serve.
	ErrUnknownAPI = errors.New("server: unknown or unsupported API key")
	// ErrUnsupportedVersion is a request version outside the advertised range.
	ErrUnsupportedVersion = errors.New("server: unsupported API version")
	// ErrBadRequest is a request body that does not parse at its version.
	ErrBadRequest = errors.New("server: malformed request body")
	// ErrClosed is returned by a server that has been shut down.
	ErrClosed = errors.New("server: closed")
	// ErrDataDir reports a log directory that cannot be used (meta.properties
	// mismatch, unreadable topic metadata, ...).
	ErrDataDir = errors.New("server: unusable data directory")
	// ErrInvalidTopic is a topic name Kafka would reject.
	ErrInvalidTopic = errors.New("server: invalid topic name")
	// ErrCluster reports that the broker could not join its cluster
	// (ZooKeeper unreachable, its broker.id registered by another broker,
	// a znode it cannot read or write).
	ErrCluster = errors.New("server: cannot join the cluster")
	// ErrInconsistentClusterID: the log dirs' meta.properties names
	// another cluster than ZooKeeper's /cluster/id (Kafka's
	// InconsistentClusterIdException); the broker refuses to start.
	ErrInconsistentClusterID = errors.New("server: the log dirs belong to another cluster")
)

// ErrUnauthenticated is a request a SASL listener's connection sent
// before it authenticated, or a failed authentication; the connection is
// closed.
var ErrUnauthenticated = errors.New("server: not authenticated")

// ErrQuota is a client quota entity or value that is not valid (a stored
// one that does not parse, an AlterClientQuotas entry Kafka refuses).
var ErrQuota = errors.New("server: invalid client quota")
