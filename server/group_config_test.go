package server

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsPartition: Kafka's abs(String.hashCode) % n, over UTF-16 code
// units, with Utils.abs(MIN_VALUE) = 0.
func TestOffsetsPartition(t *testing.T) {
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"hello", 50, 99162322 % 50},             // "hello".hashCode() = 99162322
		{"polygenelubricants", 50, 0},            // hashCode() = Integer.MIN_VALUE
		{"Aa", 10000, 2112}, {"BB", 10000, 2112}, // a classic collision
		{"\U0001F600", 1 << 30, 55357*31 + 56832}, // surrogate pair D83D DE00
		{"", 50, 0},
		{"my-group", 50, 12}, // hashCode() = -1906497762: abs, then % 50
	} {
		if got := offsetsPartition(c.group, c.n); got != c.want {
			t.Errorf("offsetsPartition(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
}

func TestGroupConfig(t *testing.T) {
	cfg, err := LoadConfig("", []string{"group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=100",
		"group.max.session.timeout.ms=60000", "offsets.topic.num.partitions=3", "offsets.retention.minutes=2",
		"offsets.retention.check.interval.ms=1000", "offset.metadata.max.bytes=10", "group.max.size=2",
		"offsets.topic.segment.bytes=4096"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GroupInitialRebalanceDelayMs != 0 || cfg.GroupMinSessionTimeoutMs != 100 || cfg.GroupMaxSessionTimeoutMs != 60000 ||
		cfg.OffsetsTopicNumPartitions != 3 || cfg.OffsetsRetentionMs != 120000 || cfg.OffsetsRetentionCheckMs != 1000 ||
		cfg.OffsetMetadataMaxBytes != 10 || cfg.GroupMaxSize != 2 || cfg.OffsetsTopicSegmentBytes != 4096 || len(cfg.Unknown) != 0 {
		t.Fatalf("parsed %+v", cfg)
	}
	d := DefaultConfig()
	if d.GroupInitialRebalanceDelayMs != 3000 || d.OffsetsTopicNumPartitions != 50 || d.OffsetsRetentionMs != 10080*60000 {
		t.Fatalf("defaults %+v", d)
	}
	for _, bad := range [][]string{{"offsets.topic.num.partitions=0"}, {"group.min.session.timeout.ms=7000", "group.max.session.timeout.ms=6500"},
		{"group.initial.rebalance.delay.ms=-1"}, {"offsets.retention.minutes=0"}, {"group.max.size=0"}} {
		c, err := LoadConfig("", bad, nil)
		if err == nil {
			err = c.Validate()
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%q: %v, want ErrConfig", bad, err)
		}
	}
}

// TestGroupLimits: session timeouts outside the broker's bounds, metadata
// over offset.metadata.max.bytes, group.max.size, and produce to the
// internal topic.
func TestGroupLimits(t *testing.T) {
	s := startGroupServer(t, t.TempDir(), "offset.metadata.max.bytes=8", "group.max.size=1")
	createTopic(t, s, "errs", 1)
	c := dialRaw(t, s)
	jr := joinReq(3, "g-lim", "")
	jr.SessionTimeoutMillis = 100
	wantCode(t, "session timeout below the minimum", c.roundTrip(jr, 1).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	jr.SessionTimeoutMillis = 3600000
	wantCode(t, "session timeout above the maximum", c.roundTrip(jr, 2).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	if s.groups.get("g-lim") != nil {
		t.Fatal("refused joins left an empty group behind")
	}
	j1 := c.roundTrip(joinReq(3, "g-lim", ""), 3).(*kmsg.JoinGroupResponse) // v3: no MEMBER_ID_REQUIRED step
	wantCode(t, "first JoinGroup v3", j1.ErrorCode, nil)
	c2 := dialRaw(t, s)
	wantCode(t, "join beyond group.max.size", c2.roundTrip(joinReq(3, "g-lim", ""), 1).(*kmsg.JoinGroupResponse).ErrorCode, kerr.GroupMaxSizeReached)
	jbad := joinReq(3, "g-lim", j1.MemberID)
	jbad.ProtocolType = "connect"
	wantCode(t, "join with another protocol type", c2.roundTrip(jbad, 2).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 7, "g-standalone", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "errs"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	md := "123456789"
	rp.Metadata = &md
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	oc.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	wantCode(t, "metadata over 8 bytes", c.roundTrip(oc, 4).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge)
	if s.groups.get("g-standalone") != nil {
		t.Fatal("a standalone commit that stored nothing left its group behind")
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis = 7, 1, 1000
	ptt := kmsg.NewProduceRequestTopic()
	ptt.Topic = OffsetsTopic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte{1}
	ptt.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
	pr.Topics = []kmsg.ProduceRequestTopic{ptt}
	wantCode(t, "produce to __consumer_offsets", c.roundTrip(pr, 5).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTopicException)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey = 2, "g-lim"
	if r := c.roundTrip(fc, 7).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 || r.NodeID != s.cfg.NodeID || r.Port != s.advertised.Port {
		t.Fatalf("FindCoordinator: %+v", r)
	}
	mr := kmsg.NewPtrMetadataRequest()
	mr.Version = 9
	found := false
	for _, tp := range c.roundTrip(mr, 6).(*kmsg.MetadataResponse).Topics {
		if tp.Topic != nil && *tp.Topic == OffsetsTopic {
			found = true
			if !tp.IsInternal || len(tp.Partitions) != 4 {
				t.Fatalf("metadata of %s: internal %v, %d partitions", OffsetsTopic, tp.IsInternal, len(tp.Partitions))
			}
		}
	}
	if !found {
		t.Fatalf("%s not in Metadata", OffsetsTopic)
	}
}

// TestOffsetsExpiry: offsets.retention.minutes expires a standalone
// group's commits by commit time and an Empty consumer group's by the time
// it became Empty; groups with members keep theirs; the tombstones survive a
// restart.
func TestOffsetsExpiry(t *testing.T) {
	dir := t.TempDir()
	s := startGroupServer(t, dir, "offsets.retention.minutes=60")
	createTopic(t, s, "errs", 2)
	c := dialRaw(t, s)
	wantCode(t, "standalone commit", commit(c, "g-old", "", -1, "errs", 0, 5), nil)
	j := join(t, c, "g-live")
	sr := c.roundTrip(syncReq("g-live", j.MemberID, j.Generation, nil), 3).(*kmsg.SyncGroupResponse)
	wantCode(t, "sync", sr.ErrorCode, nil)
	wantCode(t, "member commit", commit(c, "g-live", j.MemberID, j.Generation, "errs", 1, 9), nil)

	if n := s.groups.expireOffsets(time.Now().Add(30 * time.Minute)); n != 0 {
		t.Fatalf("expired %d offsets before the retention time", n)
	}
	if n := s.groups.expireOffsets(time.Now().Add(2 * time.Hour)); n != 1 {
		t.Fatalf("expired %d offsets, want the standalone group's 1 (the live group has a member)", n)
	}
	if s.groups.get("g-old") != nil {
		t.Fatal("g-old still exists with no offsets and no members")
	}
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group, lr.MemberID = 1, "g-live", j.MemberID
	wantCode(t, "leave", c.roundTrip(lr, 4).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
	if n := s.groups.expireOffsets(time.Now().Add(2 * time.Hour)); n != 1 {
		t.Fatalf("expired %d offsets of the emptied group, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = startGroupServer(t, dir)
	if got := fetchCommitted(t, newClient(t, s), "g-old", "errs"); len(got) != 0 {
		t.Fatalf("g-old offsets back after restart: %v", got)
	}
	if got := fetchCommitted(t, newClient(t, s), "g-live", "errs"); len(got) != 0 {
		t.Fatalf("g-live offsets back after restart: %v", got)
	}
}
