package server

import "github.com/twmb/franz-go/pkg/kmsg"

// apiRange is one advertised API key and its version range.
type apiRange struct {
	key, min, max int16
}

// supportedAPIs is the ApiVersions table: only what is fully implemented.
var supportedAPIs = []apiRange{
	{int16(kmsg.Produce), 3, 9},
	{int16(kmsg.Fetch), 4, 12},
	{int16(kmsg.ListOffsets), 0, 7},
	{int16(kmsg.Metadata), 0, 11},
	{int16(kmsg.ApiVersions), 0, 3},
	{int16(kmsg.CreateTopics), 0, 7},
	{int16(kmsg.DeleteTopics), 0, 6},
	{int16(kmsg.DeleteRecords), 0, 2},
	{int16(kmsg.CreatePartitions), 0, 3},
	{int16(kmsg.DescribeConfigs), 0, 4},
	{int16(kmsg.AlterConfigs), 0, 2},
	{int16(kmsg.IncrementalAlterConfigs), 0, 1},
	{int16(kmsg.FindCoordinator), 0, 4},
	{int16(kmsg.InitProducerID), 0, 4},
	{int16(kmsg.JoinGroup), 0, 7},
	{int16(kmsg.SyncGroup), 0, 5},
	{int16(kmsg.Heartbeat), 0, 4},
	{int16(kmsg.LeaveGroup), 0, 4},
	{int16(kmsg.OffsetCommit), 0, 8},
	{int16(kmsg.OffsetFetch), 1, 8},
	{int16(kmsg.DescribeLogDirs), 0, 4},
	{int16(kmsg.AlterReplicaLogDirs), 0, 2},
	{int16(kmsg.ListGroups), 0, 4},
	{int16(kmsg.DescribeGroups), 0, 5},
	{int16(kmsg.DeleteGroups), 0, 2},
	{int16(kmsg.OffsetDelete), 0, 0},
	{int16(kmsg.SASLHandshake), 0, 1},
	{int16(kmsg.SASLAuthenticate), 0, 2},
	{int16(kmsg.DescribeUserSCRAMCredentials), 0, 0},
	{int16(kmsg.AlterUserSCRAMCredentials), 0, 0},
	{int16(kmsg.DescribeACLs), 0, 3},
	{int16(kmsg.CreateACLs), 0, 3},
	{int16(kmsg.DeleteACLs), 0, 3},
	// Transactions (api_txn.go); AddPartitionsToTxn v4+ is the brokers'.
	{int16(kmsg.AddPartitionsToTxn), 0, 3},
	{int16(kmsg.AddOffsetsToTxn), 0, 3},
	{int16(kmsg.EndTxn), 0, 3},
	{int16(kmsg.WriteTxnMarkers), 0, 1},
	{int16(kmsg.TxnOffsetCommit), 0, 3},
	{int16(kmsg.DescribeTransactions), 0, 0},
	{int16(kmsg.ListTransactions), 0, 0},
	{int16(kmsg.DescribeProducers), 0, 0},
	{int16(kmsg.DescribeClientQuotas), 0, 1},
	{int16(kmsg.AlterClientQuotas), 0, 1},
}

// clusterAPIs are advertised in cluster mode only, besides supportedAPIs:
// the controller's requests to brokers (LeaderAndIsr, UpdateMetadata,
// StopReplica at the versions kmsg v1.15.1 encodes as Kafka does), the
// requests to the controller (ControlledShutdown from v1: v0 has a header
// without client id; AlterPartition v0-1, topics by name; ElectLeaders;
// AlterPartitionReassignments and ListPartitionReassignments v0),
// the followers' OffsetForLeaderEpoch, and DescribeCluster.
var clusterAPIs = []apiRange{
	{int16(kmsg.LeaderAndISR), 0, 5},
	{int16(kmsg.StopReplica), 0, 3},
	{int16(kmsg.UpdateMetadata), 0, 7},
	{int16(kmsg.ControlledShutdown), 1, 3},
	{int16(kmsg.OffsetForLeaderEpoch), 0, 4},
	{int16(kmsg.ElectLeaders), 0, 2},
	{int16(kmsg.AlterPartitionAssignments), 0, 0},
	{int16(kmsg.ListPartitionReassignments), 0, 0},
	{int16(kmsg.AlterPartition), 0, 1},
	{int16(kmsg.DescribeCluster), 0, 0},
}

// versionRange returns the advertised range of key.
func versionRange(key int16) (apiRange, bool) {
	for _, r := range supportedAPIs {
		if r.key == key {
			return r, true
		}
	}
	return apiRange{}, false
}

// versionRange returns the range of key this broker advertises: the
// cluster APIs too in cluster mode.
func (s *Server) versionRange(key int16) (apiRange, bool) {
	if r, ok := versionRange(key); ok || s.cl == nil {
		return r, ok
	}
	for _, r := range clusterAPIs {
		if r.key == key {
			return r, true
		}
	}
	return apiRange{}, false
}

// apiTable is what ApiVersions lists.
func (s *Server) apiTable() []apiRange {
	if s.cl == nil {
		return supportedAPIs
	}
	return append(append([]apiRange(nil), supportedAPIs...), clusterAPIs...)
}
