package tools

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/server"
)

// brokerCommand is "strata broker": a single Kafka-compatible node. With no
// flags it listens on 127.0.0.1:9092 with data in ./data.
func brokerCommand() *cli.Command {
	return &cli.Command{
		Name:      "broker",
		Usage:     "run a Kafka-compatible broker: a single node, or with zookeeper.connect a member of a cluster",
		UsageText: "strata broker [--config server.properties] [--override key=value ...]",
		Description: "Reads Kafka's property names (node.id, listeners, advertised.listeners, log.dirs,\n" +
			"num.partitions, auto.create.topics.enable, log.segment.bytes, log.retention.ms/hours,\n" +
			"message.max.bytes, socket.request.max.bytes, ...) from --config; every --override\n" +
			"key=value wins over the file. With zookeeper.connect (and broker.id) it joins a\n" +
			"cluster through ZooKeeper and replicates partitions (see the README's Cluster mode).\n" +
			"SIGTERM or SIGINT stops accepting (in a cluster, after moving its leaderships away:\n" +
			"controlled.shutdown.enable), finishes the requests in flight, flushes and closes the logs.\n" +
			"A log dir that fails with an I/O error goes offline (its partitions answer\n" +
			"KAFKA_STORAGE_ERROR, the others are served); when every log dir is offline the broker\n" +
			"stops with exit status 2.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "server.properties file"},
			// Not a StringSliceFlag: that splits on commas, and a value such
			// as log.dirs=/a,/b holds commas of its own.
			&cli.GenericFlag{Name: "override", Value: &multiString{}, Usage: "key=value, repeatable (commas belong to the value); wins over --config"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Usage: "text (key=value) or json (one object per line); default strata.log.format, else text"},
			// For profiling (strata bench cluster --broker-cpuprofile
			// passes it to its brokers): a CPU profile from start to
			// the end of Close, written when the broker stops on a
			// signal (none after SIGKILL).
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the broker to FILE when it stops"},
		},
		Action: runBroker,
	}
}

// startServerHook starts the server; a test replaces it to run the command over
// an injected filesystem.
var startServerHook = server.Start

func runBroker(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("broker takes no arguments, got %q", c.Args().First())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return usageErr("--log-level: %v", err)
	}
	format := c.String("log-format")
	if format == "" {
		// strata.log.format picks the handler the config's own warnings
		// go through: a first, silent load reads it.
		format = "text"
		if cfg, err := server.LoadConfig(c.String("config"), overrides(c), slog.New(slog.DiscardHandler)); err == nil {
			format = cfg.LogFormat
		}
	}
	log, err := newLogger(c.App.ErrWriter, format, level)
	if err != nil {
		return err
	}
	// Everything else that logs (slog.Default() where no logger is
	// passed, the standard log package) goes through the same handler, so
	// JSON output is one object per line throughout. Only when the broker
	// owns the process's stderr: tests run it in-process on buffers.
	if c.App.ErrWriter == os.Stderr {
		slog.SetDefault(log)
	}
	cfg, err := server.LoadConfig(c.String("config"), overrides(c), log)
	if err != nil {
		return usageErr("%v", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	stopProfile, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return failErr(err)
	}
	defer stopProfile()
	srv, err := startServerHook(cfg, &server.Options{Logger: log})
	if err != nil {
		return failErr(err)
	}
	select {
	case sig := <-sigs:
		log.Info("signal received", "signal", sig.String())
	case <-srv.AllLogDirsFailed():
		// As Kafka: with no log dir left there is nothing to serve.
		var causes []string
		for dir, err := range srv.OfflineLogDirs() {
			causes = append(causes, dir+": "+err.Error())
		}
		sort.Strings(causes)
		_ = srv.Close()
		return failErr(fmt.Errorf("every log dir is offline after I/O errors; repair them (strata verify / recover) and restart: %s",
			strings.Join(causes, "; ")))
	}
	if err := srv.Close(); err != nil {
		return failErr(err)
	}
	return nil
}

// newLogger is the broker's logger: slog's text or JSON handler on w.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErr("--log-format (or strata.log.format) must be text or json, not %q", format)
}

// overrides are the --override values in order, each whole.
func overrides(c *cli.Context) []string {
	if m, ok := c.Generic("override").(*multiString); ok && m != nil {
		return m.vals
	}
	return nil
}
