package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SCRAM mechanism names (RFC 7677, and SHA-512 as Kafka offers it).
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on a SCRAM credential's iteration count: below the
// minimum a credential is refused; AlterUserScramCredentials refuses more
// than the maximum.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanism is one SCRAM variant: its name and hash.
type ScramMechanism struct {
	Name string
	Hash func() hash.Hash
	// Type is Kafka's mechanism number in DescribeUserScramCredentials /
	// AlterUserScramCredentials: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
	Type int8
}

var scramMechs = []ScramMechanism{
	{Name: ScramSHA256, Hash: sha256.New, Type: 1},
	{Name: ScramSHA512, Hash: sha512.New, Type: 2},
}

// ScramMechanismByName returns the SCRAM mechanism called name.
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	for _, m := range scramMechs {
		if m.Name == name {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramMechanismByType returns the SCRAM mechanism of Kafka's number t.
func ScramMechanismByType(t int8) (ScramMechanism, bool) {
	for _, m := range scramMechs {
		if m.Type == t {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramCredential is what the broker stores of a SCRAM password (RFC 5802
// section 3): never the password, only the salt, the iteration count,
// StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key").
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// String is Kafka's text of a credential (ScramCredentialUtils), as it sits
// in ZooKeeper's /config/users/<user> under the mechanism's name:
// salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>.
func (c ScramCredential) String() string {
	e := base64.StdEncoding.EncodeToString
	return "salt=" + e(c.Salt) + ",stored_key=" + e(c.StoredKey) + ",server_key=" + e(c.ServerKey) + ",iterations=" + strconv.Itoa(c.Iterations)
}

// ParseScramCredential parses Kafka's credential text (see String).
func ParseScramCredential(s string) (ScramCredential, error) {
	var c ScramCredential
	seen := 0
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("%w: %q is not key=value", ErrCredential, kv)
		}
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			return c, fmt.Errorf("%w: unknown key %q", ErrCredential, k)
		}
		if err != nil {
			return c, fmt.Errorf("%w: %s: %w", ErrCredential, k, err)
		}
		seen++
	}
	if seen != 4 || len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 || c.Iterations < 1 {
		return c, fmt.Errorf("%w: want salt, stored_key, server_key and iterations", ErrCredential)
	}
	return c, nil
}

// SaltedPassword is RFC 5802's Hi(password, salt, i): PBKDF2 with HMAC-H.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) []byte {
	k, err := pbkdf2.Key(m.Hash, password, salt, iterations, m.Hash().Size())
	if err != nil { // only for FIPS-mode key sizes; not reachable with these hashes
		panic(err)
	}
	return k
}

// CredentialFromSalted derives the stored credential from a salted password
// (what AlterUserScramCredentials carries).
func (m ScramMechanism) CredentialFromSalted(salted, salt []byte, iterations int) ScramCredential {
	ck := m.hmac(salted, []byte("Client Key"))
	h := m.Hash()
	h.Write(ck)
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  h.Sum(nil),
		ServerKey:  m.hmac(salted, []byte("Server Key")),
		Iterations: iterations,
	}
}

// NewCredential salts password with a fresh random salt.
func (m ScramMechanism) NewCredential(password string, iterations int) ScramCredential {
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	return m.CredentialFromSalted(m.SaltedPassword(password, salt, iterations), salt, iterations)
}

func (m ScramMechanism) hmac(key, msg []byte) []byte {
	h := hmac.New(m.Hash, key)
	h.Write(msg)
	return h.Sum(nil)
}

// ScramLookup finds a user's credential for a mechanism.
type ScramLookup func(mechanism, user string) (ScramCredential, bool)

// ScramServer is the server side of one SCRAM exchange (RFC 5802): Step
// takes the client-first message and answers the server-first, then takes
// the client-final message and answers the server-final. A user without a
// credential is answered with a made-up salt and fails at the proof, so the
// exchange does not tell which users exist.
type ScramServer struct {
	mech   ScramMechanism
	lookup ScramLookup
	step   int

	user        string
	cred        ScramCredential
	known       bool
	gs2         string // the client's gs2 header, echoed in c=
	nonce       string // client nonce + server nonce
	clientFirst string // client-first-message-bare
	serverFirst string
}

// NewScramServer starts an exchange for mechanism name.
func NewScramServer(name string, lookup ScramLookup) (*ScramServer, error) {
	m, ok := ScramMechanismByName(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrMechanism, name)
	}
	return &ScramServer{mech: m, lookup: lookup}, nil
}

