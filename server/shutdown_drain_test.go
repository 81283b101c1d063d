package server

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// closedByBroker checks that r's connection ends without another response.
func closedByBroker(t *testing.T, r *rawConn, what string) {
	t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if b, err := r.readFrame(); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: read %d bytes, %v; want the broker to close the connection", what, len(b), err)
	}
}

// TestShutdownAnswersFreshConnection: at shutdown, a connection that has
// answered only ApiVersions still has its first request answered before it
// closes (franz-go takes an end of stream there for missing SASL and does
// not retry: a rolling restart failed a produce that way); a connection
// that has answered a request closes as soon as it waits for the next one;
// new dials are refused. Before, both connections were closed at once.
func TestShutdownAnswersFreshConnection(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.freshDrain = time.Minute // the test's own pace cannot outlast it
	fresh, used := dialRaw(t, s), dialRaw(t, s)
	apiVersions(fresh, 1)
	answered(t, fresh, 1, "ApiVersions on the fresh connection")
	apiVersions(used, 1)
	answered(t, used, 1, "ApiVersions on the used connection")
	used.send(kmsg.NewPtrMetadataRequest(), 2)
	answered(t, used, 2, "Metadata on the used connection")

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	closedByBroker(t, used, "the used connection at shutdown")
	waitFor(t, 20*time.Second, "dials to be refused", func() bool {
		nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	fresh.send(kmsg.NewPtrMetadataRequest(), 2)
	answered(t, fresh, 2, "the fresh connection's first request during shutdown")
	closedByBroker(t, fresh, "the fresh connection after its first request")
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return after the connections closed")
	}
}
