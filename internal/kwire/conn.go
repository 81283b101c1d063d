package kwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Options tune Dial. The zero value is usable.
type Options struct {
	// ClientID is the request header's client id ("" sends null).
	ClientID string
	// DialTimeout bounds the TCP connect when the context has no earlier
	// deadline (default 10 s).
	DialTimeout time.Duration
	// MaxResponseBytes bounds a response's size (default 256 MiB); a larger
	// size prefix is ErrBadFrame.
	MaxResponseBytes int32
	// Dial, when set, opens the connection (tests put a proxy there).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// KeepBufferBytes is the largest read or write buffer kept between
	// requests (default 4 MiB); a larger one, grown by a large exchange, is
	// dropped after it. A replica fetcher keeps its largest response
	// (replica.fetch.response.max.bytes) so that catching up does not
	// allocate and fault in a new buffer per fetch.
	KeepBufferBytes int
	// Security: TLS and SASL (zero: PLAINTEXT).
	Security Security
}

// Conn is one connection to a broker. Its methods may be called from
// several goroutines; they take turns.
type Conn struct {
	nc       net.Conn
	clientID *string
	max      int32
	keep     int
	addr     string

	sessionLifetimeMs int64 // SASL's (KIP-368)
	// KIP-368: the mechanism authenticated with, and when to authenticate
	// again (zero: never); amu serializes the re-authentication
	mech     sasl.Mechanism
	amu      sync.Mutex
	reauthAt time.Time

	mu       sync.Mutex
	corr     int32
	wbuf     []byte
	rbuf     []byte
	hdr      [4]byte // a response's size prefix
	err      error   // set once: why the connection is unusable
	versions map[int16]int16
	pend     []pending // Pipeline's requests, reused
	unread   []int32   // Send's requests whose response Receive has not read

	// cancellation: an AfterFunc of a call's context sets a past deadline,
	// only while that call (generation gen) is running
	cmu      sync.Mutex
	gen      uint64
	watching bool
}

type pending struct {
	req  kmsg.Request
	corr int32
}

// keepBuf is the default largest buffer kept between requests.
const keepBuf = 4 << 20

// Dial connects to a broker at addr (host:port).
func Dial(ctx context.Context, addr string, o Options) (*Conn, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 256 << 20
	}
	if o.KeepBufferBytes <= 0 {
		o.KeepBufferBytes = keepBuf
	}
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	dial := o.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kwire: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Conn{nc: nc, max: o.MaxResponseBytes, keep: o.KeepBufferBytes, addr: addr}
	if o.ClientID != "" {
		id := o.ClientID
		c.clientID = &id
	}
	if err := c.secure(dctx, &o); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Addr is the address dialled.
func (c *Conn) Addr() string { return c.addr }

// Close closes the connection; calls in progress fail, later ones return
// ErrClosed.
func (c *Conn) Close() error {
	err := c.nc.Close() // interrupts a call in progress without the lock
	c.mu.Lock()
	if c.err == nil {
		c.err = ErrClosed
	}
	c.mu.Unlock()
	return err
}

// Request sends req (at req.GetVersion()) and returns its response.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if err := c.maybeReauth(ctx); err != nil {
		return nil, err
	}
	return c.request(ctx, req)
}

// request is Request without the re-authentication check (the SASL
// exchange's own requests).
func (c *Conn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if len(c.unread) > 0 {
		return nil, ErrUnread
	}
	stop := c.watch(ctx)
	defer stop()
	corr := c.nextCorr()
	c.wbuf = appendRequest(c.wbuf[:0], req, corr, c.clientID)
	if err := c.write(ctx); err != nil {
		return nil, err
	}
	resp, err := c.read(ctx, req, corr, &c.rbuf)
	c.trim()
	return resp, err
}

