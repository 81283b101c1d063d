package server

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// startMemServer starts a broker whose log dirs live on fsys (a MemFS, maybe
// injected); extra are key=value overrides.
func startMemServer(t testing.TB, fsys vfs.FS, dirs string, opts *Options, extra ...string) *Server {
	t.Helper()
	ov := append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dirs}, extra...)
	cfg, err := LoadConfig("", ov, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Logger: testLogger()}
	if opts != nil {
		o = *opts
		if o.Logger == nil {
			o.Logger = testLogger()
		}
	}
	o.FS = fsys
	s, err := Start(cfg, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// partitionIn returns a partition of topic whose log lives under dir.
func partitionIn(t testing.TB, s *Server, topic, dir string) int32 {
	t.Helper()
	for _, p := range s.topics.parts(s.topics.get(topic)) {
		if strings.HasPrefix(p.dir, dir+"/") {
			return p.index
		}
	}
	t.Fatalf("no partition of %s in %s", topic, dir)
	return -1
}

// Kafka's log-dir failure model at the broker: an fsync error in one log dir
// takes that dir offline, its partitions answer produce, fetch and
// list-offsets with KAFKA_STORAGE_ERROR, the other dir's partitions are
// served as before, the failure is reported once (OnLogDirOffline,
// OfflineLogDirs), and only when the last dir fails is AllLogDirsFailed
// closed. Close writes no clean-shutdown marker for an offline dir.
func TestLogDirOfflineStorageError(t *testing.T) {
	mem := vfs.NewMem()
	var failA, failB atomic.Bool
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && ((failA.Load() && strings.HasPrefix(op.Path, "/a/")) || (failB.Load() && strings.HasPrefix(op.Path, "/b/"))) {
			return vfs.ErrInjected
		}
		return nil
	})
	reports := make(chan string, 4)
	s := startMemServer(t, vfs.Inject(mem, inj), "/a,/b", &Options{OnLogDirOffline: func(dir string, err error) {
		if !vfs.IsInjected(err) || !errors.Is(err, segment.ErrOffline) {
			t.Errorf("offline report for %s: %v", dir, err)
		}
		reports <- dir
	}}, "log.flush.interval.messages=1")
	r := newTopic(t, s, "t", 2)
	pa, pb := partitionIn(t, s, "t", "/a"), partitionIn(t, s, "t", "/b")
	produce := func(p int32) int16 {
		t.Helper()
		return r.roundTrip(produceRequest("t", p, makeBatch(t, 2, 10), 7), 2).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	fetch := func(p int32) int16 {
		t.Helper()
		return r.roundTrip(fetchRequest(11, "t", p, 0), 3).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	list := func(p int32) int16 {
		t.Helper()
		req := listOffsetsRequest("t", p, -1)
		req.Version = 5
		return r.roundTrip(req, 4).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
	}
	for _, p := range []int32{pa, pb} {
		if c := produce(p); c != 0 {
			t.Fatalf("produce to partition %d before the failure: code %d", p, c)
		}
	}
	failA.Store(true)
	if c := produce(pa); c != kerr.KafkaStorageError.Code {
		t.Fatalf("produce whose fsync fails: code %d, want KAFKA_STORAGE_ERROR", c)
	}
	if dir := <-reports; dir != "/a" {
		t.Fatalf("offline report for %q, want /a", dir)
	}
	for what, c := range map[string]int16{"produce": produce(pa), "fetch": fetch(pa), "list-offsets": list(pa)} {
		if c != kerr.KafkaStorageError.Code {
			t.Errorf("%s on the offline dir's partition: code %d, want KAFKA_STORAGE_ERROR", what, c)
		}
	}
	for what, c := range map[string]int16{"produce": produce(pb), "fetch": fetch(pb), "list-offsets": list(pb)} {
		if c != 0 {
			t.Errorf("%s on the other dir's partition: code %d", what, c)
		}
	}
	if off := s.OfflineLogDirs(); len(off) != 1 || off["/a"] == nil {
		t.Fatalf("offline log dirs %v", off)
	}
	select {
	case <-s.AllLogDirsFailed():
		t.Fatal("AllLogDirsFailed closed with one dir still online")
	default:
	}
	failB.Store(true)
	if c := produce(pb); c != kerr.KafkaStorageError.Code {
		t.Fatalf("produce whose fsync fails in the second dir: code %d", c)
	}
	select {
	case <-s.AllLogDirsFailed():
	case <-time.After(20 * time.Second):
		t.Fatal("AllLogDirsFailed not closed after every dir failed")
	}
	if len(reports) != 1 || <-reports != "/b" {
		t.Fatal("the second dir was not reported exactly once")
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close with offline log dirs returned no error")
	}
	for _, d := range []string{"/a", "/b"} {
		if _, err := mem.Stat(d + "/" + recovery.CleanShutdownFile); err == nil {
			t.Errorf("clean-shutdown marker written in offline dir %s", d)
		}
	}
}
