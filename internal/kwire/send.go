package kwire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sent is a request Send wrote; Receive reads its response.
type Sent struct {
	req  kmsg.Request
	corr int32
}

// Send writes req (at req.GetVersion()) without waiting for its response,
// so that the broker serves it while the caller works on an earlier
// response (a replica fetcher appends one Fetch's records while the next
// is on its way). Responses come in the order sent (a broker serves one
// request of a connection at a time) and must be read so, with Receive;
// until then Request and Pipeline refuse with ErrUnread.
func (c *Conn) Send(ctx context.Context, req kmsg.Request) (Sent, error) {
	c.mu.Lock()
	idle := len(c.unread) == 0
	c.mu.Unlock()
	if idle {
		// re-authentication is an exchange of its own: only between
		// requests
		if err := c.maybeReauth(ctx); err != nil {
			return Sent{}, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return Sent{}, err
	}
	stop := c.watch(ctx)
	defer stop()
	corr := c.nextCorr()
	c.wbuf = appendRequest(c.wbuf[:0], req, corr, c.clientID)
	err := c.write(ctx)
	c.trim()
	if err != nil {
		return Sent{}, err
	}
	c.unread = append(c.unread, corr)
	return Sent{req: req, corr: corr}, nil
}

// Receive reads the response to s, the oldest request sent and unread, into
// *buf (grown as needed; the caller keeps it for the next): the response's
// byte fields (Fetch records) alias *buf, not the connection's buffer, so
// a caller alternating two buffers keeps one response while it reads the
// next.
func (c *Conn) Receive(ctx context.Context, s Sent, buf *[]byte) (kmsg.Response, error) {
	resp, _, _, err := c.ReceiveEarly(ctx, s, buf, nil)
	return resp, err
}
