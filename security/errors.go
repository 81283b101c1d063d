package security

import "errors"

// Sentinel errors of the security package.
var (
	// ErrJAAS is a sasl.jaas.config value that does not parse as Kafka's
	// JaasConfig does.
	ErrJAAS = errors.New("security: malformed JAAS configuration")
	// ErrAuthentication is a failed authentication: unknown user, wrong
	// password or a proof that does not verify. Its text never says which.
	ErrAuthentication = errors.New("security: authentication failed")
	// ErrSASLMessage is a SASL token that does not follow its mechanism's
	// grammar (RFC 4616 for PLAIN, RFC 5802 for SCRAM).
	ErrSASLMessage = errors.New("security: malformed SASL message")
	// ErrMechanism is a SASL mechanism the broker does not offer.
	ErrMechanism = errors.New("security: unsupported SASL mechanism")
	// ErrCredential is a SCRAM credential text that does not parse
	// (Kafka's "salt=...,stored_key=...,server_key=...,iterations=N").
	ErrCredential = errors.New("security: malformed SCRAM credential")
	// ErrPEM is a key store or trust store that is not usable PEM.
	ErrPEM = errors.New("security: unusable PEM material")
	// ErrMappingRule is an ssl.principal.mapping.rules value that does not
	// parse (Kafka's RULE:pattern/replacement/[LU] and DEFAULT).
	ErrMappingRule = errors.New("security: malformed ssl.principal.mapping.rules")
	// ErrNoMappingRule: no rule of ssl.principal.mapping.rules applies to a
	// certificate's distinguished name (the connection fails
	// authentication, as Kafka's NoMatchingRule).
	ErrNoMappingRule = errors.New("security: no ssl.principal.mapping.rules rule applies")
	// ErrKeyPassword: an encrypted private key does not decrypt with
	// ssl.key.password (a wrong password, or a corrupt key).
	ErrKeyPassword = errors.New("security: the private key does not decrypt with ssl.key.password")
)

// ErrACL is stored ACL data that does not parse (Kafka's znode JSON or
// strata's ACL file).
var ErrACL = errors.New("security: malformed ACL data")
