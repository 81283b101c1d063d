package tools

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactions phase of strata bench broker (--transactions N): the
// same records produced by a transactional producer, N records per
// transaction (BeginTransaction, N Produce calls, Flush, EndTransaction
// commit), then read back twice from the start by new consumers, at
// isolation level read_committed and read_uncommitted. Its figures are
// compared with the run's non-transactional produce and with each other.

// txnFigures are one run's transactions-phase measurements.
type txnFigures struct {
	produce, readCommitted, readUncommitted time.Duration
}

// benchTxnRun runs the transactions phase on topic.
func benchTxnRun(cfg benchBrokerConfig, tgt benchTarget, topic string) (txnFigures, error) {
	var f txnFigures
	var err error
	if f.produce, err = benchTxnProduce(cfg, tgt, topic); err != nil {
		return f, failErr(fmt.Errorf("transactional produce: %w", err))
	}
	if f.readCommitted, err = benchTxnConsume(cfg, tgt, topic, kgo.ReadCommitted()); err != nil {
		return f, failErr(fmt.Errorf("read_committed consume: %w", err))
	}
	if f.readUncommitted, err = benchTxnConsume(cfg, tgt, topic, kgo.ReadUncommitted()); err != nil {
		return f, failErr(fmt.Errorf("read_uncommitted consume: %w", err))
	}
	return f, nil
}

// benchTxnProduce produces cfg.records in transactions of cfg.transactions
// records and returns the time from the first BeginTransaction to the last
// commit. Transactions need idempotence, hence acks=all.
func benchTxnProduce(cfg benchBrokerConfig, tgt benchTarget, topic string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(tgt.seeds...),
		kgo.TransactionalID(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, tgt.tune...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := createBenchTopic(ctx, cl, topic, withTopicConfigs(tgt, cfg.topicConfigs(false))); err != nil {
		return 0, err
	}
	val := make([]byte, cfg.recordSize)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	var failed atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	recs := make([]kgo.Record, cfg.records)
	t0 := time.Now()
	for i := int64(0); i < cfg.records; {
		if err := cl.BeginTransaction(); err != nil {
			return 0, err
		}
		for j := int64(0); j < cfg.transactions && i < cfg.records; j, i = j+1, i+1 {
			r := &recs[i]
			r.Topic, r.Value = topic, val
			cl.Produce(ctx, r, promise)
		}
		if err := cl.Flush(ctx); err != nil {
			return 0, err
		}
		if e := failed.Load(); e != nil {
			return 0, *e
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// benchTxnConsume reads the cfg.records records of topic from its start at
// isolation level iso and checks every value's size.
func benchTxnConsume(cfg benchBrokerConfig, tgt benchTarget, topic string, iso kgo.IsolationLevel) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(tgt.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxBytes(cfg.fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(cfg.fetchPartBytes),
		kgo.FetchMaxWait(time.Second),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	var bad error
	t0 := time.Now()
	for n < cfg.records && bad == nil {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("consumed %d of %d records: %w", n, cfg.records, err)
		}
		fs.EachError(func(t string, p int32, err error) {
			bad = fmt.Errorf("fetch %s/%d: %w", t, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if bad == nil && len(r.Value) != cfg.recordSize {
				bad = fmt.Errorf("record at offset %d has %d value bytes, want %d", r.Offset, len(r.Value), cfg.recordSize)
			}
			n++
		})
	}
	d := time.Since(t0)
	if bad != nil {
		return 0, bad
	}
	return d, nil
}
