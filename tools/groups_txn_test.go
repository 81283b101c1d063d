package tools

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupsTransactionalCommit: offsets a transactional producer commits
// for a group (AddOffsetsToTxn, TxnOffsetCommit) show in strata groups
// --describe only once its transaction commits (EndTxn); while it is open
// the partition shows the group's previous offset, and an aborted
// transaction's offsets never show.
func TestGroupsTransactionalCommit(t *testing.T) {
	addr := groupsBroker(t)
	topic, group, txnID := uniqueName("gtx"), uniqueName("gtx-group"), uniqueName("gtx-txn")
	makeTopic(t, addr, topic, 2, map[int32]int{0: 10, 1: 10})
	cl, adm := adminFor(t, addr)
	ctx := groupsCtx(t)
	// A plain commit on partition 1 makes the group known.
	var plain kadm.Offsets
	plain.AddOffset(topic, 1, 3, -1)
	if err := adm.CommitAllOffsets(ctx, group, plain); err != nil {
		t.Fatal(err)
	}
	req := func(r kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Request(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60000
	ir := req(init).(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(ir.ErrorCode); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	txnCommit := func(offset int64, commit bool, check func()) {
		t.Helper()
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, ir.ProducerID, ir.ProducerEpoch, group
		for {
			// CONCURRENT_TRANSACTIONS while the previous transaction's
			// markers are being written.
			err := kerr.ErrorForCode(req(add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
			if err == nil {
				break
			}
			if err != kerr.ConcurrentTransactions || ctx.Err() != nil {
				t.Fatalf("AddOffsetsToTxn: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = txnID, group, ir.ProducerID, ir.ProducerEpoch, -1
		ot := kmsg.NewTxnOffsetCommitRequestTopic()
		ot.Topic = topic
		op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset, op.LeaderEpoch = 0, offset, -1
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		for _, rt := range req(oc).(*kmsg.TxnOffsetCommitResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					t.Fatalf("TxnOffsetCommit: %v", err)
				}
			}
		}
		check()
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, ir.ProducerID, ir.ProducerEpoch, commit
		if err := kerr.ErrorForCode(req(end).(*kmsg.EndTxnResponse).ErrorCode); err != nil {
			t.Fatalf("EndTxn: %v", err)
		}
	}
	txnCommit(7, true, func() {
		wantOffsets(t, "transaction open", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{1: 3})
	})
	// The markers reach the group coordinator after EndTxn returns: poll.
	waitOffsets := func(what string, want map[int32]int64) {
		t.Helper()
		for {
			got := committedOf(describeJSON(t, addr, group), topic)
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: committed %v, want %v", what, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitOffsets("transaction committed", map[int32]int64{0: 7, 1: 3})
	txnCommit(9, false, func() {
		wantOffsets(t, "second transaction open", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 7, 1: 3})
	})
	// An aborted transaction's offsets never show: once the producer can
	// begin again (its abort is complete), the view is unchanged.
	txnCommit(11, true, func() {
		wantOffsets(t, "after the abort", committedOf(describeJSON(t, addr, group), topic), map[int32]int64{0: 7, 1: 3})
	})
	waitOffsets("after the abort and a third transaction", map[int32]int64{0: 11, 1: 3})
}
