package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stratalog/strata/security"
)

// SecurityConfig holds the security properties, Kafka's names: ssl.*,
// sasl.*, connection.failed.authentication.delay.ms, and their
// per-listener forms listener.name.<listener>.<property> (the listener
// name in lower case, as Kafka writes it; a per-listener value wins over
// the broker-wide one), including the JAAS configs
// listener.name.<listener>.<mechanism>.sasl.jaas.config. They are kept as
// text and resolved per listener when the broker starts (tls.go, sasl.go);
// Validate checks what can be checked without reading files.
type SecurityConfig struct {
	Props map[string]string
}

// securityKeys are the broker-wide security properties strata reads.
var securityKeys = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.keystore.certificate.chain": true, "ssl.keystore.key": true, "ssl.key.password": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.password": true,
	"ssl.truststore.certificates": true, "ssl.client.auth": true, "ssl.enabled.protocols": true,
	"ssl.protocol": true, "ssl.cipher.suites": true, "ssl.endpoint.identification.algorithm": true,
	"ssl.principal.mapping.rules": true,
	"sasl.enabled.mechanisms":     true, "sasl.jaas.config": true, "sasl.mechanism.inter.broker.protocol": true,
	"connections.max.reauth.ms":                 true,
	"connection.failed.authentication.delay.ms": true,
	"authorizer.class.name":                     true,
	"super.users":                               true,
	"allow.everyone.if.no.acl.found":            true,
}

// set keeps a security property; it reports false for a key that is not
// one (then it is an unknown key).
func (sc *SecurityConfig) set(k, v string) bool {
	norm := k
	if rest, ok := strings.CutPrefix(k, "listener.name."); ok {
		name, prop, ok := strings.Cut(rest, ".")
		if !ok || !validListenerName(name) {
			return false
		}
		if !securityKeys[prop] && !isMechanismJAAS(prop) {
			return false
		}
		norm = "listener.name." + strings.ToLower(name) + "." + prop
	} else if !securityKeys[k] {
		return false
	}
	if sc.Props == nil {
		sc.Props = map[string]string{}
	}
	sc.Props[norm] = strings.TrimSpace(v)
	return true
}

// isMechanismJAAS matches "<mechanism>.sasl.jaas.config".
func isMechanismJAAS(p string) bool {
	mech, ok := strings.CutSuffix(p, ".sasl.jaas.config")
	return ok && mech != "" && !strings.Contains(mech, ".")
}

// get is a property for a listener: its listener.name form, else the
// broker-wide one, else def.
func (sc *SecurityConfig) get(listener, key, def string) string {
	if v, ok := sc.Props["listener.name."+strings.ToLower(listener)+"."+key]; ok {
		return v
	}
	if v, ok := sc.Props[key]; ok {
		return v
	}
	return def
}

// jaas is the JAAS config of a listener's mechanism: Kafka's
// listener.name.<l>.<mech>.sasl.jaas.config, then (a strata convenience)
// listener.name.<l>.sasl.jaas.config and sasl.jaas.config.
func (sc *SecurityConfig) jaas(listener, mech string) string {
	if v, ok := sc.Props["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mech)+".sasl.jaas.config"]; ok {
		return v
	}
	return sc.get(listener, "sasl.jaas.config", "")
}

// Security protocols (Kafka's SecurityProtocol names).
const (
	protoPlaintext     = "PLAINTEXT"
	protoSSL           = "SSL"
	protoSASLPlaintext = "SASL_PLAINTEXT"
	protoSASLSSL       = "SASL_SSL"
)

func usesTLS(proto string) bool  { return proto == protoSSL || proto == protoSASLSSL }
func usesSASL(proto string) bool { return proto == protoSASLPlaintext || proto == protoSASLSSL }

// listenerProtocol is the security protocol of a listener name.
func (c *Config) listenerProtocol(name string) string {
	return c.Cluster.ListenerSecurityProtocolMap[name]
}

// saslMechanisms is a listener's sasl.enabled.mechanisms (Kafka's default:
// GSSAPI, which strata does not offer).
func (c *Config) saslMechanisms(listener string) []string {
	var out []string
	for _, m := range splitList(c.Security.get(listener, "sasl.enabled.mechanisms", "GSSAPI")) {
		out = append(out, strings.ToUpper(m))
	}
	return out
}

// reauthMs is a listener's connections.max.reauth.ms (Kafka's default 0:
// sessions do not expire).
func (c *Config) reauthMs(listener string) int64 {
	v, err := strconv.ParseInt(c.Security.get(listener, "connections.max.reauth.ms", "0"), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// authFailureDelayMs is connection.failed.authentication.delay.ms (Kafka's
// default 100): how long a failed authentication's answer is held back.
func (c *Config) authFailureDelayMs() int64 {
	v, err := strconv.ParseInt(c.Security.get("", "connection.failed.authentication.delay.ms", "100"), 10, 64)
	if err != nil {
		return 100
	}
	return v
}

// checkSecurity checks each listener's security settings as far as can be
// done without reading files: known values of ssl.client.auth,
// ssl.enabled.protocols (TLS 1.2 and 1.3 only) and the key store type
// (PEM: Go reads no JKS or PKCS12), a key store given for TLS listeners,
// mechanisms strata offers on SASL listeners, and a parseable JAAS config
// with users for PLAIN.
func checkSecurity(c *Config) error {
	if err := checkACLConfig(c); err != nil {
		return err
	}
	for k, v := range c.Security.Props {
		if k == "connections.max.reauth.ms" || strings.HasSuffix(k, ".connections.max.reauth.ms") {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				return fmt.Errorf("%s %q: want a number of ms, at least 0", k, v)
			}
		}
	}
	if v, ok := c.Security.Props["connection.failed.authentication.delay.ms"]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return fmt.Errorf("connection.failed.authentication.delay.ms %q: want a number of ms, at least 0", v)
		}
	}
	for _, l := range c.Listeners {
		proto := c.listenerProtocol(l.Name)
		if usesTLS(proto) {
			if _, err := tlsSettingsFor(c, l.Name); err != nil {
				return fmt.Errorf("listener %s: %w", l.Name, err)
			}
		}
		if usesSASL(proto) {
			for _, m := range c.saslMechanisms(l.Name) {
				switch m {
				case security.PLAIN:
					mods, err := security.ParseJAAS(c.Security.jaas(l.Name, m))
					if err != nil {
						return fmt.Errorf("listener %s: listener.name.%s.plain.sasl.jaas.config: %w", l.Name, strings.ToLower(l.Name), err)
					}
					if _, err := security.PlainUsers(mods); err != nil {
						return fmt.Errorf("listener %s: listener.name.%s.plain.sasl.jaas.config: %w", l.Name, strings.ToLower(l.Name), err)
					}
				case security.ScramSHA256, security.ScramSHA512:
				default:
					return fmt.Errorf("listener %s: sasl.enabled.mechanisms: %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", l.Name, m)
				}
			}
		}
	}
	return nil
}