// Pipeline writes every request at once and reads their responses in
// order: fewer round trips for a batch to one broker (the controller's
// requests after a failover). Only the last response aliases the read
// buffer: the record batches of earlier Fetch responses are copied out
// (the other inter-broker responses have no byte fields; kmsg copies
// strings).
func (c *Conn) Pipeline(ctx context.Context, reqs ...kmsg.Request) ([]kmsg.Response, error) {
	if err := c.maybeReauth(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if len(c.unread) > 0 {
		return nil, ErrUnread
	}
	stop := c.watch(ctx)
	defer stop()
	c.wbuf = c.wbuf[:0]
	c.pend = c.pend[:0]
	for _, req := range reqs {
		corr := c.nextCorr()
		c.wbuf = appendRequest(c.wbuf, req, corr, c.clientID)
		c.pend = append(c.pend, pending{req, corr})
	}
	if err := c.write(ctx); err != nil {
		return nil, err
	}
	out := make([]kmsg.Response, 0, len(reqs))
	for i, p := range c.pend {
		resp, err := c.read(ctx, p.req, p.corr, &c.rbuf)
		if err != nil {
			return nil, err
		}
		if i < len(c.pend)-1 {
			// the next read reuses the buffer: detach this one
			resp = detach(resp)
		}
		out = append(out, resp)
	}
	for i := range c.pend {
		c.pend[i] = pending{}
	}
	c.trim()
	return out, nil
}

func (c *Conn) usable() error {
	if c.err == nil {
		return nil
	}
	if errors.Is(c.err, ErrClosed) {
		return c.err
	}
	return fmt.Errorf("%w (after: %v)", ErrClosed, c.err)
}

func (c *Conn) nextCorr() int32 {
	c.corr++
	if c.corr < 0 {
		c.corr = 0
	}
	return c.corr
}

// fail records why the connection is unusable and closes it.
func (c *Conn) fail(err error) error {
	if c.err == nil {
		c.err = err
	}
	_ = c.nc.Close()
	return err
}

// watch applies ctx's deadline to the socket and interrupts the exchange
// when ctx is cancelled; the returned stop ends that, and once it returned
// a late cancellation cannot touch a later call.
func (c *Conn) watch(ctx context.Context) func() {
	if d, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(d)
	} else {
		_ = c.nc.SetDeadline(time.Time{})
	}
	if ctx.Done() == nil {
		return func() {}
	}
	c.cmu.Lock()
	c.gen++
	gen := c.gen
	c.watching = true
	c.cmu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		c.cmu.Lock()
		if c.watching && c.gen == gen {
			_ = c.nc.SetDeadline(time.Unix(1, 0))
		}
		c.cmu.Unlock()
	})
	return func() {
		stop()
		c.cmu.Lock()
		c.watching = false
		c.cmu.Unlock()
	}
}

// ioErr turns a socket error into the package's: a timeout or
// cancellation says so, an EOF or reset is ErrClosed.
func (c *Conn) ioErr(ctx context.Context, op string, err error) error {
	switch {
	case ctx.Err() != nil:
		return c.fail(fmt.Errorf("kwire: %s %s: %w", op, c.addr, ctx.Err()))
	case errors.Is(err, os.ErrDeadlineExceeded):
		if _, ok := ctx.Deadline(); ok {
			// the socket's deadline is the context's: it may fire a hair
			// before the context says so
			return c.fail(fmt.Errorf("kwire: %s %s: %w (%v)", op, c.addr, context.DeadlineExceeded, err))
		}
		return c.fail(fmt.Errorf("kwire: %s %s: %w", op, c.addr, err))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return c.fail(fmt.Errorf("%w: %s %s: %v", ErrClosed, op, c.addr, err))
	}
	return c.fail(fmt.Errorf("%w: %s %s: %v", ErrClosed, op, c.addr, err))
}

func (c *Conn) write(ctx context.Context) error {
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return c.ioErr(ctx, "write to", err)
	}
	return nil
}

// trim drops buffers grown past Options.KeepBufferBytes by a large
// exchange.
func (c *Conn) trim() {
	if cap(c.wbuf) > c.keep {
		c.wbuf = nil
	}
	if cap(c.rbuf) > c.keep {
		c.rbuf = nil
	}
}

// appendRequest appends req's frame: size, header, body.
func appendRequest(dst []byte, req kmsg.Request, corr int32, clientID *string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	key, v := req.Key(), req.GetVersion()
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(v))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if !(key == int16(kmsg.ControlledShutdown) && v == 0) { // header v0: no client id
		if clientID == nil {
			dst = binary.BigEndian.AppendUint16(dst, 0xffff)
		} else {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(*clientID)))
			dst = append(dst, *clientID...)
		}
		if req.IsFlexible() {
			dst = append(dst, 0) // no tagged fields
		}
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
