package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/metrics"
	"github.com/stratalog/strata/record"
)

// conn serves one client connection: it reads a request, handles it, writes
// the response, and only then reads the next one, so responses leave in
// request order (Kafka mutes a channel the same way while a request is in
// flight).
type conn struct {
	s   *Server
	nc  net.Conn
	tcp *net.TCPConn    // nil when the connection is not TCP (no sendfile)
	raw syscall.RawConn // tcp's descriptor, nil without one
	ip  string          // the peer's address (max.connections.per.ip)
	// listener is the name of the listener the connection came in on:
	// Metadata answers with the brokers' endpoints on it.
	listener string
	auth     connAuth // security protocol, principal, SASL state (sasl.go)
	log      *slog.Logger

	// reserved is what the request being served holds of
	// queued.max.request.bytes, given back once it is served.
	reserved int64

	// in holds bytes read from the socket ahead of the frame being parsed:
	// in[inR:inW] are unread. One read usually brings a whole small request
	// (size prefix and body), so it costs one system call, not two.
	in       []byte
	inR, inW int
	rbuf     []byte              // a request frame larger than in, reused while small
	wbuf     []byte              // response frame, reused while small
	rr       record.RecordReader // produce validation: reused decompression buffer

	// The request being served, for its RequestMetrics (metrics.go):
	// API key (-1 until its version checked out) and version, time waited
	// for request memory, parked in a purgatory, writing the response.
	mkey, mver           int16
	queued, remote, send time.Duration
	// For the slow-request log (request_log.go): the request being
	// served, its client id and correlation id, and the peer's address.
	req      kmsg.Request
	clientID string
	corr     int32
	peer     string

	quota connQuota // client quotas (conn_quota.go)

	// answered is set once a request past the handshake has been
	// answered: at shutdown such a connection closes as soon as it waits
	// for its next request (Server.Close).
	answered atomic.Bool
}

// inBufSize is the connection's read-ahead buffer, allocated at its first
// request and kept: frames up to this size are parsed in place (fetches,
// metadata, offset commits, small produce batches); larger ones are read into
// rbuf, which grows with them.
const inBufSize = 16 << 10

// reqHeader is a parsed request header (v0-v2).
type reqHeader struct {
	key      int16
	version  int16
	corr     int32
	clientID string
}

// keepBuf is the largest buffer a connection keeps between requests.
const keepBuf = 1 << 20

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc}
	if c.tcp, _ = nc.(*net.TCPConn); c.tcp != nil {
		if raw, err := c.tcp.SyscallConn(); err == nil {
			c.raw = raw
		}
	}
	c.peer = nc.RemoteAddr().String()
	c.log = s.log.With("conn", s.nextID.Add(1), "remote", c.peer)
	return c
}

func (c *conn) serve() {
	defer c.s.removeConn(c)
	defer c.nc.Close()
	defer c.releaseRequest()
	defer func() {
		// A bug in a handler must cost one connection, not the broker.
		if v := recover(); v != nil {
			c.log.Error("panic serving request, closing connection", "panic", v, "stack", string(debug.Stack()))
		}
	}()
	c.log.Debug("connection opened")
	if !c.startTLS() {
		return
	}
	for {
		_ = c.nc.SetReadDeadline(c.idleDeadline())
		if c.s.closing.Load() { // checked after the deadline: see Server.Close
			if c.answered.Load() {
				return
			}
			_ = c.nc.SetReadDeadline(c.s.drainUntil)
		}
		frame, err := c.readFrame()
		if err != nil {
			c.logReadError(err)
			return
		}
		handshake := c.handshake(frame)
		err = c.handle(frame)
		c.releaseRequest()
		if err != nil {
			c.log.Error("closing connection", "error", err)
			return
		}
		if !handshake {
			c.answered.Store(true)
		}
		if d := c.quota.throttle; d > 0 {
			c.quota.throttle = 0
			c.throttleWait(d) // muted: the next request is read after the throttle time
		}
		if cap(c.rbuf) > keepBuf {
			c.rbuf = nil
		}
		if cap(c.wbuf) > keepBuf {
			c.wbuf = nil
		}
	}
}

// handshake reports whether frame is part of the connection's handshake:
// ApiVersions, SaslHandshake, SaslAuthenticate or a bare SASL token.
func (c *conn) handshake(frame []byte) bool {
	if c.auth.raw {
		return true
	}
	if len(frame) < 2 {
		return false
	}
	switch int16(binary.BigEndian.Uint16(frame)) {
	case kmsg.ApiVersions.Int16(), kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
		return true
	}
	return false
}

