package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestACLTransactionAPIs: the transaction APIs are authorized as Kafka's
// KafkaApis does, and a principal lacking each grant is refused with
// Kafka's error: Write on the TransactionalId for AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, TxnOffsetCommit and a transactional Produce;
// then Write on the topics (AddPartitionsToTxn), Read on the group
// (AddOffsetsToTxn, TxnOffsetCommit) and on the topics (TxnOffsetCommit);
// ClusterAction for WriteTxnMarkers; Describe on the TransactionalId for
// DescribeTransactions and ListTransactions (the others are left out); Read
// on the topic for DescribeProducers. Bob's grants are added step by step;
// a granted step gets past the gate (no authorization error).
func TestACLTransactionAPIs(t *testing.T) {
	s := startACL(t, t.TempDir())
	admin := userClient(t, s, "admin")
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "t", Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	grant := func(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		t.Helper()
		if code := createACL(t, admin, rt, name, lit, "User:bob", op, kmsg.ACLPermissionTypeAllow); code != 0 {
			t.Fatalf("create ACL: %d", code)
		}
	}
	// Bob may see topic t (Describe) but nothing more, yet.
	grant(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationDescribe)
	bob := userClient(t, s, "bob")
	bobB := bob.Broker(int(s.NodeID()))
	adminB := admin.Broker(int(s.NodeID()))
	txnErr, topicErr, groupErr, clusterErr := kerr.TransactionalIDAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code,
		kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code
	authErrs := map[int16]bool{txnErr: true, topicErr: true, groupErr: true, clusterErr: true}
	check := func(api string, got, want int16) {
		t.Helper()
		if want == 0 && authErrs[got] {
			t.Errorf("%s: refused with %d, want it past the gate", api, got)
		} else if want != 0 && got != want {
			t.Errorf("%s: error %d, want %d", api, got, want)
		}
	}
	// Admin's transactional producer id, for the listing below.
	// (COORDINATOR_NOT_AVAILABLE while __transaction_state is created.)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("tx-admin"), 60000
		resp := do(t, adminB, r).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == 0 {
			break
		}
		if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
			t.Fatalf("admin's InitProducerId: %d", resp.ErrorCode)
		}
	}
	addParts := func() int16 {
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx-b", 1, 0
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.AddPartitionsToTxnResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("AddPartitionsToTxn response %+v", resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	addOffsets := func() int16 {
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx-b", 1, 0, "g"
		return do(t, bobB, r).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
	}
	endTxn := func() int16 {
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx-b", 1, 0
		return do(t, bobB, r).(*kmsg.EndTxnResponse).ErrorCode
	}
	txnCommit := func() int16 {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx-b", 1, 0, "g"
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.TxnOffsetCommitResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("TxnOffsetCommit response %+v", resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	txnProduce := func() int16 {
		o := record.DefaultBatchOptions()
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = 1, 0, 0, true
		b, err := record.AppendBatch(nil, o, []record.Record{{Timestamp: 1, Value: []byte("x")}})
		if err != nil {
			t.Fatal(err)
		}
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis, r.TransactionID = -1, 5000, kmsg.StringPtr("tx-b")
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Produce response %+v", resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	// No grant on the transactional id.
	check("AddPartitionsToTxn without Write on the TransactionalId", addParts(), txnErr)
	check("AddOffsetsToTxn without Write on the TransactionalId", addOffsets(), txnErr)
	check("EndTxn without Write on the TransactionalId", endTxn(), txnErr)
	check("TxnOffsetCommit without Write on the TransactionalId", txnCommit(), txnErr)
	grant(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationWrite)
	check("transactional Produce without Write on the TransactionalId", txnProduce(), txnErr)
	{
		r := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, true
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "t", []int32{0}
		m.Topics = append(m.Topics, mt)
		r.Markers = append(r.Markers, m)
		resp := do(t, bobB, r).(*kmsg.WriteTxnMarkersResponse)
		if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || len(resp.Markers[0].Topics[0].Partitions) != 1 {
			t.Fatalf("WriteTxnMarkers response %+v", resp)
		}
		check("WriteTxnMarkers without ClusterAction", resp.Markers[0].Topics[0].Partitions[0].ErrorCode, clusterErr)
	}
	{
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{"tx-admin"}
		resp := do(t, bobB, r).(*kmsg.DescribeTransactionsResponse)
		if len(resp.TransactionStates) != 1 {
			t.Fatalf("DescribeTransactions: %+v", resp)
		}
		check("DescribeTransactions without Describe on the TransactionalId", resp.TransactionStates[0].ErrorCode, txnErr)
	}
	list := func(b *kgo.Broker) []string {
		resp := do(t, b, kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, ts := range resp.TransactionStates {
			ids = append(ids, ts.TransactionalID)
		}
		return ids
	}
	if ids := list(adminB); len(ids) != 1 || ids[0] != "tx-admin" {
		t.Fatalf("admin lists %v, want [tx-admin]", ids)
	}
	if ids := list(bobB); len(ids) != 0 {
		t.Errorf("ListTransactions without Describe on the TransactionalId lists %v", ids)
	}
	{
		r := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		resp := do(t, bobB, r).(*kmsg.DescribeProducersResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeProducers response %+v", resp)
		}
		check("DescribeProducers without Read on the topic", resp.Topics[0].Partitions[0].ErrorCode, topicErr)
	}

	// Write on the transactional id: then the topic, group checks.
	grant(kmsg.ACLResourceTypeTransactionalId, "tx-b", kmsg.ACLOperationWrite)
	check("transactional Produce with Write on the TransactionalId", txnProduce(), 0)
	check("EndTxn with Write on the TransactionalId", endTxn(), 0)
	check("AddOffsetsToTxn without Read on the group", addOffsets(), groupErr)
	check("TxnOffsetCommit without Read on the group", txnCommit(), groupErr)
	grant(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead)
	check("AddOffsetsToTxn with Read on the group", addOffsets(), 0)
	check("TxnOffsetCommit without Read on the topic", txnCommit(), topicErr)
	grant(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationRead)
	check("TxnOffsetCommit with Read on the topic", txnCommit(), 0)
	check("DescribeProducers with Read on the topic", func() int16 {
		r := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		return do(t, bobB, r).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
	}(), 0)

	// AddPartitionsToTxn needs Write on the topic: u is a topic bob may
	// not write; t, which he may, is then not attempted.
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "u", Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	{
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx-b", 1, 0
		for _, topic := range []string{"t", "u"} {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			r.Topics = append(r.Topics, rt)
		}
		resp := do(t, bobB, r).(*kmsg.AddPartitionsToTxnResponse)
		got := map[string]int16{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				got[rt.Topic] = rp.ErrorCode
			}
		}
		check("AddPartitionsToTxn: the topic without Write", got["u"], topicErr)
		check("AddPartitionsToTxn: the other topic", got["t"], kerr.OperationNotAttempted.Code)
	}
	check("AddPartitionsToTxn with Write on the TransactionalId and the topic", addParts(), 0)

	// Describe on the transactional id.
	grant(kmsg.ACLResourceTypeTransactionalId, "tx-admin", kmsg.ACLOperationDescribe)
	if ids := list(bobB); len(ids) != 1 || ids[0] != "tx-admin" {
		t.Errorf("ListTransactions with Describe on tx-admin lists %v", ids)
	}
	{
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{"tx-admin"}
		resp := do(t, bobB, r).(*kmsg.DescribeTransactionsResponse)
		if len(resp.TransactionStates) != 1 {
			t.Fatalf("DescribeTransactions: %+v", resp)
		}
		check("DescribeTransactions with Describe on the TransactionalId", resp.TransactionStates[0].ErrorCode, 0)
	}
}
