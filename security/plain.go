package security

import (
	"bytes"
	"crypto/subtle"
	"fmt"
)

// PLAIN is the SASL PLAIN mechanism's name.
const PLAIN = "PLAIN"

// PlainAuthenticate checks a SASL PLAIN message (RFC 4616:
// [authzid] NUL authcid NUL passwd) against users, name to password, and
// returns the authenticated user. As Kafka, an authorization id other than
// the user name is refused. Failures are ErrSASLMessage for a message that
// does not parse and ErrAuthentication for a wrong user or password.
func PlainAuthenticate(msg []byte, users map[string]string) (string, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", fmt.Errorf("%w: PLAIN: want authzid NUL user NUL password, got %d fields", ErrSASLMessage, len(parts))
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return "", fmt.Errorf("%w: PLAIN: empty user name", ErrSASLMessage)
	}
	if len(pass) == 0 {
		return "", fmt.Errorf("%w: PLAIN: empty password", ErrSASLMessage)
	}
	if authz != "" && authz != user {
		return "", fmt.Errorf("%w: authorization id %q differs from user %q", ErrAuthentication, authz, user)
	}
	want, ok := users[user]
	// Compare even for an unknown user, so timing does not tell users apart.
	if subtle.ConstantTimeCompare([]byte(want), pass) != 1 || !ok {
		return "", fmt.Errorf("%w: invalid user name or password", ErrAuthentication)
	}
	return user, nil
}