// wake makes the connection see that the broker is closing: at once if
// it waits for its next request, after the server's drainUntil if it has
// answered only its handshake (see Server.Close).
func (c *conn) wake() {
	if c.answered.Load() {
		_ = c.nc.SetReadDeadline(time.Now())
	} else {
		_ = c.nc.SetReadDeadline(c.s.drainUntil)
	}
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF):
		c.log.Debug("connection closed by client")
	case errors.Is(err, errShutdown):
	case errors.Is(err, ErrFrameSize), errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Error("closing connection", "error", err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if !c.s.closing.Load() {
			c.log.Info("closing idle connection")
		}
	default:
		c.log.Warn("connection read failed", "error", err)
	}
}

// idleDeadline is when the connection counts as idle: connections.max.idle.ms
// from now (negative: never, as in Kafka).
func (c *conn) idleDeadline() time.Time {
	idle := c.s.cfg.ConnectionsMaxIdleMs
	if idle < 0 {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(idle) * time.Millisecond)
}

// errShutdown ends a connection waiting for request memory at shutdown.
var errShutdown = errors.New("server: shutting down")

// releaseRequest gives back the served request's queued.max.request.bytes.
func (c *conn) releaseRequest() {
	c.s.reqMem.release(c.reserved)
	c.reserved = 0
}

// readFrame reads one size-prefixed request. The size is checked against
// socket.request.max.bytes before anything is allocated, and a large frame's
// buffer grows only as its bytes actually arrive, so a lying prefix cannot
// make the broker allocate what the client never sends. Then the size is
// reserved from queued.max.request.bytes, waiting while that is used up,
// before the body is read. A frame that fits the read-ahead buffer is
// returned in place; it is valid until the next readFrame.
func (c *conn) readFrame() ([]byte, error) {
	if c.in == nil {
		c.in = make([]byte, inBufSize)
	}
	if err := c.fill(4); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: frame size cut short", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(c.in[c.inR:]))
	if n < 0 || n > c.s.cfg.SocketRequestMaxBytes {
		return nil, fmt.Errorf("%w: %d (socket.request.max.bytes %d)", ErrFrameSize, n, c.s.cfg.SocketRequestMaxBytes)
	}
	c.inR += 4
	var began time.Time
	if c.s.timed {
		began = time.Now()
	}
	if !c.s.reqMem.reserve(int64(n), c.s.done) {
		return nil, errShutdown
	}
	if c.s.timed {
		c.queued = time.Since(began)
	}
	c.reserved = int64(n)
	if int(n) <= len(c.in) {
		if err := c.fill(int(n)); err != nil {
			return nil, cutShort(err, n)
		}
		b := c.in[c.inR : c.inR+int(n)]
		c.inR += int(n)
		return b, nil
	}
	// Larger than the read-ahead buffer: what it holds starts the frame,
	// the rest is read straight into rbuf.
	const step = 64 << 10
	b := append(c.rbuf[:0], c.in[c.inR:c.inW]...)
	c.inR, c.inW = 0, 0
	for len(b) < int(n) {
		want := min(int(n), max(2*cap(b), step))
		if cap(b) < want {
			nb := make([]byte, len(b), want)
			copy(nb, b)
			b = nb
		}
		m, err := io.ReadFull(c.nc, b[len(b):min(cap(b), int(n))]) // rbuf may be larger than this frame
		b = b[:len(b)+m]
		if err != nil {
			return nil, cutShort(err, n)
		}
	}
	c.rbuf = b
	return b, nil
}

