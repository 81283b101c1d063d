package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"sort"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// runJetStream is the JetStream counterpart of strata bench broker's three
// phases, with nats.go's jetstream API against a server in another process:
// produce (warm warm-up messages published and acknowledged before the
// clock starts, as the Kafka driver's warm-up records; then async publish of
// n messages of size bytes to a file-storage stream, timed until every
// PubAck is in, at most 4096 in flight), consume (a new pull consumer reads
// the n from sequence warm+1, AckNone as a Kafka consumer does not ack each record,
// checking sizes), and latency (publish at rate records/s for a
// 500 ms warm-up plus secs while a pull consumer receives; receive time minus
// the send time stamped in the payload).
func runJetStream(addr string, warm, n, size, rate int, secs float64) (protoResult, error) {
	// The same GOGC as strata bench broker's driver (tools.DriverGCPercent),
	// so neither driver's collections weigh on the latency figures more.
	defer debug.SetGCPercent(debug.SetGCPercent(driverGCPercent))
	var res protoResult
	nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(0))
	if err != nil {
		return res, err
	}
	defer nc.Close()
	var pubErr atomic.Pointer[error]
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(4096),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) { pubErr.CompareAndSwap(nil, &err) }))
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench"}, Storage: jetstream.FileStorage, Replicas: 1})
	if err != nil {
		return res, err
	}
	val := make([]byte, size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	for i := 0; i < warm && pubErr.Load() == nil; i++ {
		if _, err := js.PublishAsync("bench", val, stall); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return res, fmt.Errorf("warm-up: %w", ctx.Err())
	}
	if e := pubErr.Load(); e != nil {
		return res, fmt.Errorf("warm-up: %w", *e)
	}
	t0 := time.Now()
	for i := 0; i < n && pubErr.Load() == nil; i++ {
		if _, err := js.PublishAsync("bench", val, stall); err != nil {
			return res, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return res, fmt.Errorf("publish: %w", ctx.Err())
	}
	if e := pubErr.Load(); e != nil {
		return res, fmt.Errorf("publish: %w", *e)
	}
	res.Produce = float64(n) / time.Since(t0).Seconds()

	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(warm) + 1})
	if err != nil {
		return res, err
	}
	t0 = time.Now()
	it, err := cons.Messages(jetstream.PullMaxMessages(4096), jetstream.WithMessagesErrOnMissingHeartbeat(false))
	if err != nil {
		return res, err
	}
	for i := 0; i < n; i++ {
		m, err := it.Next()
		if err != nil {
			it.Stop()
			return res, fmt.Errorf("consume %d of %d: %w", i, n, err)
		}
		if len(m.Data()) != size {
			it.Stop()
			return res, fmt.Errorf("message %d has %d bytes, want %d", i, len(m.Data()), size)
		}
	}
	res.Consume = float64(n) / time.Since(t0).Seconds()
	it.Stop()

	lats, err := jsLatency(ctx, js, size, rate, secs)
	if err != nil {
		// Produce and consume stand; the latency is n/a (negative), and why
		// is logged and listed under the protocol table.
		logf("  nats jetstream %d B: %v", size, err)
		res.P50, res.P99, res.P999 = -1, -1, -1
		res.LatencyErr = err.Error()
		return res, nil
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	q := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		i := int(p * float64(len(lats)-1))
		return float64(lats[i]) / 1e6
	}
	res.P50, res.P99, res.P999 = q(0.5), q(0.99), q(0.999)
	return res, nil
}

const jsWarmup = 500 * time.Millisecond

// driverGCPercent is tools.DriverGCPercent.
const driverGCPercent = 400

// stall makes PublishAsync wait for room when 4096 acks are outstanding
// (the default gives up after 200 ms), as franz-go's Produce blocks.
var stall = jetstream.WithStallWait(time.Minute)

func jsLatency(ctx context.Context, js jetstream.JetStream, size, rate int, secs float64) ([]time.Duration, error) {
	if size < 16 {
		size = 16
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LAT", Subjects: []string{"lat"}, Storage: jetstream.FileStorage, Replicas: 1})
	if err != nil {
		return nil, err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024), jetstream.WithMessagesErrOnMissingHeartbeat(false))
	if err != nil {
		return nil, err
	}
	interval := time.Second / time.Duration(rate)
	warm := int64(jsWarmup / interval)
	total := warm + int64(secs*float64(rate))
	// A broker that cannot keep up with the rate (JetStream syncing every
	// message) gets twice the nominal duration plus 20 s; then the
	// phase fails (printed n/a) instead of hanging.
	budget := 2*time.Duration(float64(total)*float64(interval)) + 20*time.Second
	deadline := time.Now().Add(budget)
	stopper := time.AfterFunc(budget, it.Stop)
	defer stopper.Stop()
	base := time.Now()
	lats := make([]time.Duration, 0, total-warm)
	got := make(chan error, 1)
	go func() {
		for n := int64(0); n < total; n++ {
			m, err := it.Next()
			if err != nil {
				got <- fmt.Errorf("latency: received %d of %d within %v at %d/s offered: %w", n, total, budget, rate, err)
				return
			}
			now := time.Since(base)
			d := m.Data()
			if len(d) < 16 {
				continue
			}
			if seq := int64(binary.BigEndian.Uint64(d[8:])); seq >= warm {
				lats = append(lats, now-time.Duration(binary.BigEndian.Uint64(d)))
			}
		}
		got <- nil
	}()
	for i := int64(0); i < total; {
		if time.Now().After(deadline) {
			it.Stop()
			return nil, fmt.Errorf("latency: published %d of %d records in %v at %d/s offered", i, total, budget, rate)
		}
		due := int64(time.Since(base) / interval)
		for ; i < total && i <= due; i++ {
			v := make([]byte, size)
			binary.BigEndian.PutUint64(v, uint64(time.Since(base)))
			binary.BigEndian.PutUint64(v[8:], uint64(i))
			if _, err := js.PublishAsync("lat", v, stall); err != nil {
				it.Stop()
				return nil, err
			}
		}
		if i < total {
			time.Sleep(time.Duration(i)*interval - time.Since(base))
		}
	}
	var err2 error
	select {
	case err2 = <-got:
	case <-ctx.Done():
		err2 = ctx.Err()
	}
	it.Stop()
	return lats, err2
}
