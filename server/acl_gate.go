package server

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	sec "github.com/stratalog/strata/security"
)

// With authorizer.class.name set, every request is authorized before it is
// served, with the operations and resources Kafka's KafkaApis checks:
//
//	Produce                 Write topic (acks=0: a refusal closes the connection)
//	InitProducerId          IdempotentWrite cluster or Write on any topic (KIP-679);
//	                        with a transactional id Write on it
//	Fetch                   Read topic; a follower's fetch ClusterAction cluster
//	Metadata                Describe topic (all topics: the others are left out);
//	                        auto-creation needs Create on the cluster or the topic
//	ListOffsets             Describe topic
//	OffsetForLeaderEpoch    Describe topic; a follower's ClusterAction cluster
//	CreateTopics            Create cluster or topic
//	DeleteTopics, DeleteRecords  Delete topic
//	CreatePartitions        Alter topic
//	DescribeConfigs         DescribeConfigs topic or cluster (broker resources)
//	AlterConfigs, IncrementalAlterConfigs  AlterConfigs topic or cluster
//	FindCoordinator         Describe group (or transactional id)
//	JoinGroup, SyncGroup, Heartbeat, LeaveGroup  Read group
//	OffsetCommit            Read group, Read topic
//	OffsetFetch             Describe group, Describe topic (others left out)
//	ListGroups              Describe cluster, else the groups it may Describe
//	DescribeGroups          Describe group; DeleteGroups, OffsetDelete Delete group
//	transaction APIs        see acl_gate_txn.go
//	controller and replica requests  ClusterAction cluster
//	ElectLeaders, CreateAcls, DeleteAcls, AlterUserScramCredentials,
//	AlterReplicaLogDirs     Alter cluster
//	DescribeCluster, DescribeAcls, DescribeUserScramCredentials, DescribeLogDirs  Describe cluster
//	DescribeClientQuotas DescribeConfigs cluster; AlterClientQuotas AlterConfigs cluster
//
// A refused resource gets Kafka's error (TOPIC_, GROUP_,
// CLUSTER_AUTHORIZATION_FAILED...) in its entry of the response, and the
// rest of the request is served. One departure: a consumer's Fetch naming
// any refused topic is answered with the refused partitions' errors only.

// gate is the authorization decision for one request: deny replaces the
// handler's response; post completes it (the refused entries).
type gate struct {
	deny kmsg.Response
	post func(kmsg.Response)
}

var errAuthorizationClose = fmt.Errorf("%w: acks=0 produce to a topic the principal may not write", ErrUnauthenticated)

func (c *conn) allowed(op sec.Operation, rt sec.ResourceType, name string) bool {
	return c.s.acls.authorize(c, op, rt, name)
}

func (c *conn) clusterAllowed(op sec.Operation) bool {
	return c.allowed(op, sec.ResourceCluster, sec.ClusterName)
}