// User is the authenticated user once Step reported done.
func (s *ScramServer) User() string { return s.user }

// Step handles the client's next message. done is set with the
// server-final message; an error ends the exchange.
func (s *ScramServer) Step(msg []byte) (out []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step = 1
		out, err = s.first(string(msg))
		return out, false, err
	case 1:
		s.step = 2
		out, err = s.final(string(msg))
		return out, err == nil, err
	}
	return nil, false, fmt.Errorf("%w: SCRAM exchange already finished", ErrSASLMessage)
}

func (s *ScramServer) first(msg string) ([]byte, error) {
	// gs2-header: cbind-flag "," [ "a=" authzid ] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first: no gs2 header", ErrSASLMessage)
	}
	switch {
	case flag == "n" || flag == "y":
	case strings.HasPrefix(flag, "p="):
		return nil, fmt.Errorf("%w: client-first: channel binding is not supported", ErrSASLMessage)
	default:
		return nil, fmt.Errorf("%w: client-first: bad channel binding flag %q", ErrSASLMessage, flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok || (authz != "" && !strings.HasPrefix(authz, "a=")) {
		return nil, fmt.Errorf("%w: client-first: bad gs2 header", ErrSASLMessage)
	}
	s.gs2 = flag + "," + authz + ","
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-first: want n=user,r=nonce", ErrSASLMessage)
	}
	user, err := saslName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	cnonce := attrs[1][2:]
	if user == "" || cnonce == "" || !printable(cnonce) {
		return nil, fmt.Errorf("%w: client-first: empty user or bad nonce", ErrSASLMessage)
	}
	if authz != "" {
		a, err := saslName(authz[2:])
		if err != nil {
			return nil, err
		}
		if a != user {
			return nil, fmt.Errorf("%w: authorization id %q differs from user %q", ErrAuthentication, a, user)
		}
	}
	s.user, s.clientFirst = user, bare
	s.cred, s.known = s.lookup(s.mech.Name, user)
	if !s.known || s.cred.Iterations < ScramMinIterations {
		s.known = false
		s.cred = ScramCredential{Salt: fakeSalt(user), Iterations: ScramMinIterations}
	}
	snonce := make([]byte, 24)
	_, _ = rand.Read(snonce)
	s.nonce = cnonce + base64.RawURLEncoding.EncodeToString(snonce)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), nil
}

func (s *ScramServer) final(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, fmt.Errorf("%w: client-final: no proof", ErrSASLMessage)
	}
	withoutProof, proofText := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-final: want the c=, r= and p= attributes", ErrSASLMessage)
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != s.gs2 {
		return nil, fmt.Errorf("%w: client-final: channel binding does not match the gs2 header", ErrSASLMessage)
	}
	// Kafka accepts a nonce that ends with this exchange's (librdkafka
	// before 2.x sends its own nonce again in front of it); the fresh
	// server nonce at the end is what defeats a replay.
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return nil, fmt.Errorf("%w: client-final: nonce does not match this exchange", ErrAuthentication)
	}
	proof, err := base64.StdEncoding.DecodeString(proofText)
	if err != nil {
		return nil, fmt.Errorf("%w: client-final: proof: %w", ErrSASLMessage, err)
	}
	authMsg := []byte(s.clientFirst + "," + s.serverFirst + "," + withoutProof)
	if !s.known || len(proof) != len(s.cred.StoredKey) {
		return nil, fmt.Errorf("%w: invalid user credentials", ErrAuthentication)
	}
	sig := s.mech.hmac(s.cred.StoredKey, authMsg)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, sig)
	h := s.mech.Hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, fmt.Errorf("%w: invalid user credentials", ErrAuthentication)
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, authMsg))), nil
}

// saslName decodes RFC 5802's saslname: "=2C" is ',' and "=3D" is '='.
func saslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in user name", ErrSASLMessage)
		}
		i += 2
	}
	return b.String(), nil
}

// printable is RFC 5802's printable: %x21-2B / %x2D-7E (no ',').
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// fakeSaltKey makes the salts of unknown users stable for one process, so
// asking twice does not reveal that the user does not exist.
var fakeSaltKey = func() []byte { b := make([]byte, 32); _, _ = rand.Read(b); return b }()

func fakeSalt(user string) []byte {
	h := hmac.New(sha256.New, fakeSaltKey)
	h.Write([]byte(user))
	return h.Sum(nil)
}
