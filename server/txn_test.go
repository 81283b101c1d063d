package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// marker is a control batch found in a partition's log.
type marker struct {
	pid    int64
	epoch  int16
	commit bool
}

// logBatches returns the control markers and the count of transactional
// data records of producer-any in topic/partition, read from the log.
func logBatches(t *testing.T, s *Server, topic string, partition int32) (ms []marker, txnRecords int) {
	t.Helper()
	p := s.topics.partition(topic, partition)
	if p == nil {
		t.Fatalf("no partition %s-%d", topic, partition)
	}
	reg, err := p.log.Read(p.log.LogStartOffset(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := reg.ReadInto(nil)
	reg.Release()
	if err != nil {
		t.Fatal(err)
	}
	it := record.NewIterator(buf, record.ScanOptions{})
	var rr record.RecordReader
	for it.Next() {
		b := it.Batch()
		if b.IsControl() {
			rr.Reset(b, 0)
			rec, ok := rr.Next()
			if !ok {
				t.Fatalf("empty control batch")
			}
			_, typ, err := record.ParseControlKey(rec.Key)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, marker{b.ProducerID(), b.ProducerEpoch(), typ == record.ControlCommit})
		} else if b.IsTransactional() {
			txnRecords += int(b.LastOffset()-b.BaseOffset()) + 1
		}
	}
	return ms, txnRecords
}

func txnClient(t *testing.T, s *Server, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(s.Addr().String()), kgo.TransactionalID(id), kgo.RetryTimeout(30 * time.Second),
		kgo.DefaultProduceTopic("out"), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestTxnCommitAbortFranz: franz-go's transactional producer commits one
// transaction and aborts another; each partition it wrote holds a COMMIT
// then an ABORT marker of its producer id, and the coordinator describes
// the transaction as CompleteAbort.
func TestTxnCommitAbortFranz(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "out", 2)
	cl := txnClient(t, s, "tx-franz")
	ctx := testCtx(t)
	for i, commit := range []bool{true, false} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 2; p++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end (commit=%v): %v", commit, err)
		}
	}
	// The markers are written after EndTxn's answer: wait for them.
	deadline := time.Now().Add(10 * time.Second)
	for p := int32(0); p < 2; p++ {
		for {
			ms, n := logBatches(t, s, "out", p)
			if len(ms) == 2 {
				if !ms[0].commit || ms[1].commit || ms[0].pid != ms[1].pid || n != 2 {
					t.Fatalf("partition %d: markers %+v, %d transactional records", p, ms, n)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition %d: markers %+v, want commit then abort", p, ms)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	req := kmsg.NewDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"tx-franz", "nobody"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if st := resp.TransactionStates[0]; st.ErrorCode != 0 || st.State != "CompleteAbort" {
		t.Fatalf("described %+v", st)
	}
	if st := resp.TransactionStates[1]; st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("unknown id described %+v", st)
	}
	lreq := kmsg.NewListTransactionsRequest()
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil || len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "tx-franz" {
		t.Fatalf("listed %+v, %v", lresp, err)
	}
}

// TestTxnZombieFenced: a second producer with the same transactional id
// fences the first: the first one's open transaction is aborted, its
// commit fails, and it writes nothing more.
func TestTxnZombieFenced(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "out", 1)
	ctx := testCtx(t)
	a := txnClient(t, s, "tx-zombie")
	if err := a.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := a.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b := txnClient(t, s, "tx-zombie")
	if err := b.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := b.ProduceSync(ctx, &kgo.Record{Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("new producer: %v", err)
	}
	if err := b.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	err := a.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie's commit: %v, want PRODUCER_FENCED", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, n := logBatches(t, s, "out", 0)
		if len(ms) == 2 {
			if ms[0].commit || !ms[1].commit || ms[1].epoch <= ms[0].epoch || n != 2 {
				t.Fatalf("markers %+v (%d transactional records), want the zombie's abort then the new commit", ms, n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("markers %+v", ms)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// txnRaw drives the protocol by hand: InitProducerId, AddPartitionsToTxn,
// one transactional produce.
func txnRaw(t *testing.T, s *Server, id string, timeoutMs int32) (*kgo.Client, int64, int16) {
	t.Helper()
	cl := newClient(t, s)
	ctx := testCtx(t)
	// The first lookup creates __transaction_state in the background:
	// COORDINATOR_NOT_AVAILABLE until it exists, as in Kafka.
	deadline := time.Now().Add(30 * time.Second)
	for {
		fc := kmsg.NewFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorType = id, 1
		fresp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if fresp.ErrorCode == 0 {
			break
		}
		if fresp.ErrorCode != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
			t.Fatalf("FindCoordinator: %+v", fresp)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ini := kmsg.NewInitProducerIDRequest()
	ini.TransactionalID, ini.TransactionTimeoutMillis = &id, timeoutMs
	iresp, err := ini.RequestWith(ctx, cl)
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %+v", err, iresp)
	}
	return cl, iresp.ProducerID, iresp.ProducerEpoch
}

func TestTxnEndNeverBegunWire(t *testing.T) {
	s := startServer(t, t.TempDir())
	cl, pid, epoch := txnRaw(t, s, "tx-idle", 60000)
	end := kmsg.NewEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx-idle", pid, epoch, true
	resp, err := end.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("EndTxn with no transaction: %v %+v, want INVALID_TXN_STATE", err, resp)
	}
}

// TestTxnTimeoutAborts: a producer that began a transaction and wrote to
// a partition, then died, has its transaction aborted after
// transaction.timeout.ms: an ABORT marker with a bumped epoch follows its
// records.
func TestTxnTimeoutAborts(t *testing.T) {
	s := startServer(t, t.TempDir(), "transaction.abort.timed.out.transaction.cleanup.interval.ms=20")
	createTopic(t, s, "out", 1)
	cl, pid, epoch := txnRaw(t, s, "tx-dead", 200)
	ctx := testCtx(t)
	add := kmsg.NewAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-dead", pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "out", []int32{0}
	add.Topics = append(add.Topics, at)
	aresp, err := add.RequestWith(ctx, cl)
	if err != nil || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v %+v", err, aresp)
	}
	opts := record.DefaultBatchOptions()
	opts.Transactional, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = true, pid, epoch, 0
	batch, err := record.AppendBatch(nil, opts, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("orphan")}})
	if err != nil {
		t.Fatal(err)
	}
	pr := kmsg.NewProduceRequest()
	id := "tx-dead"
	pr.TransactionID, pr.Acks, pr.TimeoutMillis = &id, -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "out"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	presp, err := pr.RequestWith(ctx, cl)
	if err != nil || presp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %v %+v", err, presp)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, _ := logBatches(t, s, "out", 0)
		if len(ms) == 1 {
			if ms[0].commit || ms[0].pid != pid || ms[0].epoch != epoch+1 {
				t.Fatalf("marker %+v, want ABORT of %d at epoch %d", ms[0], pid, epoch+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no abort marker after the timeout: %+v", ms)
		}
		time.Sleep(5 * time.Millisecond)
	}
	end := kmsg.NewEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx-dead", pid, epoch, true
	eresp, err := end.RequestWith(ctx, cl)
	if err != nil || eresp.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("the dead producer's commit: %v %+v, want PRODUCER_FENCED", err, eresp)
	}
}

// TestClientControlBatchRefused: a client may not write markers.
func TestClientControlBatchRefused(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "out", 1)
	cl := newClient(t, s)
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = 7, 0
	batch, err := record.AppendEndTxnBatch(nil, opts, true, 0, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	pr := kmsg.NewProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "out"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	resp, err := pr.RequestWith(context.Background(), cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("client control batch: %v %+v, want INVALID_RECORD", err, resp)
	}
	if ms, _ := logBatches(t, s, "out", 0); len(ms) != 0 {
		t.Fatalf("markers written: %+v", ms)
	}
}

// TestTxnGroupSession: franz-go's GroupTransactSession consumes "in",
// produces to "out" and commits its offsets in the transaction
// (AddOffsetsToTxn, TxnOffsetCommit): the group's committed offset reaches
// the end of "in" once the COMMIT markers are written, and "out" holds
// every input record once, with COMMIT markers only.
func TestTxnGroupSession(t *testing.T) {
	s := startServer(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	createTopic(t, s, "in", 1)
	createTopic(t, s, "out", 1)
	ctx := testCtx(t)
	prod := newClient(t, s, kgo.DefaultProduceTopic("in"))
	const n = 20
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(s.Addr().String()), kgo.TransactionalID("eos-1"),
		kgo.ConsumerGroup("eos-group"), kgo.ConsumeTopics("in"), kgo.DefaultProduceTopic("out"),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	fetchOffset := func() int64 {
		req := kmsg.NewOffsetFetchRequest()
		req.Group = "eos-group"
		resp, err := req.RequestWith(ctx, prod)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("OffsetFetch: %v %+v", err, resp)
		}
		for _, tt := range resp.Topics {
			for _, p := range tt.Partitions {
				if tt.Topic == "in" && p.Partition == 0 {
					return p.Offset
				}
			}
		}
		return -1
	}
	got := 0
	for got < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n)
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
			got++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			t.Fatalf("End: %v committed=%v", err, committed)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for fetchOffset() != n {
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want %d", fetchOffset(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ms, recs := logBatches(t, s, "out", 0)
	if recs != n || len(ms) == 0 {
		t.Fatalf("out: %d transactional records, markers %+v", recs, ms)
	}
	for _, m := range ms {
		if !m.commit {
			t.Fatalf("an abort marker in out: %+v", ms)
		}
	}
}

// TestDescribeProducers: the partition lists the transactional producer
// with its epoch, last sequence and the start of its open transaction,
// and no open transaction once it committed.
func TestDescribeProducers(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "out", 1)
	ctx := testCtx(t)
	cl := txnClient(t, s, "tx-dp")
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	describe := func() kmsg.DescribeProducersResponseTopicPartition {
		req := kmsg.NewDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "out", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	p := describe()
	if p.ErrorCode != 0 || len(p.ActiveProducers) != 1 {
		t.Fatalf("described %+v", p)
	}
	ap := p.ActiveProducers[0]
	if ap.LastSequence != 2 || ap.CurrentTxnStartOffset != 0 || ap.ProducerEpoch != 0 {
		t.Fatalf("producer %+v, want last sequence 2, transaction open from offset 0", ap)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for describe().ActiveProducers[0].CurrentTxnStartOffset != -1 {
		if time.Now().After(deadline) {
			t.Fatalf("transaction still open after the commit: %+v", describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
