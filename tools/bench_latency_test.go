package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLatencyPreludeWaitsForConsumer: the latency phase's prelude returns
// once the consumer has received its record (not when the producer has its
// acknowledgement), and reports a consumer that never receives it. The
// record is unstamped, so the measured phase would skip it anyway.
func TestLatencyPreludeWaitsForConsumer(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "auto.create.topics.enable=false")
	addr := srv.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(producerOpts(benchTarget{seeds: []string{addr}, acks: kgo.AllISRAcks()})...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, topic := range []string{"prelude", "elsewhere"} {
		if err := createBenchTopic(ctx, prod, topic, benchTarget{}); err != nil {
			t.Fatal(err)
		}
	}
	consumer := func(topic string) *kgo.Client {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}

	if err := latencyPrelude(ctx, prod, consumer("prelude"), "prelude"); err != nil {
		t.Fatalf("prelude: %v", err)
	}
	// A consumer that does not read the prelude's topic: the prelude must
	// wait for it, past the record's acknowledgement, until its context ends.
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	err = latencyPrelude(short, prod, consumer("elsewhere"), "prelude")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not received") {
		t.Fatalf("prelude with a consumer that never gets the record: %v, want the deadline", err)
	}
}
