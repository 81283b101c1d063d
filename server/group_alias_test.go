package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupKeepsCopiesOfRequestBytes: the connection reuses its request
// buffer, and kmsg leaves []byte fields pointing into it, so the member
// metadata of a JoinGroup and the assignments of a SyncGroup must be copied
// before the next request on the same connection overwrites them.
func TestGroupKeepsCopiesOfRequestBytes(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	createTopic(t, s, "alias", 1)
	const g = "g-alias"
	c := dialRaw(t, s)
	// The connection grows its buffer to the largest frame and reuses it for
	// every smaller one: start with a large request so that every later
	// frame lands in the same buffer.
	bigMetadata(c, 200, 1)
	j := join(t, c, g)
	m := j.MemberID
	assignment := bytes.Repeat([]byte("assignment-bytes "), 8)
	sr := c.roundTrip(syncReq(g, m, j.Generation, map[string][]byte{m: assignment}), 3).(*kmsg.SyncGroupResponse)
	if sr.ErrorCode != 0 {
		t.Fatalf("sync: error %d", sr.ErrorCode)
	}
	// Requests that overwrite the start of the connection's read buffer
	// with other bytes.
	bigMetadata(c, 20, 10)
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version = 3
	dr.Groups = []string{g}
	resp := c.roundTrip(dr, 20).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Members) != 1 {
		t.Fatalf("describe: %+v", resp.Groups)
	}
	dm := resp.Groups[0].Members[0]
	if !bytes.Equal(dm.ProtocolMetadata, consumerMetadata("errs")) {
		t.Errorf("member metadata changed after later requests: %q", dm.ProtocolMetadata)
	}
	if !bytes.Equal(dm.MemberAssignment, assignment) {
		t.Errorf("member assignment changed after later requests: %q", dm.MemberAssignment)
	}
}

// bigMetadata sends a Metadata request for n long topic names, none of
// which exist (nor are created: auto-creation is off for invalid names).
func bigMetadata(c *rawConn, n int, corr int32) {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	for range n {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(strings.Repeat("z", 50) + "!")
		md.Topics = append(md.Topics, mt)
	}
	c.roundTrip(md, corr)
}
