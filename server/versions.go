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