// fill reads until in holds at least n unread bytes (n <= len(in)), moving
// the unread tail to the front first when n would not fit behind it. Each
// read takes whatever the socket has, up to the buffer's end. It returns
// io.EOF when the connection ends before any byte of the n, else
// io.ErrUnexpectedEOF.
func (c *conn) fill(n int) error {
	if c.inW-c.inR >= n {
		return nil
	}
	if c.inR+n > len(c.in) || c.inR == c.inW {
		c.inW = copy(c.in, c.in[c.inR:c.inW])
		c.inR = 0
	}
	for c.inW-c.inR < n {
		m, err := c.nc.Read(c.in[c.inW:])
		c.inW += m
		if err != nil {
			if c.inW-c.inR >= n {
				return nil
			}
			if errors.Is(err, io.EOF) && c.inW > c.inR {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

func cutShort(err error, n int32) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: frame of %d bytes cut short", io.ErrUnexpectedEOF, n)
	}
	return err
}

// parseHeader parses the request header; flexible says whether a v2 header
// (with a tag buffer) follows the client id. It returns the body.
func parseHeader(b []byte, h *reqHeader, flexible func(key, version int16) bool) ([]byte, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadHeader, len(b))
	}
	h.key = int16(binary.BigEndian.Uint16(b))
	h.version = int16(binary.BigEndian.Uint16(b[2:]))
	h.corr = int32(binary.BigEndian.Uint32(b[4:]))
	b = b[8:]
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: no client id", ErrBadHeader)
	}
	l := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	switch {
	case l == -1:
		h.clientID = ""
	case l < 0 || int(l) > len(b):
		return nil, fmt.Errorf("%w: client id length %d", ErrBadHeader, l)
	default:
		h.clientID = string(b[:l])
		b = b[l:]
	}
	if flexible(h.key, h.version) {
		var err error
		if b, err = skipTags(b); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadHeader, err)
		}
	}
	return b, nil
}

// skipTags skips a tag buffer: uvarint count, then (uvarint tag, uvarint
// size, bytes) each.
func skipTags(b []byte) ([]byte, error) {
	n, m := binary.Uvarint(b)
	if m <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[m:]
	for ; n > 0; n-- {
		if _, m = binary.Uvarint(b); m <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[m:]
		size, m := binary.Uvarint(b)
		if m <= 0 || size > uint64(len(b)-m) {
			return nil, errors.New("bad tag size")
		}
		b = b[m+int(size):]
	}
	return b, nil
}

// isFlexible says whether (key, version) uses flexible encoding, from kmsg.
func isFlexible(key, version int16) bool {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return false
	}
	r.SetVersion(version)
	return r.IsFlexible()
}

// handle serves one request and, with metrics or the slow-request log on,
// times it: RequestMetrics (count by API and version, the time split) and a
// log line when it took longer than strata.request.slow.ms.
func (c *conn) handle(frame []byte) error {
	if !c.s.timed {
		return c.serveRequest(frame)
	}
	c.mkey, c.remote, c.send = -1, 0, 0
	began := time.Now()
	err := c.serveRequest(frame)
	if c.mkey >= 0 {
		local := time.Since(began) - c.remote - c.send
		sp := metrics.Span{RequestQueue: c.queued, Local: local, Remote: c.remote, Send: c.send}
		c.s.met.Request(c.mkey, c.mver, &sp)
		if c.s.slow >= 0 && slowSpan(c.mkey, &sp) >= c.s.slow {
			c.logSlow(sp)
		}
	}
	c.queued, c.req, c.quota.given = 0, nil, 0
	return err
}

