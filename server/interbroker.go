package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/security"
)

// Inter-broker security: the replica fetchers, the controller's requests
// and a broker's requests to the controller connect to the other brokers'
// inter.broker.listener.name listener (or the one named after
// security.inter.broker.protocol) with that listener's security protocol,
// as Kafka does: over TLS they trust the listener's trust store and
// present the key store's certificate (required when the peer has
// ssl.client.auth=required); over SASL they authenticate with
// sasl.mechanism.inter.broker.protocol and the username/password options
// of the listener's JAAS config for that mechanism
// (listener.name.<l>.<mechanism>.sasl.jaas.config).

// interBrokerSASL is the broker's own SASL mechanism on the inter-broker
// listener, nil when that listener does not use SASL. It reads no files,
// so the config check calls it.
func interBrokerSASL(c *Config) (sasl.Mechanism, error) {
	ibl := c.interBrokerListener()
	if !usesSASL(c.listenerProtocol(ibl)) {
		return nil, nil
	}
	mech := strings.ToUpper(c.Security.get("", "sasl.mechanism.inter.broker.protocol", "GSSAPI"))
	if !slices.Contains(c.saslMechanisms(ibl), mech) {
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s must be included in sasl.enabled.mechanisms (%s) of the inter-broker listener %s",
			mech, strings.Join(c.saslMechanisms(ibl), ","), ibl)
	}
	prop := "listener.name." + strings.ToLower(ibl) + "." + strings.ToLower(mech) + ".sasl.jaas.config"
	mods, err := security.ParseJAAS(c.Security.jaas(ibl, mech))
	if err != nil {
		return nil, fmt.Errorf("inter-broker listener %s: %s: %w", ibl, prop, err)
	}
	user, pass, err := security.ClientCredentials(mods)
	if err != nil {
		return nil, fmt.Errorf("inter-broker listener %s: %s needs the broker's own username and password: %w", ibl, prop, err)
	}
	switch mech {
	case security.PLAIN:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case security.ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case security.ScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
}

// interBrokerSecurity is how this broker's connections to the others are
// secured; a key or trust store that does not load stops the start.
func interBrokerSecurity(c *Config) (kwire.Security, error) {
	var sec kwire.Security
	mech, err := interBrokerSASL(c)
	if err != nil {
		return sec, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sec.SASL = mech
	ibl := c.interBrokerListener()
	if !usesTLS(c.listenerProtocol(ibl)) {
		return sec, nil
	}
	set, err := tlsSettingsFor(c, ibl)
	if err != nil {
		return sec, fmt.Errorf("%w: inter-broker listener %s: %w", ErrConfig, ibl, err)
	}
	lt, err := newListenerTLS(set)
	if err != nil {
		return sec, fmt.Errorf("%w: inter-broker listener %s: %w", ErrConfig, ibl, err)
	}
	verifyHost := c.Security.get(ibl, "ssl.endpoint.identification.algorithm", "https") != ""
	sec.TLS = clientTLSConfig(lt, verifyHost)
	return sec, nil
}

// clientTLSConfig is the client side of a listener's TLS material: the
// key store's certificate as client certificate, the peer verified against
// the trust store (the system's roots when none is set) and, with
// ssl.endpoint.identification.algorithm=https (Kafka's default), its host
// name. Both are read at each handshake, so a reloaded store is used.
func clientTLSConfig(lt *listenerTLS, verifyHost bool) func(host string) *tls.Config {
	return func(host string) *tls.Config {
		return &tls.Config{
			ServerName: host,
			MinVersion: lt.set.minVersion,
			MaxVersion: lt.set.maxVersion,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return &lt.current().Certificates[0], nil
			},
			// verified below, against the trust store as it is now
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return errors.New("the broker sent no certificate")
				}
				opts := x509.VerifyOptions{Roots: lt.current().ClientCAs, Intermediates: x509.NewCertPool(),
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
				for _, ic := range cs.PeerCertificates[1:] {
					opts.Intermediates.AddCert(ic)
				}
				if verifyHost {
					opts.DNSName = host
				}
				_, err := cs.PeerCertificates[0].Verify(opts)
				return err
			},
		}
	}
}
