package server

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

// alterQuotaEntry is one AlterClientQuotas entry: entity (type, name; a
// nil name is the default) and ops.
func alterQuotaEntry(entity []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity, e.Ops = entity, ops
	return e
}

func qent(typ string, name *string) kmsg.AlterClientQuotasRequestEntryEntity {
	e := kmsg.NewAlterClientQuotasRequestEntryEntity()
	e.Type, e.Name = typ, name
	return e
}

func qop(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	o := kmsg.NewAlterClientQuotasRequestEntryOp()
	o.Key, o.Value = key, v
	return o
}

func describeAllQuotas(t *testing.T, r *rawConn) *kmsg.DescribeClientQuotasResponse {
	t.Helper()
	d := kmsg.NewPtrDescribeClientQuotasRequest()
	d.Version = 1
	resp := r.roundTrip(d, 99).(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("describe all: code %d", resp.ErrorCode)
	}
	return resp
}

// TestAlterClientQuotasBadInput: each malformed entry is refused with
// INVALID_REQUEST and nothing of it is stored; a good entry in the same
// request is stored; validate_only stores nothing.
func TestAlterClientQuotasBadInput(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	user, client := qent("user", strp("alice")), qent("client-id", strp("c1"))
	rm := qop(quotaProducerByteRate, 0)
	rm.Remove = true
	bad := []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
	}{
		{"negative", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop(quotaProducerByteRate, -1))},
		{"zero", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop(quotaConsumerByteRate, 0))},
		{"NaN", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop(quotaRequestPercentage, math.NaN()))},
		{"infinite", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop(quotaRequestPercentage, math.Inf(1)))},
		{"fractional byte rate", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop(quotaProducerByteRate, 1.5))},
		{"unknown key", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop("producer_bytes_rate", 100))},
		{"SCRAM key", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop("SCRAM-SHA-256", 100))},
		{"key set and removed", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user}, qop(quotaProducerByteRate, 100), rm)},
		{"empty entity", alterQuotaEntry(nil, qop(quotaProducerByteRate, 100))},
		{"user twice", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user, qent("user", strp("bob"))}, qop(quotaProducerByteRate, 100))},
		{"unknown type", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{qent("group", strp("g"))}, qop(quotaProducerByteRate, 100))},
		{"ip", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{qent("ip", strp("10.0.0.1"))}, qop("connection_creation_rate", 10))},
		{"empty name", alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{qent("client-id", strp(""))}, qop(quotaProducerByteRate, 100))},
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version = 1
	for _, b := range bad {
		req.Entries = append(req.Entries, b.entry)
	}
	good := alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{user, client}, qop(quotaProducerByteRate, 2048), qop(quotaRequestPercentage, 12.5))
	req.Entries = append(req.Entries, good)
	resp := r.roundTrip(req, 1).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != len(req.Entries) {
		t.Fatalf("%d results for %d entries", len(resp.Entries), len(req.Entries))
	}
	for i, b := range bad {
		if e := resp.Entries[i]; e.ErrorCode != kerr.InvalidRequest.Code || e.ErrorMessage == nil {
			t.Errorf("%s: code %d, want INVALID_REQUEST with a message", b.name, e.ErrorCode)
		}
	}
	if e := resp.Entries[len(bad)]; e.ErrorCode != 0 {
		t.Fatalf("good entry: code %d %v", e.ErrorCode, e.ErrorMessage)
	}
	d := describeAllQuotas(t, r)
	if len(d.Entries) != 1 || len(d.Entries[0].Values) != 2 || d.Entries[0].Values[0].Key != quotaProducerByteRate || d.Entries[0].Values[0].Value != 2048 ||
		d.Entries[0].Values[1].Value != 12.5 {
		t.Fatalf("stored after the bad entries: %+v", d.Entries)
	}
	// validate_only: checked, not stored.
	v := kmsg.NewPtrAlterClientQuotasRequest()
	v.ValidateOnly = true
	v.Entries = append(v.Entries, alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{qent("client-id", nil)}, qop(quotaConsumerByteRate, 100)))
	if c := r.roundTrip(v, 2).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode; c != 0 {
		t.Fatalf("validate_only: code %d", c)
	}
	if d := describeAllQuotas(t, r); len(d.Entries) != 1 {
		t.Fatalf("validate_only stored: %+v", d.Entries)
	}
	// The quotas file holds the good entity under Kafka's path.
	b, err := os.ReadFile(filepath.Join(s.cfg.LogDirs[0], QuotasFile))
	if err != nil || !json.Valid(b) || !strings.Contains(string(b), `"users/alice/clients/c1"`) || !strings.Contains(string(b), `"producer_byte_rate": "2048"`) {
		t.Fatalf("quotas file: %s %v", b, err)
	}
}

