// Package security holds the broker's authentication logic, free of any
// socket: Kafka's JAAS configuration text, SASL PLAIN and SCRAM, and
// Kafka's stored form of SCRAM credentials. Package server wires it to
// listeners and to the SaslHandshake / SaslAuthenticate requests.
//
// # JAAS configuration
//
// sasl.jaas.config (and its per-listener form
// listener.name.<listener>.<mechanism>.sasl.jaas.config) is parsed as Kafka's
// JaasConfig: entries "<login module class> <flag> (<option>=<value>)* ;",
// a value a word or a double-quoted string. The PLAIN users are the
// user_<name>="<password>" options of
// org.apache.kafka.common.security.plain.PlainLoginModule entries, as
// Kafka's PlainServerCallbackHandler reads them.
//
// A client's credentials (a broker on the inter-broker listener, a tool's
// sasl.jaas.config) are the username and password options of the first
// entry holding both (ClientCredentials).
//
// # Principal mapping (ssl.principal.mapping.rules, KIP-371)
//
// PrincipalMapper turns a client certificate's distinguished name (RFC
// 2253 form) into a user name: comma-separated rules, DEFAULT (the name as
// it is) or RULE:pattern/replacement/[LU] (the pattern must match the
// whole name; $n in the replacement are its groups; L/U fold the result's
// case), '\' escaping the next character ("\/" a slash). The first rule
// that applies wins; none applying is ErrNoMappingRule. Patterns are RE2:
// Java-only syntax (lookaround) is refused when the rules are parsed, as
// are a '$' without a group number and a group the pattern lacks.
//
// # PLAIN (RFC 4616)
//
// One message, authzid NUL authcid NUL password. An authorization id other
// than the user is refused, as in Kafka. Passwords are compared in constant
// time, and an unknown user costs the same comparison.
//
// # SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677)
//
// client-first "n,,n=<user>,r=<client nonce>" (gs2 flag n or y; channel
// binding p= is refused, as Kafka does); server-first
// "r=<client nonce><server nonce>,s=<salt>,i=<iterations>"; client-final
// "c=<base64 gs2 header>,r=<nonce>,p=<proof>"; server-final
// "v=<server signature>". The server checks that c= repeats the gs2 header,
// that r= ends with this exchange's nonce (as Kafka checks it: librdkafka
// sends its own nonce again in front; a recorded client-final replayed on a
// new exchange fails, the server nonce being fresh random bytes), and
// that H(proof XOR HMAC(StoredKey, AuthMessage)) = StoredKey. A user
// without a credential is answered with a salt derived from the name and a
// per-process key, and fails at the proof, so the exchange does not tell
// which users exist.
//
// A credential is stored as Kafka stores it (ScramCredentialUtils), never
// the password: "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>"
// with StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
// HMAC(SaltedPassword, "Server Key") and SaltedPassword = PBKDF2-HMAC-H of
// the password. Iterations are at least 4096 (Kafka's minimum; a credential
// below it never authenticates) and, through AlterUserScramCredentials, at
// most 16384.
package security
