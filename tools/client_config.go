package tools

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/security"
	"github.com/stratalog/strata/server"
)

// clientConfig is what a client subcommand takes from --command-config,
// Kafka's client properties file: the bootstrap servers, the client id,
// and the connection's security (security.protocol, ssl.*, sasl.*).
type clientConfig struct {
	bootstrap []string
	clientID  string
	// security are the kgo options of security.protocol: kgo.DialTLSConfig
	// for SSL and SASL_SSL, kgo.SASL for SASL_PLAINTEXT and SASL_SSL.
	security []kgo.Opt
}

// commandConfigFlag is --command-config, the same on every client
// subcommand.
func commandConfigFlag() cli.Flag {
	return &cli.StringFlag{Name: "command-config", Usage: "Kafka client properties file (bootstrap.servers, client.id, security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config)"}
}

// clientConfigIgnored are Kafka client properties that only tune the Java
// client; they are accepted and have no effect here.
var clientConfigIgnored = map[string]bool{
	"client.dns.lookup": true, "connections.max.idle.ms": true, "default.api.timeout.ms": true,
	"metadata.max.age.ms": true, "receive.buffer.bytes": true, "reconnect.backoff.max.ms": true,
	"reconnect.backoff.ms": true, "request.timeout.ms": true, "retries": true, "retry.backoff.ms": true,
	"retry.backoff.max.ms": true, "send.buffer.bytes": true, "socket.connection.setup.timeout.ms": true,
	"socket.connection.setup.timeout.max.ms": true, "metrics.num.samples": true,
	"metrics.recording.level": true, "metrics.sample.window.ms": true, "metric.reporters": true,
	"auto.include.jmx.reporter": true, "enable.metrics.push": true, "client.rack": true,
	// PEM stores have no store password (Kafka ignores them for PEM too)
	"ssl.truststore.password": true, "ssl.keystore.password": true,
	"ssl.protocol": true, "ssl.enabled.protocols": true, "ssl.cipher.suites": true,
}

// clientSecurityKeys are the security properties read (besides
// security.protocol).
var clientSecurityKeys = map[string]bool{
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.certificates": true,
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.key": true,
	"ssl.keystore.certificate.chain": true, "ssl.key.password": true,
	"ssl.endpoint.identification.algorithm": true,
	"sasl.mechanism":                        true, "sasl.jaas.config": true,
}

// loadClientConfig reads --command-config (Java properties). The
// security settings are resolved here, files read, so a bad one is a usage
// error (exit 2) before any connection; unknown keys are warned about, as
// Kafka's clients do.
func loadClientConfig(path string, errw io.Writer) (*clientConfig, error) {
	cfg := &clientConfig{}
	if path == "" {
		return cfg, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("--command-config: %v", err)
	}
	defer f.Close()
	kv, keys, err := server.ParseProperties(f)
	if err != nil {
		return nil, usageErr("--command-config %s: %v", path, err)
	}
	props := map[string]string{}
	for _, k := range keys {
		v := strings.TrimSpace(kv[k])
		switch {
		case k == "bootstrap.servers":
			cfg.bootstrap = splitServers(v)
		case k == "client.id":
			cfg.clientID = v
		case k == "security.protocol" || clientSecurityKeys[k]:
			props[k] = v
		case clientConfigIgnored[k]:
		default:
			fmt.Fprintf(errw, "Warning: --command-config %s: the configuration '%s' was supplied but isn't a known config.\n", path, k)
		}
	}
	if cfg.security, err = clientSecurity(props); err != nil {
		return nil, usageErr("--command-config %s: %v", path, err)
	}
	return cfg, nil
}

