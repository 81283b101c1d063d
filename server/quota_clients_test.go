package server

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// throttleHook counts the throttles a franz-go client is told of.
type throttleHook struct{ n, total atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.total.Add(int64(d))
}

// quotaServer is a broker whose quota rates are three 1 s samples: a
// client's first 2 s of burst are absorbed within about 2 s, and the rate
// then holds to the quota in 3 s spans (TestQuotaSimulatedRate; two
// samples swing ±30% over 3 s, Kafka's eleven allow a 10 s burst).
func quotaServer(t *testing.T, extra ...string) *Server {
	return startServer(t, t.TempDir(), append([]string{"quota.window.num=3", "quota.window.size.seconds=1"}, extra...)...)
}

func clientEntity(id string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "client-id", Name: &id}}
}

// setQuota alters one quota over AlterClientQuotas and fails on any error.
func setQuota(t *testing.T, s *Server, e kadm.ClientQuotaEntity, key string, v float64, remove bool) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, s))
	res, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{Entity: e, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v, Remove: remove}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v (%s)", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// rateWindow counts bytes from skip to skip+span after start and returns
// bytes per second over that span.
type rateWindow struct {
	bytes atomic.Int64
}

func (w *rateWindow) measure(ctx context.Context, skip, span time.Duration) (float64, bool) {
	select {
	case <-time.After(skip):
	case <-ctx.Done():
		return 0, false
	}
	a := w.bytes.Load()
	began := time.Now()
	select {
	case <-time.After(span):
	case <-ctx.Done():
		return 0, false
	}
	return float64(w.bytes.Load()-a) / time.Since(began).Seconds(), true
}

// produceFlat produces 1 KiB records as fast as the client goes until ctx
// ends, counting acknowledged value bytes.
func produceFlat(ctx context.Context, cl *kgo.Client, w *rateWindow) {
	val := randomBytes(1024)
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Value: val}, func(r *kgo.Record, err error) {
			if err == nil {
				w.bytes.Add(int64(len(r.Value)))
			}
		})
	}
}

// randomBytes is n bytes that do not compress (franz-go compresses with
// snappy by default, and quotas count the bytes on the wire).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// TestProduceQuotaRate: a franz-go producer under a 1 MiB/s
// producer_byte_rate (client id "slow") produces at that rate, told of
// throttles; one with another client id, in parallel, is never throttled
// and goes faster.
func TestProduceQuotaRate(t *testing.T) {
	s := quotaServer(t)
	newTopic(t, s, "pq", 1)
	const quota = 1 << 20
	setQuota(t, s, clientEntity("slow"), quotaProducerByteRate, quota, false)

	var slowHook, fastHook throttleHook
	opts := func(id string, h *throttleHook) []kgo.Opt {
		return []kgo.Opt{kgo.ClientID(id), kgo.DefaultProduceTopic("pq"), kgo.ProducerBatchMaxBytes(64 << 10),
			kgo.MaxBufferedRecords(512), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(h)}
	}
	slow := newClient(t, s, opts("slow", &slowHook)...)
	fast := newClient(t, s, opts("fast", &fastHook)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var slowW, fastW rateWindow
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { produceFlat(pctx, slow, &slowW); done <- struct{}{} }()
	go func() { produceFlat(pctx, fast, &fastW); done <- struct{}{} }()
	fastRate := make(chan float64, 1)
	go func() { r, _ := fastW.measure(ctx, 2500*time.Millisecond, 3*time.Second); fastRate <- r }()
	rate, ok := slowW.measure(ctx, 2500*time.Millisecond, 3*time.Second)
	fr := <-fastRate
	stop()
	<-done
	<-done
	if !ok {
		t.Fatal("timed out measuring")
	}
	t.Logf("producer_byte_rate %d B/s: throttled client %.0f B/s (%.2fx, %d throttles), unthrottled client %.0f B/s",
		quota, rate, rate/quota, slowHook.n.Load(), fr)
	t.Logf("throttled for %v in all", time.Duration(slowHook.total.Load()))
	if rate < 0.5*quota || rate > 1.5*quota {
		t.Fatalf("throttled produce rate %.0f B/s, want 0.5x-1.5x of %d", rate, quota)
	}
	if slowHook.n.Load() == 0 {
		t.Fatal("the throttled client was never told of a throttle")
	}
	if n := fastHook.n.Load(); n != 0 {
		t.Fatalf("the client without a quota was throttled %d times", n)
	}
	if fr <= rate {
		t.Fatalf("unthrottled client %.0f B/s, not faster than the throttled %.0f B/s", fr, rate)
	}
}

// TestFetchQuotaRate: a consumer under a 512 KiB/s consumer_byte_rate
// consumes at that rate; another client id, in parallel, is not throttled.
func TestFetchQuotaRate(t *testing.T) {
	s := quotaServer(t)
	newTopic(t, s, "fq", 1)
	const quota = 512 << 10
	const total = 6 << 20
	loader := newClient(t, s, kgo.DefaultProduceTopic("fq"), kgo.ProducerBatchMaxBytes(256<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	val := randomBytes(1024)
	for i := 0; i < total/len(val); i++ {
		loader.Produce(testCtx(t), &kgo.Record{Value: val}, nil)
	}
	if err := loader.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	setQuota(t, s, clientEntity("slowc"), quotaConsumerByteRate, quota, false)

	consume := func(ctx context.Context, id string, h *throttleHook, w *rateWindow) {
		cl := newClient(t, s, kgo.ClientID(id), kgo.WithHooks(h),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fq": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10), kgo.FetchMaxWait(100*time.Millisecond))
		for ctx.Err() == nil && w.bytes.Load() < total {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(tp string, p int32, err error) {
				if ctx.Err() == nil {
					t.Errorf("%s: fetch %s/%d: %v", id, tp, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { w.bytes.Add(int64(len(r.Value))) })
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var slowHook, fastHook throttleHook
	var slowW, fastW rateWindow
	cctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { consume(cctx, "slowc", &slowHook, &slowW); done <- struct{}{} }()
	go func() { consume(cctx, "fastc", &fastHook, &fastW); done <- struct{}{} }()
	rate, ok := slowW.measure(ctx, 2500*time.Millisecond, 3*time.Second)
	stop()
	<-done
	<-done
	if !ok {
		t.Fatal("timed out measuring")
	}
	t.Logf("consumer_byte_rate %d B/s: throttled consumer %.0f B/s (%.2fx, %d throttles); unthrottled consumer read %d bytes",
		quota, rate, rate/quota, slowHook.n.Load(), fastW.bytes.Load())
	if rate < 0.5*quota || rate > 1.5*quota {
		t.Fatalf("throttled fetch rate %.0f B/s, want 0.5x-1.5x of %d", rate, quota)
	}
	if slowHook.n.Load() == 0 {
		t.Fatal("the throttled consumer was never told of a throttle")
	}
	if n := fastHook.n.Load(); n != 0 {
		t.Fatalf("the consumer without a quota was throttled %d times", n)
	}
	if fastW.bytes.Load() <= slowW.bytes.Load() {
		t.Fatalf("unthrottled consumer read %d bytes, the throttled one %d", fastW.bytes.Load(), slowW.bytes.Load())
	}
}
