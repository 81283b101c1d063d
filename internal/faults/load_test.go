package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/record"
)

// load is a scenario's steady producer (one goroutine per partition, one
// record at a time, acks=all, franz-go's retries) and its consumer (every
// partition from the start), all recorded in h.
type load struct {
	t         *testing.T
	c         *cluster
	h         *history.History
	valueSize int

	prod, cons *kgo.Client
	ctx        context.Context
	cancel     context.CancelFunc
	stopProd   chan struct{}
	prodWG     sync.WaitGroup
	consWG     sync.WaitGroup
	probeSeq   atomic.Int64

	mu       sync.Mutex
	acks     [numParts][]ack // the acknowledgements, in order
	errs     map[string]int  // producer errors by kind
	readErrs map[string]int  // consumer fetch errors by kind
	next     [numParts]int64 // the consumer's next offset per partition
}

// ack is one acknowledged send of the steady producer: when the send
// started (franz-go's retries included) and when its acknowledgement came.
type ack struct{ sent, acked time.Time }

// startLoad starts the producer and the consumer; values are at least
// valueSize bytes.
func startLoad(t *testing.T, c *cluster, valueSize int) *load {
	t.Helper()
	l := &load{t: t, c: c, h: history.New(), valueSize: valueSize, stopProd: make(chan struct{}),
		errs: map[string]int{}, readErrs: map[string]int{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	var err error
	l.prod, err = kgo.NewClient(append(clientOpts(c),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(120*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < numParts; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	l.cons, err = kgo.NewClient(append(clientOpts(c),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	for p := int32(0); p < numParts; p++ {
		l.prodWG.Add(1)
		go l.produce(p)
	}
	l.consWG.Add(1)
	go l.consume()
	return l
}

// clientOpts are the options every client of the test shares: the
// brokers' client listeners, quick metadata refreshes and retries.
func clientOpts(c *cluster) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(c.clientAddrs()...), kgo.ClientID("faults-test"),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.RequestTimeoutOverhead(5 * time.Second), kgo.DialTimeout(3 * time.Second)}
}

// value is the i-th value of partition p: unique, at least valueSize
// bytes.
func (l *load) value(p int32, i int) string {
	v := fmt.Sprintf("p%d-%08d", p, i)
	if len(v) < l.valueSize {
		v += strings.Repeat(".", l.valueSize-len(v))
	}
	return v
}

func (l *load) produce(p int32) {
	defer l.prodWG.Done()
	for i := 0; ; i++ {
		select {
		case <-l.stopProd:
			return
		default:
		}
		v := l.value(p, i)
		l.h.Send(v, p)
		sent := time.Now()
		r, err := l.prod.ProduceSync(l.ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).First()
		now := time.Now()
		if err != nil {
			// With retries, an error says nothing of the attempts before
			// it: the outcome is unknown.
			l.h.Fail(v, false)
			l.mu.Lock()
			l.errs[errKind(err)]++
			l.mu.Unlock()
			if l.ctx.Err() != nil {
				return
			}
			continue
		}
		l.h.Ack(v, r.Offset)
		l.mu.Lock()
		l.acks[p] = append(l.acks[p], ack{sent, now})
		l.mu.Unlock()
	}
}

func errKind(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

func (l *load) consume() {
	defer l.consWG.Done()
	for {
		fs := l.cons.PollFetches(l.ctx)
		if l.ctx.Err() != nil {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			l.mu.Lock()
			l.readErrs[errKind(err)]++
			l.mu.Unlock()
		})
		fs.EachRecord(func(r *kgo.Record) {
			l.h.Read("consumer", r.Partition, r.Offset, string(r.Value))
			l.mu.Lock()
			l.next[r.Partition] = max(l.next[r.Partition], r.Offset+1)
			l.mu.Unlock()
		})
	}
}

// ackCounts are the acknowledgements so far per partition.
func (l *load) ackCounts() [numParts]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n [numParts]int
	for p := range n {
		n[p] = len(l.acks[p])
	}
	return n
}

// waitAcks waits until each of parts (nil: all) has n acknowledgements
// more than in mark: writes go on there.
func (l *load) waitAcks(what string, mark [numParts]int, n int, parts ...int32) {
	l.t.Helper()
	if parts == nil {
		parts = []int32{0, 1, 2}
	}
	l.c.waitFor(faultTimeout, what, func() (bool, string) {
		now := l.ackCounts()
		for _, p := range parts {
			if now[p] < mark[p]+n {
				_, _, desc := l.c.state()
				return false, fmt.Sprintf("acks %v since %v; producer errors %v; %s", now, mark, l.errors(), desc)
			}
		}
		return true, ""
	})
}

// firstAckAfter is how long after t0 partition p was acknowledged again.
func (l *load) firstAckAfter(p int32, t0 time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	as := l.acks[p]
	i := sort.Search(len(as), func(i int) bool { return as[i].acked.After(t0) })
	if i == len(as) {
		return 0, false
	}
	return as[i].acked.Sub(t0), true
}

// ackedWithin counts the acknowledgements of sends that started after
// from and were acknowledged before to, over every partition.
func (l *load) ackedWithin(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, as := range l.acks {
		for _, a := range as {
			if a.sent.After(from) && a.acked.Before(to) {
				n++
			}
		}
	}
	return n
}

// longestGap is the longest time partition p went without an
// acknowledgement between from and to (the producer sends one record at a
// time, so this is its longest stall), and when that gap began.
func (l *load) longestGap(p int32, from, to time.Time) (time.Duration, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, longest, began := from, time.Duration(0), from
	for _, a := range l.acks[p] {
		if a.acked.Before(from) {
			continue
		}
		if a.acked.After(to) {
			break
		}
		if d := a.acked.Sub(last); d > longest {
			longest, began = d, last
		}
		last = a.acked
	}
	if d := to.Sub(last); d > longest {
		longest, began = d, last
	}
	return longest, began
}

func (l *load) errors() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.errs)
}

// stopProducing stops the producer and waits for its last sends.
func (l *load) stopProducing() {
	select {
	case <-l.stopProd:
	default:
		close(l.stopProd)
	}
	l.prodWG.Wait()
}

// drain waits until the consumer has read every partition up to its
// high watermark (the cluster settled).
func (l *load) drain(st map[int32]partView) {
	l.t.Helper()
	l.c.waitFor(settleTimeout, "the consumer caught up", func() (bool, string) {
		for p, pv := range st {
			hw, _, err := l.c.offsets(pv.leader, p)
			if err != nil {
				return false, err.Error()
			}
			l.mu.Lock()
			next := l.next[p]
			l.mu.Unlock()
			if next < hw {
				return false, fmt.Sprintf("p%d read to %d of %d; fetch errors %v", p, next, hw, l.readErrs)
			}
		}
		return true, ""
	})
}

// close stops everything (idempotent).
func (l *load) close() {
	l.stopProducing()
	l.cancel()
	l.consWG.Wait()
	l.prod.Close()
	l.cons.Close()
}

// report logs the producer's and consumer's error counts.
func (l *load) report() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("producer errors (after franz-go's retries): %v; consumer fetch errors: %v", l.errs, l.readErrs)
}

// probeValue is a new unique value for a probe send.
func (l *load) probeValue(kind string) string {
	return fmt.Sprintf("probe-%s-%06d", kind, l.probeSeq.Add(1))
}

// probe sends value to partition p at broker b in one Produce request
// (one attempt, no retries) with acks (-1 or 1) and timeout, recording
// it: acknowledged (weakly for acks=1), definitely failed when refused
// before the append (NOT_ENOUGH_REPLICAS; not NOT_LEADER_OR_FOLLOWER,
// which also answers an acks=-1 produce whose leadership was lost after
// the append), unknown otherwise. It returns the error
// code (0: acknowledged) or a transport error.
func (l *load) probe(b *broker, p int32, acks int16, value string, timeout time.Duration) (int16, error) {
	l.h.Send(value, p)
	opts := record.DefaultBatchOptions()
	batch, err := record.AppendBatch(nil, opts, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value)}})
	if err != nil {
		l.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 8
	req.Acks, req.TimeoutMillis = acks, int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	resp, err := request(ctx, b.clientAddr(), req)
	if err != nil {
		l.h.Fail(value, false)
		return -1, err
	}
	pr := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	switch pr.ErrorCode {
	case 0:
		if acks == 1 {
			l.h.AckWeak(value, pr.BaseOffset)
		} else {
			l.h.Ack(value, pr.BaseOffset)
		}
	case kerr.NotEnoughReplicas.Code:
		l.h.Fail(value, true)
	default:
		l.h.Fail(value, false)
	}
	return pr.ErrorCode, nil
}