// clientSecurity turns the security properties into kgo options.
func clientSecurity(p map[string]string) ([]kgo.Opt, error) {
	proto := strings.ToUpper(p["security.protocol"])
	var useTLS, useSASL bool
	switch proto {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol=%s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p["security.protocol"])
	}
	var opts []kgo.Opt
	if useTLS {
		tc, err := clientTLS(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if useSASL {
		m, err := clientSASL(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// clientTLS is the tls.Config of ssl.*: PEM trust store (the system's
// roots without one), PEM key store for a client certificate (its key
// decrypted with ssl.key.password), host name verification unless
// ssl.endpoint.identification.algorithm is empty.
func clientTLS(p map[string]string) (*tls.Config, error) {
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := strings.ToUpper(p[k]); t != "" && t != "PEM" {
			return nil, fmt.Errorf("%s=%s: strata reads PEM stores only (convert with keytool and openssl; set %s=PEM)", k, t, k)
		}
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	trust := []byte(p["ssl.truststore.certificates"])
	if loc := p["ssl.truststore.location"]; loc != "" {
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		trust = b
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
				return nil, fmt.Errorf("trust store: %w", err)
			}
			pool.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, errors.New("the trust store holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	chain, key := []byte(p["ssl.keystore.certificate.chain"]), []byte(p["ssl.keystore.key"])
	if loc := p["ssl.keystore.location"]; loc != "" {
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		chain, key = b, b
	}
	if len(chain) > 0 || len(key) > 0 {
		key, err := security.DecryptPEMKey(key, p["ssl.key.password"])
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(chain, key)
		if err != nil {
			return nil, fmt.Errorf("key store: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if alg, ok := p["ssl.endpoint.identification.algorithm"]; ok && alg == "" {
		// the chain is verified, the host name is not (Kafka's empty value)
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			certs := make([]*x509.Certificate, len(raw))
			for i, r := range raw {
				c, err := x509.ParseCertificate(r)
				if err != nil {
					return err
				}
				certs[i] = c
			}
			if len(certs) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range certs[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := certs[0].Verify(opts)
			return err
		}
	}
	return tc, nil
}

// clientSASL is the mechanism of sasl.mechanism (Kafka's default GSSAPI
// is not offered) with the username and password of sasl.jaas.config.
func clientSASL(p map[string]string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(p["sasl.mechanism"])
	if mech == "" {
		mech = "GSSAPI"
	}
	if mech != security.PLAIN && mech != security.ScramSHA256 && mech != security.ScramSHA512 {
		return nil, fmt.Errorf("sasl.mechanism=%s: strata's tools speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", mech)
	}
	mods, err := security.ParseJAAS(p["sasl.jaas.config"])
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	user, pass, err := security.ClientCredentials(mods)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	switch mech {
	case security.PLAIN:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case security.ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	default:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
}

// kgoOpts are the client options of cfg: seeds, client id, security.
func (cfg *clientConfig) kgoOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(cfg.bootstrap...), kgo.ClientID(cfg.clientID)}, cfg.security...)
}

// clientFromFlags is the client set-up every subcommand that talks to
// brokers shares: --command-config, then --bootstrap-server over its
// bootstrap.servers, the client id (the properties' client.id, else
// defaultID).
func clientFromFlags(c *cli.Context, defaultID string) (*clientConfig, error) {
	cfg, err := loadClientConfig(c.String("command-config"), c.App.ErrWriter)
	if err != nil {
		return nil, err
	}
	if cfg.clientID == "" {
		cfg.clientID = defaultID
	}
	if bs := c.String("bootstrap-server"); bs != "" {
		cfg.bootstrap = splitServers(bs)
	}
	if len(cfg.bootstrap) == 0 {
		return nil, usageErr("--bootstrap-server must be specified (or bootstrap.servers in --command-config)")
	}
	return cfg, nil
}

// kgoFromFlags is clientFromFlags, then a franz-go client with its
// settings (a client that cannot be made exits 2).
func kgoFromFlags(c *cli.Context, defaultID string) (*kgo.Client, error) {
	cfg, err := clientFromFlags(c, defaultID)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(cfg.kgoOpts()...)
	if err != nil {
		return nil, failErr(err)
	}
	return cl, nil
}

// adminFromFlags is clientFromFlags, then an admin connection checked for
// action's APIs (dialAdmin) within --timeout. done closes the connection
// and ends the context.
func adminFromFlags(c *cli.Context, defaultID, action string) (b *adminBackend, ctx context.Context, done func(), err error) {
	cfg, err := clientFromFlags(c, defaultID)
	if err != nil {
		return nil, nil, nil, err
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, nil, nil, usageErr("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	if b, err = dialAdmin(ctx, cfg, action, timeout); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return b, ctx, func() { b.close(); cancel() }, nil
}