// TestDescribeClientQuotasFilters: exact, default and any matches, strict
// or not, as Kafka filters; a malformed filter is INVALID_REQUEST.
func TestDescribeClientQuotasFilters(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := dialRaw(t, s)
	req := kmsg.NewPtrAlterClientQuotasRequest()
	for _, e := range [][]kmsg.AlterClientQuotasRequestEntryEntity{
		{qent("user", strp("alice"))},
		{qent("user", nil)},
		{qent("user", strp("alice")), qent("client-id", strp("c1"))},
		{qent("client-id", strp("c1"))},
		{qent("client-id", nil)},
	} {
		req.Entries = append(req.Entries, alterQuotaEntry(e, qop(quotaConsumerByteRate, 1000)))
	}
	for _, e := range r.roundTrip(req, 1).(*kmsg.AlterClientQuotasResponse).Entries {
		if e.ErrorCode != 0 {
			t.Fatalf("alter: %d", e.ErrorCode)
		}
	}
	comp := func(typ string, mt int8, match *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(mt), match
		return c
	}
	for i, c := range []struct {
		comps  []kmsg.DescribeClientQuotasRequestComponent
		strict bool
		want   int // entries
		code   int16
	}{
		{nil, false, 5, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, strp("alice"))}, false, 2, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, strp("alice"))}, true, 1, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, nil)}, false, 1, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil)}, true, 2, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 2, nil)}, false, 3, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("client-id", 0, strp("c1"))}, true, 1, 0},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}, false, 0, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("user", 1, nil)}, false, 0, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("topic", 2, nil)}, false, 0, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 7, nil)}, false, 0, kerr.InvalidRequest.Code},
	} {
		d := kmsg.NewPtrDescribeClientQuotasRequest()
		d.Components, d.Strict = c.comps, c.strict
		resp := r.roundTrip(d, int32(10+i)).(*kmsg.DescribeClientQuotasResponse)
		if resp.ErrorCode != c.code || len(resp.Entries) != c.want {
			t.Errorf("filter %d: code %d, %d entries; want %d, %d", i, resp.ErrorCode, len(resp.Entries), c.code, c.want)
		}
	}
}

// produceFrameFor is a Produce request (version v, acks -1) of n bytes of
// record values to partition 0 of topic.
func produceReqFor(t *testing.T, topic string, v int16, records, size int) *kmsg.ProduceRequest {
	req := produceRequest(topic, 0, makeBatch(t, records, size), v)
	return req
}

