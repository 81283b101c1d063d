package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stratalog/strata/security"
)

// tlsSettings are a listener's TLS properties, resolved from
// listener.name.<l>.ssl.* and ssl.*.
type tlsSettings struct {
	keystoreLocation   string // PEM file: private key and certificate chain
	keystoreChain      string // ssl.keystore.certificate.chain (PEM text)
	keystoreKey        string // ssl.keystore.key (PEM text)
	truststoreLocation string // PEM file of trusted certificates
	truststoreCerts    string // ssl.truststore.certificates (PEM text)
	clientAuth         tls.ClientAuthType
	minVersion         uint16
	maxVersion         uint16
	principals         *security.PrincipalMapper // ssl.principal.mapping.rules
	keyPassword        string                    // ssl.key.password: the key is encrypted PKCS#8
}

// tlsSettingsFor resolves and checks a listener's TLS properties without
// reading files.
func tlsSettingsFor(c *Config, listener string) (*tlsSettings, error) {
	g := func(k, def string) string { return c.Security.get(listener, k, def) }
	s := &tlsSettings{
		keystoreLocation:   g("ssl.keystore.location", ""),
		keystoreChain:      g("ssl.keystore.certificate.chain", ""),
		keystoreKey:        g("ssl.keystore.key", ""),
		truststoreLocation: g("ssl.truststore.location", ""),
		truststoreCerts:    g("ssl.truststore.certificates", ""),
	}
	for _, k := range []string{"ssl.keystore.type", "ssl.truststore.type"} {
		if t := strings.ToUpper(g(k, "PEM")); t != "PEM" {
			return nil, fmt.Errorf("%s=%s: strata reads PEM key and trust stores only (set %s=PEM; convert a JKS or PKCS12 store with keytool and openssl)", k, t, k)
		}
	}
	s.keyPassword = g("ssl.key.password", "")
	mapper, err := security.ParsePrincipalMappingRules(g("ssl.principal.mapping.rules", "DEFAULT"))
	if err != nil {
		return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
	}
	s.principals = mapper
	if s.keystoreLocation == "" && (s.keystoreChain == "" || s.keystoreKey == "") {
		return nil, fmt.Errorf("a TLS listener needs ssl.keystore.location (PEM key and certificate chain) or ssl.keystore.certificate.chain with ssl.keystore.key")
	}
	if s.keystoreLocation != "" && (s.keystoreChain != "" || s.keystoreKey != "") {
		return nil, fmt.Errorf("ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key are exclusive")
	}
	switch ca := strings.ToLower(g("ssl.client.auth", "none")); ca {
	case "none":
		s.clientAuth = tls.NoClientCert
	case "requested":
		s.clientAuth = tls.VerifyClientCertIfGiven
	case "required":
		s.clientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth %q: want none, requested or required", ca)
	}
	for _, p := range splitList(g("ssl.enabled.protocols", "TLSv1.2,TLSv1.3")) {
		var v uint16
		switch p {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		default:
			return nil, fmt.Errorf("ssl.enabled.protocols: %s: only TLSv1.2 and TLSv1.3 are served", p)
		}
		if s.minVersion == 0 || v < s.minVersion {
			s.minVersion = v
		}
		s.maxVersion = max(s.maxVersion, v)
	}
	if s.minVersion == 0 {
		return nil, fmt.Errorf("ssl.enabled.protocols is empty")
	}
	return s, nil
}

// listenerTLS serves a TLS listener's configuration. The key store and the
// trust store files are read again when their modification time or size
// changes (checked at each handshake), so a renewed certificate is served
// without a restart; a renewal that does not load is logged by the caller
// and the previous material stays in use.
type listenerTLS struct {
	set *tlsSettings

	mu      sync.Mutex
	stamp   string // the files' mtimes and sizes at the last load
	cfg     *tls.Config
	lastErr error
}

func newListenerTLS(set *tlsSettings) (*listenerTLS, error) {
	lt := &listenerTLS{set: set}
	cfg, stamp, err := lt.load()
	if err != nil {
		return nil, err
	}
	lt.cfg, lt.stamp = cfg, stamp
	return lt, nil
}

// serverConfig is the tls.Config a listener wraps its connections with.
func (lt *listenerTLS) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: lt.set.minVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return lt.current(), nil
		},
	}
}

// current reloads the files when they changed and returns the config.
func (lt *listenerTLS) current() *tls.Config {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if st := lt.filesStamp(); st != lt.stamp {
		cfg, stamp, err := lt.load()
		if err != nil {
			lt.lastErr = err
			lt.stamp = st // don't retry until the files change again
		} else {
			lt.cfg, lt.stamp, lt.lastErr = cfg, stamp, nil
		}
	}
	return lt.cfg
}

func (lt *listenerTLS) filesStamp() string {
	var b strings.Builder
	for _, p := range []string{lt.set.keystoreLocation, lt.set.truststoreLocation} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, fi.ModTime().UnixNano(), fi.Size())
		} else {
			fmt.Fprintf(&b, "%s:missing;", p)
		}
	}
	return b.String()
}

func (lt *listenerTLS) load() (*tls.Config, string, error) {
	set := lt.set
	stamp := lt.filesStamp()
	chain, key := []byte(set.keystoreChain), []byte(set.keystoreKey)
	if set.keystoreLocation != "" {
		b, err := os.ReadFile(set.keystoreLocation)
		if err != nil {
			return nil, "", fmt.Errorf("%w: ssl.keystore.location: %w", security.ErrPEM, err)
		}
		chain, key = b, b
	}
	key, err := security.DecryptPEMKey(key, set.keyPassword)
	if err != nil {
		return nil, "", err
	}
	cert, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return nil, "", fmt.Errorf("%w: key store: %w", security.ErrPEM, err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   set.clientAuth,
		MinVersion:   set.minVersion,
		MaxVersion:   set.maxVersion,
	}
	trust := []byte(set.truststoreCerts)
	if set.truststoreLocation != "" {
		if trust, err = os.ReadFile(set.truststoreLocation); err != nil {
			return nil, "", fmt.Errorf("%w: ssl.truststore.location: %w", security.ErrPEM, err)
		}
	}
	if len(trust) > 0 {
		pool := x509.NewCertPool()
		n := 0
		for rest := trust; ; {
			var blk *pem.Block
			if blk, rest = pem.Decode(rest); blk == nil {
				break
			}
			if blk.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, "", fmt.Errorf("%w: trust store: %w", security.ErrPEM, err)
			}
			pool.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, "", fmt.Errorf("%w: trust store holds no certificate", security.ErrPEM)
		}
		cfg.ClientCAs = pool
	}
	return cfg, stamp, nil
}

// tlsHandshake completes a TLS connection's handshake within the idle
// deadline and returns the client's principal: User:<the certificate's
// distinguished name, mapped by ssl.principal.mapping.rules> when it sent
// a verified certificate, else User:ANONYMOUS (Kafka's
// DefaultKafkaPrincipalBuilder). A name no rule applies to fails the
// connection (security.ErrNoMappingRule), as Kafka's NoMatchingRule does.
func tlsHandshake(tc *tls.Conn, deadline time.Time, rules *security.PrincipalMapper) (string, error) {
	_ = tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	_ = tc.SetDeadline(time.Time{})
	if pc := tc.ConnectionState().PeerCertificates; len(pc) > 0 {
		name, err := rules.Map(pc[0].Subject.String())
		if err != nil {
			return "", err
		}
		return "User:" + name, nil
	}
	return anonymousPrincipal, nil
}

// anonymousPrincipal is Kafka's principal of an unauthenticated client.
const anonymousPrincipal = "User:ANONYMOUS"
