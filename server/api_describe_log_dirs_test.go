package server

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
)

// TestDescribeLogDirs: per log dir its replicas with their sizes and
// offset lag; a topic filter keeps only the partitions asked; a dir that
// failed (an fsync error) answers KAFKA_STORAGE_ERROR with no replicas
// while the other dir answers as before.
func TestDescribeLogDirs(t *testing.T) {
	mem := vfs.NewMem()
	var failA atomic.Bool
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && failA.Load() && strings.HasPrefix(op.Path, "/a/") {
			return vfs.ErrInjected
		}
		return nil
	})
	s := startMemServer(t, vfs.Inject(mem, inj), "/a,/b", nil, "log.flush.interval.messages=1")
	r := newTopic(t, s, "t", 2)
	pa, pb := partitionIn(t, s, "t", "/a"), partitionIn(t, s, "t", "/b")
	for _, p := range []int32{pa, pb} {
		if c := r.roundTrip(produceRequest("t", p, makeBatch(t, 2, 10), 7), 2).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("produce to %d: code %d", p, c)
		}
	}
	describe := func(corr int32, topics []kmsg.DescribeLogDirsRequestTopic) *kmsg.DescribeLogDirsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = 4
		req.Topics = topics
		return r.roundTrip(req, corr).(*kmsg.DescribeLogDirsResponse)
	}
	got := func(resp *kmsg.DescribeLogDirsResponse) string {
		var b strings.Builder
		for _, d := range resp.Dirs {
			b.WriteString(d.Dir)
			if d.ErrorCode != 0 {
				b.WriteString(":" + kerr.ErrorForCode(d.ErrorCode).(*kerr.Error).Message)
			}
			for _, rt := range d.Topics {
				for _, rp := range rt.Partitions {
					if rp.Size <= 0 || rp.OffsetLag != 0 || rp.IsFuture {
						t.Errorf("%s %s-%d: size %d lag %d future %v", d.Dir, rt.Topic, rp.Partition, rp.Size, rp.OffsetLag, rp.IsFuture)
					}
					b.WriteString(" " + rt.Topic + "-" + string(rune('0'+rp.Partition)))
				}
			}
			b.WriteString("; ")
		}
		return b.String()
	}
	name := func(p int32) string { return "t-" + string(rune('0'+p)) }
	if s := got(describe(3, nil)); s != "/a "+name(pa)+"; /b "+name(pb)+"; " {
		t.Fatalf("all: %q", s)
	}
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{pb}
	if s := got(describe(4, []kmsg.DescribeLogDirsRequestTopic{rt})); s != "/a; /b "+name(pb)+"; " {
		t.Fatalf("filtered: %q", s)
	}
	failA.Store(true)
	r.roundTrip(produceRequest("t", pa, makeBatch(t, 2, 10), 7), 5)
	waitFor(t, 20*time.Second, "log dir /a offline", func() bool { return len(s.OfflineLogDirs()) == 1 })
	if s := got(describe(6, nil)); s != "/a:"+kerr.KafkaStorageError.Message+"; /b "+name(pb)+"; " {
		t.Fatalf("after the failure: %q", s)
	}
}
