package server

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// txnModelProducer is one transactional producer of the model test.
type txnModelProducer struct {
	id         string
	pid        int64
	epoch      int16
	seq        int32
	open       bool
	pending    []txnModelRec // records of the open transaction
	lastBatch  []byte        // for retries
	lastOffset int64
}

type txnModelRec struct {
	offset int64
	value  string
}

// TestTxnModel drives three transactional producers by hand with random
// operations: transactional batches (a third of them sent twice, as a
// retry after a lost response), commits, aborts, epoch bumps by a new
// InitProducerId (which aborts the open transaction) and writes of a
// fenced epoch. The reference says what a read_uncommitted consumer sees
// (every record appended, once, in offset order) and what read_committed
// sees (the committed transactions' records in offset order); the first is
// checked with franz-go's consumer, the second with the log's markers.
func TestTxnModel(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	s := startServer(t, t.TempDir())
	createTopic(t, s, "m", 1)
	cl := newClient(t, s)
	ctx := testCtx(t)
	var all, committed []txnModelRec
	n := 0

	retry := func(what string, f func() int16) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			code := f()
			if code == 0 {
				return
			}
			if code != kerr.ConcurrentTransactions.Code || time.Now().After(deadline) {
				t.Fatalf("%s: %v (seed %d)", what, kerr.ErrorForCode(code), seed)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	initPID := func(p *txnModelProducer) {
		retry("InitProducerId "+p.id, func() int16 {
			req := kmsg.NewInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = &p.id, 60000
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ErrorCode == 0 {
				p.pid, p.epoch, p.seq = resp.ProducerID, resp.ProducerEpoch, 0
			}
			return resp.ErrorCode
		})
		if p.open { // the coordinator aborted it
			p.open, p.pending = false, nil
		}
	}
	produce := func(p *txnModelProducer, batch []byte) (int64, int16) {
		req := kmsg.NewProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &p.id, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "m"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		return sp.BaseOffset, sp.ErrorCode
	}
	ps := []*txnModelProducer{{id: "m-0"}, {id: "m-1"}, {id: "m-2"}}
	for _, p := range ps {
		initPID(p)
	}
	for op := 0; op < 150; op++ {
		p := ps[rng.Intn(len(ps))]
		switch r := rng.Intn(10); {
		case r < 5: // a transactional batch
			if !p.open {
				retry("AddPartitionsToTxn", func() int16 {
					req := kmsg.NewAddPartitionsToTxnRequest()
					req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
					at := kmsg.NewAddPartitionsToTxnRequestTopic()
					at.Topic, at.Partitions = "m", []int32{0}
					req.Topics = append(req.Topics, at)
					resp, err := req.RequestWith(ctx, cl)
					if err != nil {
						t.Fatal(err)
					}
					return resp.Topics[0].Partitions[0].ErrorCode
				})
				p.open = true
			}
			k := 1 + rng.Intn(3)
			recs := make([]record.Record, k)
			vals := make([]string, k)
			for i := range recs {
				vals[i] = fmt.Sprintf("%s/%d", p.id, n)
				n++
				recs[i] = record.Record{Offset: int64(i), Timestamp: time.Now().UnixMilli(), Value: []byte(vals[i])}
			}
			opts := record.DefaultBatchOptions()
			opts.Transactional, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = true, p.pid, p.epoch, p.seq
			batch, err := record.AppendBatch(nil, opts, recs)
			if err != nil {
				t.Fatal(err)
			}
			base, code := produce(p, batch)
			if code != 0 {
				t.Fatalf("produce %s: %v (seed %d)", p.id, kerr.ErrorForCode(code), seed)
			}
			if rng.Intn(3) == 0 { // the response was lost: the client retries
				again, code := produce(p, slices.Clone(batch))
				if code != 0 || again != base {
					t.Fatalf("retry of %s's batch at %d: offset %d, %v (seed %d)", p.id, base, again, kerr.ErrorForCode(code), seed)
				}
			}
			p.seq += int32(k)
			p.lastBatch, p.lastOffset = batch, base
			for i, v := range vals {
				rec := txnModelRec{base + int64(i), v}
				all = append(all, rec)
				p.pending = append(p.pending, rec)
			}
		case r < 8: // commit or abort
			if !p.open {
				continue
			}
			commit := rng.Intn(3) > 0
			retry("EndTxn", func() int16 {
				req := kmsg.NewEndTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					t.Fatal(err)
				}
				return resp.ErrorCode
			})
			if commit {
				committed = append(committed, p.pending...)
			}
			p.open, p.pending = false, nil
		default: // a new producer of the same id: epoch bump, the old one fenced
			old := *p
			initPID(p)
			if old.lastBatch != nil {
				// The fenced producer's next batch (old epoch, next sequence)
				// is refused; its retry of its last batch appends nothing.
				recs := []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("zombie")}}
				opts := record.DefaultBatchOptions()
				opts.Transactional, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = true, old.pid, old.epoch, old.seq
				zb, err := record.AppendBatch(nil, opts, recs)
				if err != nil {
					t.Fatal(err)
				}
				leo := s.topics.partition("m", 0).log.LogEndOffset()
				if _, code := produce(&old, zb); code == 0 {
					t.Fatalf("%s's fenced epoch %d wrote a new batch (seed %d)", p.id, old.epoch, seed)
				}
				produce(&old, slices.Clone(old.lastBatch))
				if got := s.topics.partition("m", 0).log.LogEndOffset(); got != leo {
					t.Fatalf("%s's fenced epoch %d appended %d records (seed %d)", p.id, old.epoch, got-leo, seed)
				}
			}
		}
	}
	for _, p := range ps { // end what is open, so every transaction is decided
		if p.open {
			initPID(p)
		}
	}
	slices.SortFunc(committed, func(a, b txnModelRec) int { return int(a.offset - b.offset) })

	// read_uncommitted: franz-go's consumer.
	want := make([]string, len(all))
	for i, r := range all {
		want[i] = r.value
	}
	var got []string
	if len(want) > 0 {
		for _, r := range consumeAll(t, s, "m", []int32{0}, len(want)) {
			got = append(got, string(r.Value))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted sees %d records, the model %d (seed %d)\n got %v\nwant %v", len(got), len(want), seed, got, want)
	}
	// read_committed, once every marker is written.
	wantC := make([]string, len(committed))
	for i, r := range committed {
		wantC[i] = r.value
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		gotC, open := readCommitted(t, s, "m", 0)
		if open == 0 {
			if !slices.Equal(gotC, wantC) {
				t.Fatalf("read_committed sees %v, the model %v (seed %d)", gotC, wantC, seed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records still in open transactions (seed %d)", open, seed)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
