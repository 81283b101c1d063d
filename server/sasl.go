package server

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/security"
)

// serverSecurity is what the listeners' security settings resolve to when
// the broker starts: each TLS listener's configuration, each SASL
// listener's mechanisms and PLAIN users, and the SCRAM credential store.
type serverSecurity struct {
	tls   map[string]*listenerTLS      // listener name -> TLS material
	mechs map[string][]string          // SASL listener name -> sasl.enabled.mechanisms
	plain map[string]map[string]string // listener name -> PLAIN user -> password
	scram *scramStore
	// failDelay is connection.failed.authentication.delay.ms.
	failDelay time.Duration
}

// startSecurity resolves the listeners' security settings; a key store
// that does not load stops the broker from starting.
func (s *Server) startSecurity() error {
	sec := &serverSecurity{
		tls:       map[string]*listenerTLS{},
		mechs:     map[string][]string{},
		plain:     map[string]map[string]string{},
		failDelay: time.Duration(s.cfg.authFailureDelayMs()) * time.Millisecond,
	}
	for _, l := range s.cfg.Listeners {
		proto := s.cfg.listenerProtocol(l.Name)
		if usesTLS(proto) {
			set, err := tlsSettingsFor(s.cfg, l.Name)
			if err != nil {
				return fmt.Errorf("%w: listener %s: %w", ErrConfig, l.Name, err)
			}
			lt, err := newListenerTLS(set)
			if err != nil {
				return fmt.Errorf("%w: listener %s: %w", ErrConfig, l.Name, err)
			}
			sec.tls[l.Name] = lt
		}
		if usesSASL(proto) {
			mechs := s.cfg.saslMechanisms(l.Name)
			sec.mechs[l.Name] = mechs
			if slices.Contains(mechs, security.PLAIN) {
				mods, err := security.ParseJAAS(s.cfg.Security.jaas(l.Name, security.PLAIN))
				if err != nil {
					return fmt.Errorf("%w: listener %s: %w", ErrConfig, l.Name, err)
				}
				if sec.plain[l.Name], err = security.PlainUsers(mods); err != nil {
					return fmt.Errorf("%w: listener %s: %w", ErrConfig, l.Name, err)
				}
			}
		}
	}
	var err error
	if sec.scram, err = newScramStore(s); err != nil {
		return err
	}
	s.sec = sec
	return nil
}

// secureConn wraps a TLS listener's connection; the handshake runs on the
// connection's own goroutine (conn.serve), not the acceptor's.
func (s *Server) secureConn(nc net.Conn, listener string) net.Conn {
	if lt := s.sec.tls[listener]; lt != nil {
		return tls.Server(nc, lt.serverConfig())
	}
	return nc
}

// SASL states of a connection.
const (
	saslNone      = iota // not a SASL listener, or authenticated
	saslHandshake        // waiting for SaslHandshake
	saslAuth             // waiting for SaslAuthenticate
)

// connAuth is a connection's authentication: its listener's protocol, the
// principal, and where its SASL exchange stands.
type connAuth struct {
	proto     string
	principal string
	state     int
	mech      string
	scram     *security.ScramServer
	// raw: the client sent SaslHandshake v0, so its tokens come as bare
	// size-prefixed frames without a request header, and are answered
	// the same way (Kafka's pre-KIP-152 exchange).
	raw bool
	// KIP-368: reauth is connections.max.reauth.ms (0: sessions do not
	// expire); expires is when the current session ends (zero: never);
	// reauthing is set while an authenticated connection authenticates
	// again (same mechanism, same principal).
	reauth    time.Duration
	expires   time.Time
	reauthing bool
}

// initAuth sets a new connection's protocol and starting state.
func (c *conn) initAuth() {
	c.auth.proto = c.s.cfg.listenerProtocol(c.listener)
	c.auth.principal = anonymousPrincipal
	if usesSASL(c.auth.proto) {
		c.auth.state = saslHandshake
		c.auth.reauth = time.Duration(c.s.cfg.reauthMs(c.listener)) * time.Millisecond
	}
}

// sessionExpired says whether an authenticated SASL connection's session
// ended (connections.max.reauth.ms) without a re-authentication: then any
// request but the re-authentication's own closes the connection, as
// Kafka's broker does (KIP-368).
func (c *conn) sessionExpired(key int16) error {
	if c.auth.expires.IsZero() || c.auth.state != saslNone || !time.Now().After(c.auth.expires) {
		return nil
	}
	switch kmsg.Key(key) {
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return nil
	}
	c.log.Info("closing connection: SASL session expired without re-authentication (connections.max.reauth.ms)",
		"listener", c.listener, "principal", c.auth.principal, "request", kmsg.NameForKey(key))
	return fmt.Errorf("%w: %s after the SASL session expired", ErrUnauthenticated, kmsg.NameForKey(key))
}

// startTLS completes the handshake of a TLS connection; false closes it.
func (c *conn) startTLS() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	p, err := tlsHandshake(tc, c.idleDeadline(), c.s.sec.tls[c.listener].set.principals)
	if err != nil {
		c.log.Info("closing connection: TLS handshake failed", "listener", c.listener, "error", err)
		return false
	}
	c.auth.principal = p
	c.log.Debug("TLS handshake done", "principal", p, "version", tls.VersionName(tc.ConnectionState().Version))
	return true
}

// preAuthAllowed says whether a request may come before a SASL
// connection has authenticated: ApiVersions and the SASL requests only, as
// Kafka's SaslServerAuthenticator. Anything else closes the connection.
func (c *conn) preAuthAllowed(key int16) error {
	if c.auth.state == saslNone {
		return nil
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return nil
	}
	return fmt.Errorf("%w: %s before SASL authentication on listener %s", ErrUnauthenticated, kmsg.NameForKey(key), c.listener)
}