// TestQuotaMutesConnection: a produce over its quota is answered at once
// with the throttle time (appended all the same), and the connection reads
// nothing more until that time has passed (KIP-219); a Produce v5 (before
// KIP-219) is instead answered after the throttle time. Removing the quota
// at runtime ends the throttling.
func TestQuotaMutesConnection(t *testing.T) {
	s := quotaServer(t)
	newTopic(t, s, "mute", 1)
	setQuota(t, s, clientEntity("raw"), quotaProducerByteRate, 20000, false)
	r := dialRaw(t, s)
	// 60 KB over a 2 s span: 30 KB/s, 1.5x the quota: about 1 s of throttle.
	began := time.Now()
	resp := r.roundTrip(produceReqFor(t, "mute", 9, 60, 1000), 1).(*kmsg.ProduceResponse)
	answered := time.Since(began)
	throttle := time.Duration(resp.ThrottleMillis) * time.Millisecond
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("throttled produce not appended: code %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	if throttle < 500*time.Millisecond {
		t.Fatalf("throttle %v, want about 1 s", throttle)
	}
	if answered >= throttle {
		t.Fatalf("answered after %v, not at once (throttle %v)", answered, throttle)
	}
	sent := time.Now()
	r.roundTrip(kmsg.NewPtrApiVersionsRequest(), 2)
	if waited := time.Since(began); waited < throttle {
		t.Fatalf("next request answered %v after the throttled one (sent %v after), within the %v mute", waited, sent.Sub(began), throttle)
	}
	// Before KIP-219: the answer itself is held back.
	began = time.Now()
	old := r.roundTrip(produceReqFor(t, "mute", 5, 60, 1000), 3).(*kmsg.ProduceResponse)
	if old.ThrottleMillis <= 0 {
		t.Fatal("Produce v5 over quota: no throttle time")
	}
	if waited := time.Since(began); waited < time.Duration(old.ThrottleMillis)*time.Millisecond {
		t.Fatalf("Produce v5 answered after %v, before its %d ms throttle", waited, old.ThrottleMillis)
	}
	// The quota removed at runtime: no more throttle.
	setQuota(t, s, clientEntity("raw"), quotaProducerByteRate, 0, true)
	if resp := r.roundTrip(produceReqFor(t, "mute", 9, 60, 1000), 4).(*kmsg.ProduceResponse); resp.ThrottleMillis != 0 {
		t.Fatalf("after removing the quota: throttle %d ms", resp.ThrottleMillis)
	}
}

// TestRequestQuota: a client with request_percentage=0.01 (0.1 ms of
// serving per second) sending Metadata requests back to back is soon
// throttled, at most one window at a time, and muted; ApiVersions is
// exempt.
func TestRequestQuota(t *testing.T) {
	s := quotaServer(t)
	r := newTopic(t, s, "rq", 4)
	setQuota(t, s, clientEntity("raw"), quotaRequestPercentage, 0.01, false)
	deadline := time.Now().Add(20 * time.Second)
	for i := int32(1); ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d Metadata requests, none throttled", i)
		}
		if v := r.roundTrip(kmsg.NewPtrApiVersionsRequest(), i).(*kmsg.ApiVersionsResponse); v.ThrottleMillis != 0 {
			t.Fatalf("ApiVersions (exempt) throttled %d ms", v.ThrottleMillis)
		}
		m := kmsg.NewPtrMetadataRequest()
		m.Version = 11
		began := time.Now()
		resp := r.roundTrip(m, i).(*kmsg.MetadataResponse)
		if resp.ThrottleMillis < 50 {
			continue
		}
		if resp.ThrottleMillis > 1000 {
			t.Fatalf("request throttle %d ms, over the 1 s window cap", resp.ThrottleMillis)
		}
		r.roundTrip(kmsg.NewPtrApiVersionsRequest(), i+1)
		if waited := time.Since(began); waited < time.Duration(resp.ThrottleMillis)*time.Millisecond {
			t.Fatalf("muted %v, less than the %d ms throttle", waited, resp.ThrottleMillis)
		}
		t.Logf("throttled after %d Metadata requests: %d ms", i, resp.ThrottleMillis)
		return
	}
}

// TestQuotasPersistAndBadFile: quotas survive a restart from the data
// dir; an unreadable quotas file stops the broker from starting (it would
// be overwritten by the next change).
func TestQuotasPersistAndBadFile(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	setQuota(t, s, clientEntity("keep"), quotaConsumerByteRate, 4096, false)
	s.Close()
	s = startServer(t, dir)
	if b, _, ok := s.quotas.q.resolve(quotaFetch, "ANONYMOUS", "keep"); !ok || b != 4096 {
		t.Fatalf("after restart: %v %v", b, ok)
	}
	s.Close()
	for _, junk := range []string{`{"version":1,"entities":{"users/a/b":{}}}`, `{"version":2}`, `{"version":1,"entities":{"clients/c":{"producer_byte_rate":"fast"}}}`, `not json`} {
		if err := os.WriteFile(filepath.Join(dir, QuotasFile), []byte(junk), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := Start(cfg, &Options{Logger: testLogger()}); !errors.Is(err, ErrDataDir) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("quotas file %s: start error %v, want ErrDataDir", junk, err)
		}
	}
}

