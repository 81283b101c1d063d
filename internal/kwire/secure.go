package kwire

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Security is how a connection secures itself, after the listener's
// security protocol: TLS (SSL, SASL_SSL) and SASL (SASL_PLAINTEXT,
// SASL_SSL). The zero value is PLAINTEXT.
type Security struct {
	// TLS, when set, wraps the connection in TLS with the config it returns
	// for the host dialled; the handshake is part of Dial.
	TLS func(host string) *tls.Config
	// SASL, when set, authenticates the connection before Dial returns:
	// SaslHandshake v1 naming the mechanism, then SaslAuthenticate v1
	// rounds until the mechanism's session is done (KIP-152).
	SASL sasl.Mechanism
}

// secure runs TLS and SASL on a new connection as o.Security asks.
func (c *Conn) secure(ctx context.Context, o *Options) error {
	if o.Security.TLS != nil {
		host, _, err := net.SplitHostPort(c.addr)
		if err != nil {
			host = c.addr
		}
		tc := o.Security.TLS(host)
		if tc.ServerName == "" {
			tc.ServerName = host
		}
		t := tls.Client(c.nc, tc)
		if err := t.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("%w: TLS handshake with %s: %w", ErrAuthentication, c.addr, err)
		}
		c.nc = t
	}
	if o.Security.SASL != nil {
		return c.authenticate(ctx, o.Security.SASL)
	}
	return nil
}

// authenticate runs the SASL exchange of mech.
func (c *Conn) authenticate(ctx context.Context, mech sasl.Mechanism) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = mech.Name()
	resp, err := c.request(ctx, hs)
	if err != nil {
		return err
	}
	hr, ok := resp.(*kmsg.SASLHandshakeResponse)
	if !ok {
		return fmt.Errorf("%w: SaslHandshake answered by another response kind", ErrBadFrame)
	}
	if hr.ErrorCode != 0 {
		return fmt.Errorf("%w: %s: mechanism %s refused (error %d; the broker offers %v)", ErrAuthentication, c.addr, mech.Name(), hr.ErrorCode, hr.SupportedMechanisms)
	}
	sess, out, err := mech.Authenticate(ctx, c.addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAuthentication, mech.Name(), err)
	}
	for done := false; !done; {
		ar := kmsg.NewPtrSASLAuthenticateRequest()
		ar.Version = 1
		ar.SASLAuthBytes = out
		resp, err := c.request(ctx, ar)
		if err != nil {
			return err
		}
		r, ok := resp.(*kmsg.SASLAuthenticateResponse)
		if !ok {
			return fmt.Errorf("%w: SaslAuthenticate answered by another response kind", ErrBadFrame)
		}
		if r.ErrorCode != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fmt.Errorf("%w: %s with %s: error %d: %s", ErrAuthentication, mech.Name(), c.addr, r.ErrorCode, msg)
		}
		c.sessionLifetimeMs = r.SessionLifetimeMillis
		// the response's bytes alias the read buffer: the mechanism gets a copy
		if done, out, err = sess.Challenge(append([]byte(nil), r.SASLAuthBytes...)); err != nil {
			return fmt.Errorf("%w: %s with %s: %w", ErrAuthentication, mech.Name(), c.addr, err)
		}
		if done && len(out) > 0 {
			return fmt.Errorf("%w: %s: the mechanism finished with a message left to send", ErrAuthentication, mech.Name())
		}
	}
	if c.mech == nil { // set once, at Dial: read without a lock after
		c.mech = mech
	}
	if c.sessionLifetimeMs > 0 {
		// again at 85% of the lifetime, as Kafka's clients (KIP-368)
		c.reauthAt = time.Now().Add(time.Duration(c.sessionLifetimeMs) * time.Millisecond * 85 / 100)
	}
	return nil
}

// maybeReauth authenticates again when the session is near its end
// (KIP-368); a failure closes the connection.
func (c *Conn) maybeReauth(ctx context.Context) error {
	if c.mech == nil {
		return nil
	}
	c.amu.Lock()
	defer c.amu.Unlock()
	if c.reauthAt.IsZero() || time.Now().Before(c.reauthAt) {
		return nil
	}
	c.reauthAt = time.Time{}
	if err := c.authenticate(ctx, c.mech); err != nil {
		c.Close()
		return fmt.Errorf("re-authentication: %w", err)
	}
	return nil
}

// SessionLifetimeMs is the session lifetime the broker gave the SASL
// authentication (KIP-368; 0: none, or no SASL).
func (c *Conn) SessionLifetimeMs() int64 { return c.sessionLifetimeMs }
