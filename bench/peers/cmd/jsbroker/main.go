// Command jsbroker runs an embedded NATS server with JetStream on file
// storage in its own process, for the protocol benchmark: the driver talks to
// it over loopback as it talks to strata's broker and kfake. It prints
// "listening HOST:PORT" once ready and stops on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: any)")
	storeDir := flag.String("store-dir", "", "JetStream store directory (required)")
	syncAlways := flag.Bool("sync-always", false, "JetStream sync_interval: always (fsync every stored message); default: the server's 2 minute interval")
	flag.Parse()
	if *storeDir == "" {
		fmt.Fprintln(os.Stderr, "jsbroker: -store-dir is required")
		os.Exit(2)
	}
	if *port == 0 {
		*port = server.RANDOM_PORT
	}
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      *port,
		JetStream: true,
		StoreDir:  *storeDir,
		NoLog:     true,
		NoSigs:    true,
		// JetStream's default max_payload (1 MB) and limits are kept.
		SyncAlways: *syncAlways,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsbroker:", err)
		os.Exit(1)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "jsbroker: not ready after 30 s")
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", s.Addr().String())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	s.Shutdown()
	s.WaitForShutdown()
}
