package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	sec "github.com/stratalog/strata/security"
)

// The transaction APIs' rules, as Kafka's KafkaApis checks them:
//
//	Produce of transactional batches  Write on the TransactionalId too
//	AddPartitionsToTxn   Write TransactionalId, then Write on each topic (a
//	                     refused or unknown topic fails the request: the
//	                     others get OPERATION_NOT_ATTEMPTED); v4+ (between
//	                     brokers) ClusterAction cluster
//	AddOffsetsToTxn      Write TransactionalId, Read group
//	EndTxn               Write TransactionalId
//	TxnOffsetCommit      Write TransactionalId, Read group, Read topic
//	WriteTxnMarkers      ClusterAction cluster
//	DescribeTransactions Describe TransactionalId (topics it may not
//	                     Describe left out of each transaction)
//	ListTransactions     the transactional ids it may Describe
//	DescribeProducers    Read topic

// txnIDErr is TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
var txnIDErr = kerr.TransactionalIDAuthorizationFailed.Code

func (c *conn) txnIDAllowed(op sec.Operation, id string) bool {
	return c.allowed(op, sec.ResourceTransactionalID, id)
}

// authorizeTxn is authorize for the transaction APIs; ok is false for
// another request.
func (c *conn) authorizeTxn(req kmsg.Request) (g *gate, ok bool) {
	topicErr := kerr.TopicAuthorizationFailed.Code
	groupErr := kerr.GroupAuthorizationFailed.Code
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		if r.Version >= 4 {
			return c.clusterGate(req, sec.OpClusterAction), true
		}
		idOK := c.txnIDAllowed(sec.OpWrite, r.TransactionalID)
		denied := map[string]bool{}
		for _, t := range r.Topics {
			if idOK && !c.allowed(sec.OpWrite, sec.ResourceTopic, t.Topic) {
				denied[t.Topic] = true
			}
		}
		if idOK && len(denied) == 0 {
			return nil, true
		}
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				switch {
				case !idOK:
					rp.ErrorCode = txnIDErr
				case denied[t.Topic]:
					rp.ErrorCode = topicErr
				case !c.s.partitionKnown(t.Topic, p):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					rp.ErrorCode = kerr.OperationNotAttempted.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return &gate{deny: resp}, true

	case *kmsg.AddOffsetsToTxnRequest:
		switch {
		case !c.txnIDAllowed(sec.OpWrite, r.TransactionalID):
			return &gate{deny: topError(req, txnIDErr)}, true
		case !c.allowed(sec.OpRead, sec.ResourceGroup, r.Group):
			return &gate{deny: topError(req, groupErr)}, true
		}
		return nil, true

	case *kmsg.EndTxnRequest:
		if !c.txnIDAllowed(sec.OpWrite, r.TransactionalID) {
			return &gate{deny: topError(req, txnIDErr)}, true
		}
		return nil, true

	case *kmsg.TxnOffsetCommitRequest:
		code := int16(0)
		switch {
		case !c.txnIDAllowed(sec.OpWrite, r.TransactionalID):
			code = txnIDErr
		case !c.allowed(sec.OpRead, sec.ResourceGroup, r.Group):
			code = groupErr
		}
		var denied []kmsg.TxnOffsetCommitRequestTopic
		if code == 0 {
			r.Topics, denied = split(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool {
				return c.allowed(sec.OpRead, sec.ResourceTopic, t.Topic)
			})
			code = topicErr
		} else {
			denied, r.Topics = r.Topics, nil
		}
		if len(denied) == 0 {
			return nil, true
		}
		post := func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.TxnOffsetCommitResponse).Topics, denied, code)
		}
		if len(r.Topics) == 0 { // nothing left to commit
			resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			post(resp)
			return &gate{deny: resp}, true
		}
		return &gate{post: post}, true

	case *kmsg.WriteTxnMarkersRequest:
		if c.clusterAllowed(sec.OpClusterAction) {
			return nil, true
		}
		deny := txnMarkersResponse(r, func(*kmsg.WriteTxnMarkersRequestMarker, string, int32) int16 {
			return kerr.ClusterAuthorizationFailed.Code
		})
		return &gate{deny: deny}, true

	case *kmsg.DescribeTransactionsRequest:
		var denied []string
		r.TransactionalIDs, denied = split(r.TransactionalIDs, func(id string) bool { return c.txnIDAllowed(sec.OpDescribe, id) })
		return &gate{post: func(resp kmsg.Response) {
			dr := resp.(*kmsg.DescribeTransactionsResponse)
			for i := range dr.TransactionStates {
				st := &dr.TransactionStates[i]
				st.Topics, _ = split(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
					return c.allowed(sec.OpDescribe, sec.ResourceTopic, t.Topic)
				})
			}
			for _, id := range denied {
				st := kmsg.NewDescribeTransactionsResponseTransactionState()
				st.TransactionalID, st.ErrorCode, st.ProducerID = id, txnIDErr, -1
				dr.TransactionStates = append(dr.TransactionStates, st)
			}
		}}, true

	case *kmsg.ListTransactionsRequest:
		return &gate{post: func(resp kmsg.Response) {
			lr := resp.(*kmsg.ListTransactionsResponse)
			lr.TransactionStates, _ = split(lr.TransactionStates, func(ts kmsg.ListTransactionsResponseTransactionState) bool {
				return c.txnIDAllowed(sec.OpDescribe, ts.TransactionalID)
			})
		}}, true

	case *kmsg.DescribeProducersRequest:
		var denied []kmsg.DescribeProducersRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.DescribeProducersRequestTopic) bool {
			return c.allowed(sec.OpRead, sec.ResourceTopic, t.Topic)
		})
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.DescribeProducersResponse).Topics, denied, topicErr)
		}), true
	}
	return nil, false
}

// produceTxnDenied reports whether r carries transactional batches its
// principal may not write: that needs Write on the request's
// TransactionalId (Kafka refuses the whole request then).
func (c *conn) produceTxnDenied(r *kmsg.ProduceRequest) bool {
	if !produceHasTxn(r) {
		return false
	}
	return r.TransactionID == nil || !c.txnIDAllowed(sec.OpWrite, *r.TransactionID)
}

// produceHasTxn reports whether any batch of r is transactional (the
// framing is checked later by the handler: a short entry ends the walk).
func produceHasTxn(r *kmsg.ProduceRequest) bool {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			buf := p.Records
			for len(buf) >= record.BatchHeaderSize {
				b := record.Batch(buf)
				if b.Magic() == 2 && b.IsTransactional() {
					return true
				}
				n := int(b.Length()) + record.LogOverhead
				if b.Length() <= 0 || n > len(buf) {
					break
				}
				buf = buf[n:]
			}
		}
	}
	return false
}

// produceTxnError is the response refusing every partition of r with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func produceTxnError(r *kmsg.ProduceRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	refusals(&resp.Topics, r.Topics, txnIDErr)
	return resp
}