// serveRequest parses and serves one request. A returned error closes the
// connection (Kafka closes it for requests it cannot parse or serve).
func (c *conn) serveRequest(frame []byte) error {
	if c.auth.raw {
		return c.handleRawSASL(frame) // after SaslHandshake v0: bare tokens
	}
	var h reqHeader
	body, err := parseHeader(frame, &h, isFlexible)
	if err != nil {
		return err
	}
	req := kmsg.RequestForKey(h.key)
	rng, ok := c.s.versionRange(h.key)
	if req == nil || !ok {
		return fmt.Errorf("%w: key %d version %d (client %q)", ErrUnknownAPI, h.key, h.version, h.clientID)
	}
	if h.version < rng.min || h.version > rng.max {
		if h.key == int16(kmsg.ApiVersions) && h.version > rng.max {
			c.log.Info("ApiVersions version not supported, answering v0", "version", h.version, "client", h.clientID)
			return c.writeResponse(&h, apiVersionsUnsupported())
		}
		return fmt.Errorf("%w: %s v%d not in %d-%d (client %q)", ErrUnsupportedVersion, kmsg.NameForKey(h.key), h.version, rng.min, rng.max, h.clientID)
	}
	if err := c.preAuthAllowed(h.key); err != nil {
		return err
	}
	if err := c.sessionExpired(h.key); err != nil {
		return err
	}
	req.SetVersion(h.version)
	if err := req.ReadFrom(body); err != nil {
		return fmt.Errorf("%w: %s v%d: %w", ErrBadRequest, kmsg.NameForKey(h.key), h.version, err)
	}
	c.mkey, c.mver = h.key, h.version
	c.req, c.clientID, c.corr = req, h.clientID, h.corr
	c.quota = connQuota{}
	quotas := c.quotasOn()
	if quotas {
		c.quota.began = time.Now()
	}
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("request", "api", kmsg.NameForKey(h.key), "version", h.version, "correlation_id", h.corr, "client", h.clientID)
	}
	g, err := c.authorize(req) // ACLs (acl_gate.go)
	if err != nil {
		return err
	}
	if g != nil && g.deny != nil {
		return c.writeResponse(&h, g.deny)
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp = c.s.handleApiVersions(r)
	case *kmsg.MetadataRequest:
		if c.s.cl != nil {
			resp = c.s.handleMetadataCluster(c, r)
			break
		}
		resp = c.s.handleMetadata(c.listener, r)
	case *kmsg.ProduceRequest:
		if c.s.cl != nil {
			resp = c.s.handleProduceCluster(c, r)
		} else {
			resp = c.s.handleProduce(c, r)
		}
		if quotas {
			c.quotaRecord(quotaProduce, h.clientID, float64(len(frame)), true) // appended, then throttled
		}
		if r.Acks == 0 {
			// acks=0: no response at all. A failed partition closes the
			// connection, as Kafka does, so the client refreshes metadata.
			if code := firstProduceError(resp.(*kmsg.ProduceResponse)); code != 0 {
				return fmt.Errorf("acks=0 produce failed with error code %d", code)
			}
			c.recordRequestTime(&h) // no response: the connection is muted only
			return nil
		}
	case *kmsg.FetchRequest:
		if r.ReplicaID >= 0 {
			c.mkey = metrics.FetchFollowerKey
		}
		if c.s.cl != nil {
			return c.s.handleFetchCluster(c, &h, r)
		}
		return c.s.handleFetch(c, &h, r)
	case *kmsg.ListOffsetsRequest:
		if c.s.cl != nil {
			resp = c.s.handleListOffsetsCluster(r)
			break
		}
		resp = c.s.handleListOffsets(r)
	case *kmsg.CreateTopicsRequest:
		resp = c.s.handleCreateTopics(r)
	case *kmsg.DeleteTopicsRequest:
		resp = c.s.handleDeleteTopics(r)
	case *kmsg.CreatePartitionsRequest:
		resp = c.s.handleCreatePartitions(r)
	case *kmsg.DeleteRecordsRequest:
		resp = c.s.handleDeleteRecords(r)
	case *kmsg.DescribeConfigsRequest:
		resp = c.s.handleDescribeConfigs(r)
	case *kmsg.AlterConfigsRequest:
		resp = c.s.handleAlterConfigs(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		resp = c.s.handleIncrementalAlterConfigs(r)
	case *kmsg.InitProducerIDRequest:
		resp = c.s.handleInitProducerID(c, r)
	case *kmsg.FindCoordinatorRequest:
		if c.s.cl != nil {
			resp = c.s.handleFindCoordinatorCluster(c, r)
			break
		}
		resp = c.s.handleFindCoordinator(c.listener, r)
	case *kmsg.JoinGroupRequest:
		resp = c.s.handleJoinGroup(c, &h, r)
	case *kmsg.SyncGroupRequest:
		resp = c.s.handleSyncGroup(c, r)
	case *kmsg.HeartbeatRequest:
		resp = c.s.handleHeartbeat(r)
	case *kmsg.LeaveGroupRequest:
		resp = c.s.handleLeaveGroup(r)
	case *kmsg.OffsetCommitRequest:
		resp = c.s.handleOffsetCommit(r)
	case *kmsg.OffsetFetchRequest:
		resp = c.s.handleOffsetFetch(r)
	case *kmsg.ListGroupsRequest:
		resp = c.s.handleListGroups(r)
	case *kmsg.DescribeGroupsRequest:
		resp = c.s.handleDescribeGroups(r)
	case *kmsg.DeleteGroupsRequest:
		resp = c.s.handleDeleteGroups(r)
	case *kmsg.OffsetDeleteRequest:
		resp = c.s.handleOffsetDelete(r)
	// Cluster mode only (advertised only there, cluster_api.go).
	case *kmsg.LeaderAndISRRequest:
		resp = c.s.handleLeaderAndIsr(r)
	case *kmsg.UpdateMetadataRequest:
		resp = c.s.handleUpdateMetadata(r)
	case *kmsg.StopReplicaRequest:
		resp = c.s.handleStopReplica(r)
	case *kmsg.ControlledShutdownRequest:
		resp = c.s.handleControlledShutdown(r)
	case *kmsg.AlterPartitionRequest:
		resp = c.s.handleAlterPartition(r)
	case *kmsg.DescribeLogDirsRequest:
		resp = c.s.handleDescribeLogDirs(r)
	case *kmsg.AlterReplicaLogDirsRequest:
		resp = c.s.handleAlterReplicaLogDirs(r)
	case *kmsg.ElectLeadersRequest:
		resp = c.s.handleElectLeaders(r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp = c.s.handleAlterPartitionReassignments(r)
	case *kmsg.ListPartitionReassignmentsRequest:
		resp = c.s.handleListPartitionReassignments(r)
	case *kmsg.OffsetForLeaderEpochRequest:
		resp = c.s.handleOffsetForLeaderEpoch(r)
	case *kmsg.DescribeClusterRequest:
		resp = c.s.handleDescribeCluster(c, r)
	case *kmsg.SASLHandshakeRequest:
		return c.handleSaslHandshake(&h, r)
	case *kmsg.SASLAuthenticateRequest:
		return c.handleSaslAuthenticate(&h, r)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		resp = c.s.handleDescribeUserScram(r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp = c.s.handleAlterUserScram(r)
	case *kmsg.DescribeACLsRequest:
		resp = c.s.handleDescribeAcls(r)
	case *kmsg.CreateACLsRequest:
		resp = c.s.handleCreateAcls(r)
	case *kmsg.DeleteACLsRequest:
		resp = c.s.handleDeleteAcls(r)
	// Transactions (api_txn.go).
	case *kmsg.AddPartitionsToTxnRequest:
		resp = c.s.handleAddPartitionsToTxn(r)
	case *kmsg.AddOffsetsToTxnRequest:
		resp = c.s.handleAddOffsetsToTxn(r)
	case *kmsg.EndTxnRequest:
		resp = c.s.handleEndTxn(r)
	case *kmsg.WriteTxnMarkersRequest:
		resp = c.s.handleWriteTxnMarkers(r)
	case *kmsg.TxnOffsetCommitRequest:
		resp = c.s.handleTxnOffsetCommit(r)
	case *kmsg.DescribeTransactionsRequest:
		resp = c.s.handleDescribeTransactions(r)
	case *kmsg.ListTransactionsRequest:
		resp = c.s.handleListTransactions(r)
	case *kmsg.DescribeProducersRequest:
		resp = c.s.handleDescribeProducers(r)
	case *kmsg.DescribeClientQuotasRequest:
		resp = c.s.handleDescribeClientQuotas(r)
	case *kmsg.AlterClientQuotasRequest:
		resp = c.s.handleAlterClientQuotas(r)
	default:
		return fmt.Errorf("%w: key %d has no handler", ErrUnknownAPI, h.key)
	}
	if g != nil && g.post != nil {
		g.post(resp)
	}
	if quotas {
		c.recordRequestTime(&h)
	}
	return c.writeResponse(&h, resp)
}

// writeResponse frames resp: size, correlation id, a tag byte for flexible
// versions (never for ApiVersions, whose response header is always v0), body.
func (c *conn) writeResponse(h *reqHeader, resp kmsg.Response) error {
	if d := c.setThrottle(resp); d > 0 {
		c.throttleWait(d)
	}
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(h.corr))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.wbuf = b
	if c.s != nil && c.s.timed {
		began := time.Now()
		defer func() { c.send += time.Since(began) }()
	}
	if err := c.writeAll(b); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// armWrite sets the write deadline: connections.max.idle.ms from now.
func (c *conn) armWrite() { _ = c.nc.SetWriteDeadline(c.idleDeadline()) }

// writeAll writes b. A client that stops reading holds the connection until
// no byte has moved for connections.max.idle.ms (Kafka expires a connection
// idle that long, and a send the client does not take is idle): the
// deadline is set at each call and renewed when it passes while bytes are
// still going out, so a slow reader is served and a stalled one costs its
// own connection only.
func (c *conn) writeAll(b []byte) error {
	for {
		c.armWrite()
		n, err := c.nc.Write(b)
		b = b[n:]
		if err == nil || n == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
	}
}