// authorize runs the gate for req; a nil gate lets it through unchanged.
func (c *conn) authorize(req kmsg.Request) (*gate, error) {
	if !c.s.acls.enabled() {
		return nil, nil
	}
	topicErr := kerr.TopicAuthorizationFailed.Code
	groupErr := kerr.GroupAuthorizationFailed.Code
	clusterErr := kerr.ClusterAuthorizationFailed.Code
	topicOK := func(op sec.Operation) func(string) bool {
		return func(t string) bool { return c.allowed(op, sec.ResourceTopic, t) }
	}
	if g, ok := c.authorizeTxn(req); ok {
		return g, nil
	}
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		return nil, nil

	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID != nil {
			if c.allowed(sec.OpWrite, sec.ResourceTransactionalID, *r.TransactionalID) {
				return nil, nil
			}
			return &gate{deny: topError(req, kerr.TransactionalIDAuthorizationFailed.Code)}, nil
		}
		// An idempotent producer: IdempotentWrite on the cluster, or Write
		// on any topic (KIP-679, Kafka 2.8).
		if c.clusterAllowed(sec.OpIdempotentWrite) || c.s.acls.authorizeAny(c, sec.OpWrite, sec.ResourceTopic) {
			return nil, nil
		}
		return &gate{deny: topError(req, clusterErr)}, nil

	case *kmsg.ProduceRequest:
		if c.produceTxnDenied(r) {
			if r.Acks == 0 {
				return nil, errAuthorizationClose
			}
			return &gate{deny: produceTxnError(r)}, nil
		}
		var denied []kmsg.ProduceRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.ProduceRequestTopic) bool { return topicOK(sec.OpWrite)(t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		if r.Acks == 0 {
			return nil, errAuthorizationClose
		}
		return &gate{post: func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.ProduceResponse).Topics, denied, topicErr)
		}}, nil

	case *kmsg.FetchRequest:
		if r.ReplicaID >= 0 {
			if c.clusterAllowed(sec.OpClusterAction) {
				return nil, nil
			}
			return &gate{deny: fetchErrors(r, r.Topics, clusterErr)}, nil
		}
		_, denied := split(r.Topics, func(t kmsg.FetchRequestTopic) bool { return topicOK(sec.OpRead)(t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return &gate{deny: fetchErrors(r, denied, topicErr)}, nil

	case *kmsg.MetadataRequest:
		canCreate := c.clusterAllowed(sec.OpCreate)
		if r.Topics == nil {
			return &gate{post: func(resp kmsg.Response) {
				mr := resp.(*kmsg.MetadataResponse)
				mr.Topics, _ = split(mr.Topics, func(t kmsg.MetadataResponseTopic) bool { return t.Topic != nil && topicOK(sec.OpDescribe)(*t.Topic) })
			}}, nil
		}
		var denied []kmsg.MetadataRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.MetadataRequestTopic) bool { return t.Topic != nil && topicOK(sec.OpDescribe)(*t.Topic) })
		if r.Topics == nil {
			r.Topics = []kmsg.MetadataRequestTopic{} // not null: null asks for every topic
		}
		for _, t := range r.Topics {
			if !canCreate && !c.allowed(sec.OpCreate, sec.ResourceTopic, *t.Topic) {
				r.AllowAutoTopicCreation = false // Kafka: no Create, no auto-creation (v4+)
			}
		}
		if len(denied) == 0 {
			return nil, nil
		}
		return &gate{post: func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.MetadataResponse).Topics, denied, topicErr)
		}}, nil

	case *kmsg.ListOffsetsRequest:
		var denied []kmsg.ListOffsetsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return topicOK(sec.OpDescribe)(t.Topic) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.ListOffsetsResponse).Topics, denied, topicErr)
		}), nil

	case *kmsg.OffsetForLeaderEpochRequest:
		ok := func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return topicOK(sec.OpDescribe)(t.Topic) }
		code := topicErr
		if r.ReplicaID >= 0 {
			all := c.clusterAllowed(sec.OpClusterAction)
			ok, code = func(kmsg.OffsetForLeaderEpochRequestTopic) bool { return all }, clusterErr
		}
		var denied []kmsg.OffsetForLeaderEpochRequestTopic
		r.Topics, denied = split(r.Topics, ok)
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.OffsetForLeaderEpochResponse).Topics, denied, code)
		}), nil

	case *kmsg.CreateTopicsRequest:
		all := c.clusterAllowed(sec.OpCreate)
		var denied []kmsg.CreateTopicsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return all || topicOK(sec.OpCreate)(t.Topic) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.CreateTopicsResponse).Topics, denied, topicErr)
		}), nil

	case *kmsg.DeleteTopicsRequest:
		var denied []kmsg.DeleteTopicsRequestTopic
		var deniedNames []string
		r.TopicNames, deniedNames = split(r.TopicNames, topicOK(sec.OpDelete))
		r.Topics, denied = split(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool { return t.Topic != nil && topicOK(sec.OpDelete)(*t.Topic) })
		return postIf(len(denied)+len(deniedNames) > 0, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DeleteTopicsResponse)
			for _, t := range denied {
				rt := kmsg.NewDeleteTopicsResponseTopic()
				rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, topicErr
				dr.Topics = append(dr.Topics, rt)
			}
			for _, n := range deniedNames {
				rt := kmsg.NewDeleteTopicsResponseTopic()
				rt.Topic, rt.ErrorCode = kmsg.StringPtr(n), topicErr
				dr.Topics = append(dr.Topics, rt)
			}
		}), nil

	case *kmsg.CreatePartitionsRequest:
		var denied []kmsg.CreatePartitionsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return topicOK(sec.OpAlter)(t.Topic) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.CreatePartitionsResponse).Topics, denied, topicErr)
		}), nil

	case *kmsg.DeleteRecordsRequest:
		var denied []kmsg.DeleteRecordsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return topicOK(sec.OpDelete)(t.Topic) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.DeleteRecordsResponse).Topics, denied, topicErr, "LowWatermark")
		}), nil

	case *kmsg.DescribeConfigsRequest:
		type res = kmsg.DescribeConfigsRequestResource
		var denied []res
		r.Resources, denied = split(r.Resources, func(x res) bool { return c.configAllowed(sec.OpDescribeConfigs, x.ResourceType, x.ResourceName) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			for _, x := range denied {
				refusals(&resp.(*kmsg.DescribeConfigsResponse).Resources, []res{x}, configErr(x.ResourceType))
			}
		}), nil

	case *kmsg.AlterConfigsRequest:
		type res = kmsg.AlterConfigsRequestResource
		var denied []res
		r.Resources, denied = split(r.Resources, func(x res) bool { return c.configAllowed(sec.OpAlterConfigs, x.ResourceType, x.ResourceName) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			for _, x := range denied {
				refusals(&resp.(*kmsg.AlterConfigsResponse).Resources, []res{x}, configErr(x.ResourceType))
			}
		}), nil

	case *kmsg.IncrementalAlterConfigsRequest:
		type res = kmsg.IncrementalAlterConfigsRequestResource
		var denied []res
		r.Resources, denied = split(r.Resources, func(x res) bool { return c.configAllowed(sec.OpAlterConfigs, x.ResourceType, x.ResourceName) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			for _, x := range denied {
				refusals(&resp.(*kmsg.IncrementalAlterConfigsResponse).Resources, []res{x}, configErr(x.ResourceType))
			}
		}), nil

	case *kmsg.FindCoordinatorRequest:
		rt, code := sec.ResourceGroup, groupErr
		if r.CoordinatorType == 1 {
			rt, code = sec.ResourceTransactionalID, kerr.TransactionalIDAuthorizationFailed.Code
		}
		if r.Version < 4 {
			if c.allowed(sec.OpDescribe, rt, r.CoordinatorKey) {
				return nil, nil
			}
			resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
			resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
			return &gate{deny: resp}, nil
		}
		var denied []string
		r.CoordinatorKeys, denied = split(r.CoordinatorKeys, func(k string) bool { return c.allowed(sec.OpDescribe, rt, k) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			fr := resp.(*kmsg.FindCoordinatorResponse)
			for _, k := range denied {
				fc := kmsg.NewFindCoordinatorResponseCoordinator()
				fc.Key, fc.ErrorCode, fc.NodeID, fc.Port = k, code, -1, -1
				fr.Coordinators = append(fr.Coordinators, fc)
			}
		}), nil

	case *kmsg.JoinGroupRequest:
		return c.groupGate(req, r.Group, sec.OpRead), nil
	case *kmsg.SyncGroupRequest:
		return c.groupGate(req, r.Group, sec.OpRead), nil
	case *kmsg.HeartbeatRequest:
		return c.groupGate(req, r.Group, sec.OpRead), nil
	case *kmsg.LeaveGroupRequest:
		return c.groupGate(req, r.Group, sec.OpRead), nil
	case *kmsg.OffsetDeleteRequest:
		return c.groupGate(req, r.Group, sec.OpDelete), nil

	case *kmsg.OffsetCommitRequest:
		groupOK := c.allowed(sec.OpRead, sec.ResourceGroup, r.Group)
		var denied []kmsg.OffsetCommitRequestTopic
		if groupOK {
			r.Topics, denied = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return topicOK(sec.OpRead)(t.Topic) })
		} else {
			denied, r.Topics = r.Topics, nil
		}
		if len(denied) == 0 {
			return nil, nil
		}
		code := topicErr
		if !groupOK {
			code = groupErr
		}
		post := func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.OffsetCommitResponse).Topics, denied, code)
		}
		if !groupOK {
			resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
			post(resp)
			return &gate{deny: resp}, nil
		}
		return &gate{post: post}, nil

	case *kmsg.OffsetFetchRequest:
		if r.Version >= 8 {
			var denied []kmsg.OffsetFetchRequestGroup
			r.Groups, denied = split(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool {
				return c.allowed(sec.OpDescribe, sec.ResourceGroup, g.Group)
			})
			return &gate{post: func(resp kmsg.Response) {
				fr := resp.(*kmsg.OffsetFetchResponse)
				for i := range fr.Groups {
					fr.Groups[i].Topics, _ = split(fr.Groups[i].Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return topicOK(sec.OpDescribe)(t.Topic) })
				}
				refusals(&fr.Groups, denied, groupErr)
			}}, nil
		}
		if !c.allowed(sec.OpDescribe, sec.ResourceGroup, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = groupErr
			refusals(&resp.Topics, r.Topics, groupErr, "Offset")
			return &gate{deny: resp}, nil
		}
		var denied []kmsg.OffsetFetchRequestTopic
		if r.Topics != nil {
			r.Topics, denied = split(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return topicOK(sec.OpDescribe)(t.Topic) })
			if r.Topics == nil {
				r.Topics = []kmsg.OffsetFetchRequestTopic{} // not null: null means all topics
			}
		}
		return &gate{post: func(resp kmsg.Response) {
			fr := resp.(*kmsg.OffsetFetchResponse)
			fr.Topics, _ = split(fr.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return topicOK(sec.OpDescribe)(t.Topic) })
			refusals(&fr.Topics, denied, topicErr, "Offset")
		}}, nil

	case *kmsg.ListGroupsRequest:
		if c.clusterAllowed(sec.OpDescribe) {
			return nil, nil
		}
		return &gate{post: func(resp kmsg.Response) {
			lr := resp.(*kmsg.ListGroupsResponse)
			lr.Groups, _ = split(lr.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
				return c.allowed(sec.OpDescribe, sec.ResourceGroup, g.Group)
			})
		}}, nil

	case *kmsg.DescribeGroupsRequest:
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return c.allowed(sec.OpDescribe, sec.ResourceGroup, g) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.DescribeGroupsResponse).Groups, denied, groupErr)
		}), nil

	case *kmsg.DeleteGroupsRequest:
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return c.allowed(sec.OpDelete, sec.ResourceGroup, g) })
		return postIf(len(denied) > 0, func(resp kmsg.Response) {
			refusals(&resp.(*kmsg.DeleteGroupsResponse).Groups, denied, groupErr)
		}), nil

	case *kmsg.LeaderAndISRRequest, *kmsg.UpdateMetadataRequest, *kmsg.StopReplicaRequest,
		*kmsg.ControlledShutdownRequest, *kmsg.AlterPartitionRequest:
		return c.clusterGate(req, sec.OpClusterAction), nil
	case *kmsg.ElectLeadersRequest:
		return c.clusterGate(req, sec.OpAlter), nil
	case *kmsg.AlterReplicaLogDirsRequest:
		if c.clusterAllowed(sec.OpAlter) {
			return nil, nil
		}
		return &gate{deny: denyAlterReplicaLogDirs(r)}, nil
	case *kmsg.DescribeClusterRequest, *kmsg.DescribeACLsRequest, *kmsg.DescribeUserSCRAMCredentialsRequest,
		*kmsg.DescribeLogDirsRequest:
		return c.clusterGate(req, sec.OpDescribe), nil

	case *kmsg.CreateACLsRequest:
		if c.clusterAllowed(sec.OpAlter) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = clusterErr
			resp.Results = append(resp.Results, res)
		}
		return &gate{deny: resp}, nil
	case *kmsg.DeleteACLsRequest:
		if c.clusterAllowed(sec.OpAlter) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = clusterErr
			resp.Results = append(resp.Results, res)
		}
		return &gate{deny: resp}, nil
	case *kmsg.DescribeClientQuotasRequest:
		return c.clusterGate(req, sec.OpDescribeConfigs), nil
	case *kmsg.AlterClientQuotasRequest:
		if c.clusterAllowed(sec.OpAlterConfigs) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, en := range r.Entries {
			res := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range en.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = p.Type, p.Name
				res.Entity = append(res.Entity, re)
			}
			res.ErrorCode = clusterErr
			resp.Entries = append(resp.Entries, res)
		}
		return &gate{deny: resp}, nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if c.clusterAllowed(sec.OpAlter) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(u string) {
			if !seen[u] {
				seen[u] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = u, clusterErr
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
		return &gate{deny: resp}, nil
	}
	// An API without a rule here: only what may do everything.
	return c.clusterGate(req, sec.OpAll), nil
}

