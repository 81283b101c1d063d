package kwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// read reads the response to req, which went out with correlation id corr,
// into *buf (the connection's c.rbuf, or a Receive caller's).
func (c *Conn) read(ctx context.Context, req kmsg.Request, corr int32, buf *[]byte) (kmsg.Response, error) {
	return c.readFrame(ctx, req, corr, buf, nil)
}

// readFrame is read, with ReceiveEarly's hook (nil: none) called while the
// frame arrives when it fits *buf's capacity.
func (c *Conn) readFrame(ctx context.Context, req kmsg.Request, corr int32, buf *[]byte, hook func([]byte, int) error) (kmsg.Response, error) {
	if _, err := io.ReadFull(c.nc, c.hdr[:]); err != nil {
		return nil, c.ioErr(ctx, "read from", err)
	}
	size := int32(binary.BigEndian.Uint32(c.hdr[:]))
	if size < 4 || size > c.max {
		return nil, c.fail(fmt.Errorf("%w: %s: response size %d (want 4..%d)", ErrBadFrame, c.addr, size, c.max))
	}
	var body []byte
	var err error
	if hook != nil && int(size) <= cap(*buf) {
		var hookErr error
		if body, hookErr, err = c.readWatching(buf, int(size), hook); hookErr != nil {
			return nil, hookErr
		}
	} else {
		body, err = c.readBody(buf, int(size))
	}
	if err != nil {
		return nil, c.ioErr(ctx, "read from", err)
	}
	got := int32(binary.BigEndian.Uint32(body))
	if got != corr {
		return nil, c.fail(fmt.Errorf("%w: %s: correlation id %d, want %d", ErrBadFrame, c.addr, got, corr))
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if body, err = skipTags(body); err != nil {
			return nil, c.fail(fmt.Errorf("%w: %s: response header: %v", ErrBadFrame, c.addr, err))
		}
	}
	if err := decode(resp, body); err != nil {
		if r, ok := unsupportedApiVersions(req, body); ok {
			return r, nil
		}
		return nil, c.fail(fmt.Errorf("%w: %s: %s v%d response: %v", ErrBadFrame, c.addr,
			kmsg.NameForKey(req.Key()), req.GetVersion(), err))
	}
	return resp, nil
}

// readBody reads n bytes into the reused read buffer *rbuf. A buffer larger
// than the one kept grows only as bytes arrive, so a lying size prefix cannot
// make it allocate what the peer never sends.
func (c *Conn) readBody(rbuf *[]byte, n int) ([]byte, error) {
	if n <= cap(*rbuf) {
		*rbuf = (*rbuf)[:n]
		_, err := io.ReadFull(c.nc, *rbuf)
		return *rbuf, err
	}
	const step = 1 << 20
	buf := (*rbuf)[:0]
	for len(buf) < n {
		m := min(n-len(buf), step)
		buf = slices.Grow(buf, m)
		if _, err := io.ReadFull(c.nc, buf[len(buf):len(buf)+m]); err != nil {
			*rbuf = buf[:0]
			return nil, err
		}
		buf = buf[:len(buf)+m]
	}
	*rbuf = buf
	return buf, nil
}

// decode reads a response body; a panic in the decoder (there should be
// none) is a bad frame, not a crash.
func decode(resp kmsg.Response, body []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("decoder panic: %v", v)
		}
	}()
	return resp.ReadFrom(body)
}

// skipTags skips a flexible header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for ; n > 0; n-- {
		if _, b, err = uvarint(b); err != nil { // tag
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("tagged field of %d bytes, %d left", size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > 1<<31 {
		return 0, nil, fmt.Errorf("bad uvarint")
	}
	return v, b[n:], nil
}

// unsupportedApiVersions: a broker that does not know the ApiVersions
// version asked answers UNSUPPORTED_VERSION in v0's format, which the
// asked version cannot decode; that is an answer, not a bad frame.
func unsupportedApiVersions(req kmsg.Request, body []byte) (kmsg.Response, bool) {
	if req.Key() != int16(kmsg.ApiVersions) || len(body) < 2 || int16(binary.BigEndian.Uint16(body)) != 35 {
		return nil, false
	}
	r := kmsg.NewPtrApiVersionsResponse()
	r.Version = 0
	if r.ReadFrom(body) != nil {
		r.ApiKeys = nil
	}
	r.ErrorCode = 35
	return r, true
}

// detach copies a response's aliased byte fields (Fetch records) out of the
// read buffer.
func detach(resp kmsg.Response) kmsg.Response {
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		for i := range f.Topics {
			for j := range f.Topics[i].Partitions {
				p := &f.Topics[i].Partitions[j]
				p.RecordBatches = append([]byte(nil), p.RecordBatches...)
			}
		}
	}
	return resp
}
