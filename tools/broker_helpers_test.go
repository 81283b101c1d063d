package tools

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stratalog/strata/server"
)

// startBroker starts an in-process strata broker on 127.0.0.1 with data in
// dataDir and the given config overrides; it is closed when the test ends.
func startBroker(t *testing.T, dataDir string, overrides ...string) *server.Server {
	t.Helper()
	cfg, err := server.LoadConfig("", append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "strata.metrics.listener=127.0.0.1:0", "log.dirs=" + dataDir}, overrides...), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(cfg, &server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
