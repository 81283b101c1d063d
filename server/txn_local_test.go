package server

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addPartitionsCounter counts a client's AddPartitionsToTxn requests.
type addPartitionsCounter struct{ n atomic.Int64 }

func (c *addPartitionsCounter) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, _ kgo.BrokerE2E) {
	if key == int16(kmsg.AddPartitionsToTxn) {
		c.n.Add(1)
	}
}

// TestTxnCompleteBeforeEndTxnAnswered: on a single node the coordinator
// writes a transaction's markers and its completion before it answers
// EndTxn. So each partition holds the marker when franz-go's
// EndTransaction returns, and the next transaction's AddPartitionsToTxn,
// sent right after, is never refused CONCURRENT_TRANSACTIONS (franz-go
// backs off 20 ms on it and sends it again: one request per transaction
// here). Before, the markers were written in the background after the
// answer.
func TestTxnCompleteBeforeEndTxnAnswered(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "out", 2)
	adds := &addPartitionsCounter{}
	cl := txnClient(t, s, "tx-local", kgo.WithHooks(adds))
	ctx := testCtx(t)
	const txns = 20
	for i := 0; i < txns; i++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 2; p++ {
			cl.Produce(ctx, &kgo.Record{Partition: p, Value: []byte{byte(i)}}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		commit := i%3 != 2
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		for p := int32(0); p < 2; p++ {
			ms, n := logBatches(t, s, "out", p)
			if len(ms) != i+1 || ms[i].commit != commit || n != i+1 {
				t.Fatalf("transaction %d, partition %d, when EndTransaction returned: markers %+v, %d transactional records", i, p, ms, n)
			}
		}
	}
	if n := adds.n.Load(); n != txns {
		t.Fatalf("%d AddPartitionsToTxn requests for %d transactions: some were refused CONCURRENT_TRANSACTIONS", n, txns)
	}
}
