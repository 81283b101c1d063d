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
	{int16(kmsg.JoinGroup), 0, 7},
	{int16(kmsg.SyncGroup), 0, 5},
	{int16(kmsg.Heartbeat), 0, 4},
	{int16(kmsg.LeaveGroup), 0, 4},
	{int16(kmsg.OffsetCommit), 0, 8},
	{int16(kmsg.OffsetFetch), 1, 8},
	{int16(kmsg.ListGroups), 0, 4},
	{int16(kmsg.DescribeGroups), 0, 5},
	{int16(kmsg.DeleteGroups), 0, 2},
	{int16(kmsg.OffsetDelete), 0, 0},
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
