package tools

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratalog/strata/server"
)

// clientConfig is what strata topics takes from --command-config, Kafka's
// admin client properties file.
type clientConfig struct {
	bootstrap []string
	clientID  string
}

// clientConfigIgnored are Kafka admin client properties that only tune the
// Java client; they are accepted and have no effect here.
var clientConfigIgnored = map[string]bool{
	"client.dns.lookup": true, "connections.max.idle.ms": true, "default.api.timeout.ms": true,
	"metadata.max.age.ms": true, "receive.buffer.bytes": true, "reconnect.backoff.max.ms": true,
	"reconnect.backoff.ms": true, "request.timeout.ms": true, "retries": true, "retry.backoff.ms": true,
	"retry.backoff.max.ms": true, "send.buffer.bytes": true, "socket.connection.setup.timeout.ms": true,
	"socket.connection.setup.timeout.max.ms": true, "metrics.num.samples": true,
	"metrics.recording.level": true, "metrics.sample.window.ms": true, "metric.reporters": true,
	"auto.include.jmx.reporter": true, "enable.metrics.push": true, "client.rack": true,
}

// loadClientConfig reads --command-config (Java properties). Security
// settings other than PLAINTEXT are refused (usage, exit 2): strata topics
// cannot honour them yet, and ignoring them would send credentials' traffic
// in the clear or fail later with a vaguer error. Unknown keys are warned
// about, as Kafka's clients do.
func loadClientConfig(path string, errw io.Writer) (*clientConfig, error) {
	cfg := &clientConfig{clientID: "strata-topics"}
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
	for _, k := range keys {
		v := strings.TrimSpace(kv[k])
		switch {
		case k == "bootstrap.servers":
			cfg.bootstrap = splitServers(v)
		case k == "client.id":
			if v != "" {
				cfg.clientID = v
			}
		case k == "security.protocol":
			if !strings.EqualFold(v, "PLAINTEXT") {
				return nil, usageErr("--command-config %s: security.protocol=%s is not supported yet (strata topics speaks PLAINTEXT only)", path, v)
			}
		case strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl."):
			return nil, usageErr("--command-config %s: %s is not supported yet (strata topics speaks PLAINTEXT only: no TLS, no SASL)", path, k)
		case clientConfigIgnored[k]:
		default:
			fmt.Fprintf(errw, "Warning: --command-config %s: the configuration '%s' was supplied but isn't a known config.\n", path, k)
		}
	}
	return cfg, nil
}