// groupGate refuses a whole group request with GROUP_AUTHORIZATION_FAILED
// in its top-level error.
func (c *conn) groupGate(req kmsg.Request, group string, op sec.Operation) *gate {
	if c.allowed(op, sec.ResourceGroup, group) {
		return nil
	}
	return &gate{deny: topError(req, kerr.GroupAuthorizationFailed.Code)}
}

// clusterGate refuses a request on the cluster with
// CLUSTER_AUTHORIZATION_FAILED in its top-level error.
func (c *conn) clusterGate(req kmsg.Request, op sec.Operation) *gate {
	if c.clusterAllowed(op) {
		return nil
	}
	return &gate{deny: topError(req, kerr.ClusterAuthorizationFailed.Code)}
}

// topError is req's response with its top-level ErrorCode set.
func topError(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.CanSet() {
		f.SetInt(int64(code))
	}
	return resp
}

// configAllowed checks a config resource: a topic's own, a broker's (or
// broker logger's) on the cluster.
func (c *conn) configAllowed(op sec.Operation, rt kmsg.ConfigResourceType, name string) bool {
	if rt == kmsg.ConfigResourceTypeTopic {
		return c.allowed(op, sec.ResourceTopic, name)
	}
	return c.clusterAllowed(op)
}

func configErr(rt kmsg.ConfigResourceType) int16 {
	if rt == kmsg.ConfigResourceTypeTopic {
		return kerr.TopicAuthorizationFailed.Code
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// fetchErrors is a Fetch response giving code to every partition of topics.
func fetchErrors(r *kmsg.FetchRequest, topics []kmsg.FetchRequestTopic, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset = p.Partition, code, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func postIf(cond bool, post func(kmsg.Response)) *gate {
	if !cond {
		return nil
	}
	return &gate{post: post}
}

// split separates xs into those ok accepts and the others; it returns xs
// itself (no copy) when all are accepted.
func split[T any](xs []T, ok func(T) bool) (in, out []T) {
	for i, x := range xs {
		if !ok(x) {
			in = append(in, xs[:i]...)
			out = append(out, x)
			for _, y := range xs[i+1:] {
				if ok(y) {
					in = append(in, y)
				} else {
					out = append(out, y)
				}
			}
			return in, out
		}
	}
	return xs, nil
}