// TestClientQuotasACL: with the authorizer on, a principal without
// DescribeConfigs / AlterConfigs on the cluster is refused
// CLUSTER_AUTHORIZATION_FAILED and nothing is stored; once granted, it
// alters and describes. A user quota throttles that user's clients only.
func TestClientQuotasACL(t *testing.T) {
	s := startACL(t, t.TempDir(), "quota.window.num=3")
	admin := userClient(t, s, "admin")
	bob := userClient(t, s, "bob")
	b := bob.Broker(int(s.NodeID()))
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	alter.Entries = append(alter.Entries, alterQuotaEntry([]kmsg.AlterClientQuotasRequestEntryEntity{qent("user", strp("bob"))}, qop(quotaProducerByteRate, 1000)))
	if e := do(t, b, alter).(*kmsg.AlterClientQuotasResponse).Entries[0]; e.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob's AlterClientQuotas: code %d", e.ErrorCode)
	}
	if c := do(t, b, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse).ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob's DescribeClientQuotas: code %d", c)
	}
	if len(s.quotas.q.snapshot()) != 0 {
		t.Fatal("bob stored a quota")
	}
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationDescribeConfigs} {
		if c := createACL(t, admin, kmsg.ACLResourceTypeCluster, "kafka-cluster", lit, "User:bob", op, kmsg.ACLPermissionTypeAllow); c != 0 {
			t.Fatal(c)
		}
	}
	if e := do(t, b, alter).(*kmsg.AlterClientQuotasResponse).Entries[0]; e.ErrorCode != 0 {
		t.Fatalf("bob's AlterClientQuotas with AlterConfigs: code %d", e.ErrorCode)
	}
	if d := do(t, b, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse); d.ErrorCode != 0 || len(d.Entries) != 1 {
		t.Fatalf("bob's DescribeClientQuotas with DescribeConfigs: %+v", d)
	}
	// users/bob: bob's produce is throttled, admin's is not.
	if c := createACL(t, admin, kmsg.ACLResourceTypeTopic, "uq", lit, "User:bob", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow); c != 0 {
		t.Fatal(c)
	}
	if err := admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "uq", Value: make([]byte, 8000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.quotas.q.resolve(quotaProduce, "admin", ""); ok {
		t.Fatal("admin has a produce quota")
	}
	var h throttleHook
	bobP := userClient(t, s, "bob", kgo.WithHooks(&h), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < 3 && h.n.Load() == 0; i++ {
		if err := bobP.ProduceSync(testCtx(t), &kgo.Record{Topic: "uq", Value: randomBytes(8000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if h.n.Load() == 0 {
		t.Fatal("bob's 24 KB at a 1000 B/s user quota: never throttled")
	}
}

// TestRequestQuotaLeavesRebalanceWaitOut: a JoinGroup parked 1.5 s for the
// initial rebalance delay is not serving time: a consumer under a 5%
// request_percentage quota joins without being throttled.
func TestRequestQuotaLeavesRebalanceWaitOut(t *testing.T) {
	s := startServer(t, t.TempDir(), "group.initial.rebalance.delay.ms=1500")
	setQuota(t, s, clientEntity("grp"), quotaRequestPercentage, 5, false)
	p := newClient(t, s, kgo.DefaultProduceTopic("gq"), kgo.AllowAutoTopicCreation())
	if err := p.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The offsets topic is made first (its creation is the first
	// FindCoordinator's serving time), by another client.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "gq-group"
	if resp, err := fc.RequestWith(testCtx(t), p); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("find coordinator: %v %+v", err, resp)
	}
	var h throttleHook
	cl := newClient(t, s, kgo.ClientID("grp"), kgo.ConsumerGroup("gq-group"), kgo.ConsumeTopics("gq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&h))
	began := time.Now()
	if fs := cl.PollRecords(testCtx(t), 1); len(fs.Records()) != 1 {
		t.Fatalf("consumed %v %v", fs.Records(), fs.Errors())
	}
	t.Logf("joined and consumed in %v, %d throttles", time.Since(began), h.n.Load())
	if n := h.n.Load(); n != 0 {
		t.Fatalf("the consumer was throttled %d times (%v): the parked JoinGroup counted as serving time", n, time.Duration(h.total.Load()))
	}
}
