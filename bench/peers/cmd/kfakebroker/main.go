// Command kfakebroker runs franz-go's kfake as a one-broker Kafka cluster in
// its own process, so the protocol benchmark drives it exactly as it drives
// strata's broker: the same client code over loopback to a separate process.
// It prints "listening HOST:PORT" on stdout once it accepts connections and
// stops on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: any)")
	dataDir := flag.String("data-dir", "", "kfake DataDir: persist the log under this directory (required)")
	syncWrites := flag.Bool("sync-writes", false, "kfake SyncWrites: fsync segment and index files on every produced batch")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "kfakebroker: -data-dir is required")
		os.Exit(2)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.DataDir(*dataDir),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
	}
	if *syncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}
