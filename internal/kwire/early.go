package kwire

import (
	"context"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Early is ReceiveEarly's hook. It is called with the response's frame as
// far as it has arrived (the correlation id first; size is the whole
// frame's) and returns a request to send at once, before the rest is read,
// or nil to be called again when more has arrived. It runs on the
// receiving goroutine, between reads: the bytes it sees are settled.
type Early func(frame []byte, size int) kmsg.Request

// ReceiveEarly is Receive, with early consulted while the response
// arrives: a request it returns is written at once (a replica fetcher
// sends its next Fetch as soon as the answer's batch headers tell where it
// starts, while the rest of the answer is still on the wire) and returned
// as next, sent true, for Receive to read after this one. A response that
// does not fit *buf's capacity is read without the hook (the buffer grows
// only as bytes arrive; see readBody). A nil early is Receive.
func (c *Conn) ReceiveEarly(ctx context.Context, s Sent, buf *[]byte, early Early) (resp kmsg.Response, next Sent, sent bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, Sent{}, false, err
	}
	if len(c.unread) == 0 || c.unread[0] != s.corr {
		return nil, Sent{}, false, fmt.Errorf("%w: response %d asked out of order", ErrUnread, s.corr)
	}
	c.unread = c.unread[:copy(c.unread, c.unread[1:])]
	stop := c.watch(ctx)
	defer stop()
	if early == nil {
		resp, err = c.read(ctx, s.req, s.corr, buf)
		return resp, Sent{}, false, err
	}
	hook := func(frame []byte, size int) error {
		if sent {
			return nil
		}
		req := early(frame, size)
		if req == nil {
			return nil
		}
		corr := c.nextCorr()
		c.wbuf = appendRequest(c.wbuf[:0], req, corr, c.clientID)
		if err := c.write(ctx); err != nil {
			return err
		}
		c.unread = append(c.unread, corr)
		next, sent = Sent{req: req, corr: corr}, true
		return nil
	}
	resp, err = c.readFrame(ctx, s.req, s.corr, buf, hook)
	return resp, next, sent, err
}

// readWatching reads n bytes into *rbuf (whose capacity holds them),
// calling hook after each read that leaves some to come. A hook's error
// (its write failed, and failed the connection) ends the read as hookErr.
func (c *Conn) readWatching(rbuf *[]byte, n int, hook func([]byte, int) error) (body []byte, hookErr, err error) {
	b := (*rbuf)[:n]
	*rbuf = b
	got := 0
	for got < n {
		m, err := c.nc.Read(b[got:])
		got += m
		if got == n {
			break
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		if m > 0 {
			if err := hook(b[:got], n); err != nil {
				return nil, err, nil
			}
		}
	}
	return b, nil, nil
}
