package cluster

import "github.com/twmb/franz-go/pkg/kmsg"

// Event is an input of Controller.Step. The driver makes one from each
// ZooKeeper watch (after reading the znodes it names), each controller
// request from a broker, each result of a write or request the controller
// asked for, and each timer tick.
type Event interface{ event() }

// Activate makes the controller active with a snapshot of ZooKeeper
// (LoadSnapshot), after this broker won the election or after a Reload.
// It replaces everything the controller knew.
type Activate struct{ Snapshot *Snapshot }

// Resign makes the controller inactive: /controller was deleted or names
// another broker, or the session expired. Held requests are dropped and
// held replies turn into NOT_CONTROLLER answers.
type Resign struct{ Reason string }

// BrokersChanged carries every registration under /brokers/ids as read
// after the child watch (or a data watch of one of them) fired. A broker
// missing from it is dead; one with a larger epoch than known has bounced;
// one with the same epoch and other endpoints or rack was modified.
type BrokersChanged struct{ Brokers []Broker }

// TopicsChanged carries every topic under /brokers/topics, as read after
// the child watch on /brokers/topics or a data watch on one topic fired.
// New names are created, longer assignments add partitions, names missing
// are forgotten. Changed replicas of existing partitions are ignored: a
// reassignment goes through AlterReassignments.
type TopicsChanged struct{ Topics []Topic }

// TopicConfigChanged carries a topic's new overrides (/config/topics/T)
// after a /config/changes notification for it.
type TopicConfigChanged struct {
	Topic   string
	Configs map[string]string
}

// DeletionsRequested carries the children of /admin/delete_topics.
type DeletionsRequested struct{ Topics []string }

// LogDirEvent is one /log_dir_event_notification/<Node> znode.
type LogDirEvent struct {
	Node   string // the child's name, e.g. log_dir_event_0000000007
	Broker int32
}

// LogDirEvents carries the children of /log_dir_event_notification.
type LogDirEvents struct{ Events []LogDirEvent }

// AlterPartition is a leader's AlterPartition (key 56, v0-v3) request; the
// answer is a Reply with the same ID carrying *kmsg.AlterPartitionResponse
// of the request's version.
type AlterPartition struct {
	ID  uint64
	Req *kmsg.AlterPartitionRequest
}

// ControlledShutdown is a stopping broker's ControlledShutdown (key 7,
// v1-v3) request; the answer is a Reply with the same ID carrying
// *kmsg.ControlledShutdownResponse listing the partitions it still leads.
type ControlledShutdown struct {
	ID  uint64
	Req *kmsg.ControlledShutdownRequest
}

// ElectLeaders is an ElectLeaders (key 43, v0-v2) request, preferred
// (type 0) or unclean (type 1); the answer is a Reply with the same ID
// carrying *kmsg.ElectLeadersResponse.
type ElectLeaders struct {
	ID  uint64
	Req *kmsg.ElectLeadersRequest
}

// RebalanceTick is the auto leader rebalance timer
// (leader.imbalance.check.interval.seconds, when
// auto.leader.rebalance.enable).
type RebalanceTick struct{}

// WriteResult is the outcome of WriteBatch Batch: Results and Err as
// ZK.Multi returned them (Err nil: every op applied).
type WriteResult struct {
	Batch   uint64
	Results []OpResult
	Err     error
}

// RequestResult is the outcome of Request Request: the broker's response,
// or Err when none came (connection failed, broker gone, controller
// stopped). Responses are read for LeaderAndIsr (storage errors) and
// StopReplica (topic deletion); others may be reported and are ignored.
type RequestResult struct {
	Request uint64
	Resp    kmsg.Response
	Err     error
}

func (Activate) event()           {}
func (Resign) event()             {}
func (BrokersChanged) event()     {}
func (TopicsChanged) event()      {}
func (TopicConfigChanged) event() {}
func (DeletionsRequested) event() {}
func (LogDirEvents) event()       {}
func (AlterPartition) event()     {}
func (ControlledShutdown) event() {}
func (ElectLeaders) event()       {}
func (RebalanceTick) event()      {}
func (WriteResult) event()        {}
func (RequestResult) event()      {}
