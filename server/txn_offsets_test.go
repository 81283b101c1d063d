package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsetCommit sends TxnOffsetCommit of offset for in/0 in group g.
func txnOffsetCommit(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, offset int64) {
	t.Helper()
	ctx := testCtx(t)
	ao := kmsg.NewAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, "g"
	if resp, err := ao.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %+v", err, resp)
	}
	req := kmsg.NewTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, "g", pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "in"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %v %+v", err, resp)
	}
}

func endTxn(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) {
	t.Helper()
	req := kmsg.NewEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	if resp, err := req.RequestWith(testCtx(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %+v", err, resp)
	}
}

func committedOffset(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	req := kmsg.NewOffsetFetchRequest()
	req.Group = "g"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "in", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("OffsetFetch: %v %+v", err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// waitOffset waits until g's committed offset of in/0 is want.
func waitOffset(t *testing.T, cl *kgo.Client, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := committedOffset(t, cl); got != want; got = committedOffset(t, cl) {
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTxnOffsetsVisibleOnCommit: offsets committed in a transaction are
// invisible until it commits, dropped if it aborts, and stay so after a
// restart (the load replays the markers of __consumer_offsets: an aborted
// transaction's offsets are not applied, an open one's stay pending).
func TestTxnOffsetsVisibleOnCommit(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	createTopic(t, s, "in", 1)
	cl, pid, epoch := txnRaw(t, s, "tx-o", 60000)
	txnOffsetCommit(t, cl, "tx-o", pid, epoch, 5)
	if got := committedOffset(t, cl); got != -1 {
		t.Fatalf("offset %d visible before the commit", got)
	}
	endTxn(t, cl, "tx-o", pid, epoch, false)
	waitTxnState(t, cl, "tx-o", "CompleteAbort")
	if got := committedOffset(t, cl); got != -1 {
		t.Fatalf("offset %d of an aborted transaction visible", got)
	}
	txnOffsetCommit(t, cl, "tx-o", pid, epoch, 7)
	endTxn(t, cl, "tx-o", pid, epoch, true)
	waitOffset(t, cl, 7)
	txnOffsetCommit(t, cl, "tx-o", pid, epoch, 9) // left open
	cl.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, dir)
	cl = newClient(t, s)
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewOffsetFetchRequest()
		req.Group = "g"
		resp, err := req.RequestWith(testCtx(t), cl)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("offsets not loaded: %v %+v", err, resp)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := committedOffset(t, cl); got != 7 {
		t.Fatalf("after restart: offset %d, want 7 (5 aborted, 9 still open)", got)
	}
	// The open transaction is still the coordinator's: committing it
	// applies 9 (its pending offset was restored at load).
	endTxn(t, cl, "tx-o", pid, epoch, true)
	waitOffset(t, cl, 9)
}

// waitTxnState waits until DescribeTransactions shows id in state.
func waitTxnState(t *testing.T, cl *kgo.Client, id, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		resp, err := req.RequestWith(testCtx(t), cl)
		if err == nil && resp.TransactionStates[0].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not %s: %v %+v", id, state, err, resp)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
