package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrokerLogFormatJSON: with --log-format json (or strata.log.format=json)
// every line "strata broker" writes, from the config warnings at start to
// the shutdown, is one JSON object; a produce with strata.request.slow.ms=0
// leaves its slow-request line among them.
func TestBrokerLogFormatJSON(t *testing.T) {
	for _, how := range [][]string{{"--log-format", "json"}, {"--override", "strata.log.format=json"}} {
		t.Run(how[0], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			args := append([]string{"strata", "broker", "--log-level", "debug",
				"--override", "listeners=PLAINTEXT://" + addr, "--override", "log.dirs=" + t.TempDir(),
				"--override", "strata.metrics.listener=", "--override", "strata.request.slow.ms=0",
				"--override", "strata.log.summary.interval.ms=20", "--override", "some.unknown.key=1"}, how...)
			go func() { done <- Main(args, &stdout, &stderr) }()
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("logs"), kgo.DisableIdempotentWrite(), kgo.AllowAutoTopicCreation())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
			cancel()
			cl.Close()
			if err != nil {
				select {
				case code := <-done:
					t.Fatalf("broker exited with %d: %s", code, stderr.String())
				default:
				}
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case code := <-done:
				if code != ExitOK {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("broker did not stop on SIGTERM")
			}
			msgs := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("line is not one JSON object: %v\n%s", err, line)
				}
				msg, _ := m["msg"].(string)
				msgs[msg] = true
				if msg == "slow request" && m["api"] == "Produce" && m["partitions"] != float64(1) {
					t.Errorf("produce line %v", m)
				}
			}
			for _, want := range []string{"listening", "slow request", "shutting down", "shut down cleanly"} {
				if !msgs[want] {
					t.Errorf("no %q line in:\n%s", want, stderr.String())
				}
			}
			if !strings.Contains(stderr.String(), "some.unknown.key") {
				t.Errorf("the config warning is not in the JSON log:\n%s", stderr.String())
			}
		})
	}
	if _, _, code := run(t, "broker", "--log-format", "xml"); code != ExitUsage {
		t.Errorf("--log-format xml: exit %d, want %d", code, ExitUsage)
	}
}
