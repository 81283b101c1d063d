package kwire

import "errors"

// Errors of a connection (wrapped with %w).
var (
	// ErrClosed: the connection is closed, by Close, by the peer, or after
	// an earlier error (named in the message).
	ErrClosed = errors.New("kwire: connection closed")
	// ErrBadFrame: the peer sent a response that is not one: a size out of
	// bounds, a correlation id that is not the request's, a truncated or
	// undecodable body.
	ErrBadFrame = errors.New("kwire: bad response frame")
	// ErrUnsupportedVersion: the broker does not support any version of an
	// API that strata can send.
	ErrUnsupportedVersion = errors.New("kwire: no common version")
	// ErrAuthentication: the TLS handshake or the SASL exchange failed.
	ErrAuthentication = errors.New("kwire: authentication failed")
	// ErrUnread: a request was made while a response to Send is unread,
	// or Receive was asked for a response out of the order sent.
	ErrUnread = errors.New("kwire: a sent request's response is unread")
)
