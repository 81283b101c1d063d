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
// commit), after one warm-up transaction of the run's warm-up records that
// is not timed (as the plain produce's warm-up: the client's metadata,
// FindCoordinator, InitProducerId, and on the first run the creation of
// __transaction_state), next to the run's plain (and idempotent) produce
// (benchBrokerRun); then, after the run's other phases, read back twice from the
// first measured record by new consumers, at isolation level read_committed and
// read_uncommitted, the first of the two alternating from run to run. Its
// figures are compared with the run's non-transactional produce and with
// each other; the producer's requests per transaction and their round
// trips say where a transaction's time goes.

// txnFigures are one run's transactions-phase measurements.
type txnFigures struct {
	produce, produceCPU                  time.Duration
	readCommitted, readUncommitted       time.Duration
	readCommittedCPU, readUncommittedCPU time.Duration
	requests                             []TxnRequestFigures
}

// benchTxnProduceTimed runs benchTxnProduce on topic and its process CPU
// into f. benchBrokerRun calls it next to the plain (and idempotent)
// produce, so that the ratio compares produces close in time on a shared
// machine whose load drifts.
func benchTxnProduceTimed(cfg benchBrokerConfig, tgt benchTarget, topic string, f *txnFigures) error {
	cpu0 := processCPU()
	var err error
	if f.produce, f.requests, err = benchTxnProduce(cfg, tgt, topic); err != nil {
		return failErr(fmt.Errorf("transactional produce: %w", err))
	}
	f.produceCPU = processCPU() - cpu0
	return nil
}

// benchTxnRead reads topic's transactional records back into f at both
// isolation levels (run: the run's number, which decides the consumers'
// order).
func benchTxnRead(cfg benchBrokerConfig, tgt benchTarget, topic string, run int, f *txnFigures) error {
	var err error
	consume := []struct {
		iso    kgo.IsolationLevel
		name   string
		d, cpu *time.Duration
	}{
		{kgo.ReadCommitted(), "read_committed", &f.readCommitted, &f.readCommittedCPU},
		{kgo.ReadUncommitted(), "read_uncommitted", &f.readUncommitted, &f.readUncommittedCPU},
	}
	for i := range consume {
		c := consume[(i+run)%len(consume)]
		cpu := processCPU()
		if *c.d, err = benchTxnConsume(cfg, tgt, topic, c.iso); err != nil {
			return failErr(fmt.Errorf("%s consume: %w", c.name, err))
		}
		*c.cpu = processCPU() - cpu
	}
	return nil
}

// benchTxnProduce produces cfg.records in transactions of cfg.transactions
// records, after a warm-up transaction of cfg.warmup records, and returns
// the time from the first measured BeginTransaction to the last commit,
// with the requests of the measured transactions. Transactions need
// idempotence, hence acks=all.
func benchTxnProduce(cfg benchBrokerConfig, tgt benchTarget, topic string) (time.Duration, []TxnRequestFigures, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	hook := &txnRequestHook{}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(tgt.seeds...),
		kgo.TransactionalID(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithHooks(hook),
	}, tgt.conn...)
	cl, err := kgo.NewClient(append(opts, tgt.tune...)...)
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	if err := createBenchTopic(ctx, cl, topic, withTopicConfigs(tgt, cfg.topicConfigs(false))); err != nil {
		return 0, nil, err
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
	txn := func(recs []kgo.Record) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for i := range recs {
			r := &recs[i]
			r.Topic, r.Value = topic, val
			cl.Produce(ctx, r, promise)
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if e := failed.Load(); e != nil {
			return *e
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := txn(make([]kgo.Record, cfg.warmup)); err != nil {
		return 0, nil, fmt.Errorf("warm-up transaction: %w", err)
	}
	hook.reset()
	recs := make([]kgo.Record, cfg.records)
	txns := int64(0)
	t0 := time.Now()
	for i := int64(0); i < cfg.records; i += cfg.transactions {
		if err := txn(recs[i:min(i+cfg.transactions, cfg.records)]); err != nil {
			return 0, nil, err
		}
		txns++
	}
	return time.Since(t0), hook.perTxn(txns), nil
}

// benchTxnConsume reads the cfg.records measured records of topic at
// isolation level iso and checks every value's size. They begin at offset
// cfg.warmup+1: the warm-up transaction's records, then its COMMIT marker.
func benchTxnConsume(cfg benchBrokerConfig, tgt benchTarget, topic string, iso kgo.IsolationLevel) (time.Duration, error) {
	return consumeRecords(cfg, tgt, topic, cfg.warmup+1, false, nil, kgo.FetchIsolationLevel(iso))
}