// handleSaslHandshake answers SaslHandshake: the mechanisms enabled on the
// listener, UNSUPPORTED_SASL_MECHANISM (then the connection is closed) for
// another one, ILLEGAL_SASL_STATE outside a SASL listener's handshake.
func (c *conn) handleSaslHandshake(h *reqHeader, r *kmsg.SASLHandshakeRequest) error {
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	mechs := c.s.sec.mechs[c.listener]
	resp.SupportedMechanisms = mechs
	if c.auth.state == saslNone && c.auth.mech != "" && r.Version >= 1 {
		// KIP-368 re-authentication: the session's mechanism again
		if r.Mechanism != c.auth.mech {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			c.log.Info("closing connection: re-authentication changes the SASL mechanism", "from", c.auth.mech, "to", r.Mechanism)
			if err := c.writeResponse(h, resp); err != nil {
				return err
			}
			return fmt.Errorf("%w: re-authentication with %s, not %s", security.ErrMechanism, r.Mechanism, c.auth.mech)
		}
		c.auth.state, c.auth.reauthing = saslHandshake, true
	}
	if c.auth.state != saslHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return c.writeResponse(h, resp)
	}
	if !slices.Contains(mechs, r.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.log.Info("closing connection: unsupported SASL mechanism", "mechanism", r.Mechanism, "enabled", mechs)
		if err := c.writeResponse(h, resp); err != nil {
			return err
		}
		return fmt.Errorf("%w: %q (enabled: %v)", security.ErrMechanism, r.Mechanism, mechs)
	}
	c.auth.mech = r.Mechanism
	if r.Mechanism != security.PLAIN {
		var err error
		if c.auth.scram, err = security.NewScramServer(r.Mechanism, c.s.sec.scram.lookup); err != nil {
			return err
		}
	}
	c.auth.state = saslAuth
	c.auth.raw = r.Version == 0
	return c.writeResponse(h, resp)
}

// handleRawSASL takes a bare token after SaslHandshake v0. There is no
// error response in that exchange: a failure closes the connection.
func (c *conn) handleRawSASL(token []byte) error {
	user, out, done, err := c.saslStep(token)
	if err != nil {
		c.log.Info("authentication failed", "listener", c.listener, "mechanism", c.auth.mech, "user", user, "error", err)
		if !c.waitFailDelay() {
			return errShutdown
		}
		return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if done {
		if err := c.authenticated(user); err != nil {
			return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
	}
	b := binary.BigEndian.AppendUint32(c.wbuf[:0], uint32(len(out)))
	b = append(b, out...)
	c.wbuf = b
	return c.writeAll(b)
}

// saslStep runs the next step of the connection's exchange.
func (c *conn) saslStep(token []byte) (user string, out []byte, done bool, err error) {
	if c.auth.mech == security.PLAIN {
		user, err = security.PlainAuthenticate(token, c.s.sec.plain[c.listener])
		return user, nil, err == nil, err
	}
	out, done, err = c.auth.scram.Step(token)
	return c.auth.scram.User(), out, done, err
}

// authenticated ends a successful exchange: the principal, and with
// connections.max.reauth.ms the session's end. A re-authentication must
// keep the principal (Kafka: "Cannot change principals during
// re-authentication").
func (c *conn) authenticated(user string) error {
	p := "User:" + user
	if c.auth.reauthing && p != c.auth.principal {
		return fmt.Errorf("%w: cannot change principals during re-authentication from %s to %s", security.ErrAuthentication, c.auth.principal, p)
	}
	c.auth.state, c.auth.scram, c.auth.raw = saslNone, nil, false
	c.auth.principal = p
	if c.auth.reauth > 0 {
		c.auth.expires = time.Now().Add(c.auth.reauth)
	}
	if c.auth.reauthing {
		c.auth.reauthing = false
		c.log.Debug("re-authenticated", "listener", c.listener, "mechanism", c.auth.mech, "principal", p)
		return nil
	}
	c.log.Info("authenticated", "listener", c.listener, "mechanism", c.auth.mech, "principal", c.auth.principal)
	return nil
}

// handleSaslAuthenticate takes the next token of the exchange. Success
// makes the connection authenticated as User:<name>; a failure is
// answered SASL_AUTHENTICATION_FAILED after
// connection.failed.authentication.delay.ms, logged with the client's
// address, and closes the connection.
func (c *conn) handleSaslAuthenticate(h *reqHeader, r *kmsg.SASLAuthenticateRequest) error {
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.auth.state != saslAuth {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate before SaslHandshake or after authentication"
		resp.ErrorMessage = &msg
		if err := c.writeResponse(h, resp); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", ErrUnauthenticated, msg)
	}
	user, out, done, err := c.saslStep(r.SASLAuthBytes)
	if err == nil && done {
		err = c.authenticated(user)
	}
	if err != nil {
		c.log.Info("authentication failed", "listener", c.listener, "mechanism", c.auth.mech, "user", user, "error", err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + c.auth.mech
		if errors.Is(err, security.ErrSASLMessage) {
			msg = "Authentication failed: " + err.Error()
		}
		resp.ErrorMessage = &msg
		if !c.waitFailDelay() {
			return errShutdown
		}
		if werr := c.writeResponse(h, resp); werr != nil {
			return werr
		}
		return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	resp.SASLAuthBytes = out
	if done && c.auth.reauth > 0 {
		resp.SessionLifetimeMillis = c.auth.reauth.Milliseconds()
	}
	return c.writeResponse(h, resp)
}

// waitFailDelay holds a failed authentication's answer back; false at
// shutdown.
func (c *conn) waitFailDelay() bool {
	d := c.s.sec.failDelay
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.s.done:
		return false
	}
}
