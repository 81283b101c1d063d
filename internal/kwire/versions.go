package kwire

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions is the highest version strata sends of each inter-broker API
// (why each is where it is: the package doc).
var Versions = map[int16]int16{
	int16(kmsg.LeaderAndISR):         5,
	int16(kmsg.UpdateMetadata):       7,
	int16(kmsg.StopReplica):          3,
	int16(kmsg.ControlledShutdown):   3,
	int16(kmsg.AlterPartition):       1,
	int16(kmsg.Fetch):                12,
	int16(kmsg.OffsetForLeaderEpoch): 3,
	int16(kmsg.ApiVersions):          3,
	int16(kmsg.Metadata):             9,
}

// Negotiate asks the broker for its ApiVersions (v3, falling back to v0 when
// the broker answers UNSUPPORTED_VERSION) and remembers, for every API in
// Versions, the highest version both sides support; Version reads it.
func (c *Conn) Negotiate(ctx context.Context) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "strata"
	req.ClientSoftwareVersion = "1"
	resp, err := c.Request(ctx, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if r.ErrorCode == 35 { // UNSUPPORTED_VERSION: retry at v0, as clients do
		req.Version = 0
		if resp, err = c.Request(ctx, req); err != nil {
			return err
		}
		r = resp.(*kmsg.ApiVersionsResponse)
	}
	if r.ErrorCode != 0 {
		return fmt.Errorf("kwire: ApiVersions: error code %d", r.ErrorCode)
	}
	m := make(map[int16]int16, len(Versions))
	for _, k := range r.ApiKeys {
		pin, ok := Versions[k.ApiKey]
		if !ok || k.MinVersion > pin {
			continue
		}
		m[k.ApiKey] = min(pin, k.MaxVersion)
	}
	c.versions = m
	return nil
}

// Version is the version to send of API key: the negotiated one, or the pin
// before Negotiate; ErrUnsupportedVersion when the broker supports none.
func (c *Conn) Version(key int16) (int16, error) {
	if c.versions == nil {
		if v, ok := Versions[key]; ok {
			return v, nil
		}
	} else if v, ok := c.versions[key]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("%w: api key %d", ErrUnsupportedVersion, key)
}
