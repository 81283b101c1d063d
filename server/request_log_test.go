package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// lockedBuffer is a log destination tests read while the broker writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines parses every line written so far as one JSON object, failing the
// test on a line that is not one.
func (l *lockedBuffer) lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	text := l.b.String()
	l.mu.Unlock()
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("log line is not one JSON object: %v\n%s", err, ln)
		}
		out = append(out, m)
	}
	return out
}

// withMsg are the lines whose msg is msg.
func withMsg(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// jsonServer starts a broker logging JSON at info level into the returned
// buffer.
func jsonServer(t testing.TB, extra ...string) (*Server, *lockedBuffer) {
	t.Helper()
	buf := &lockedBuffer{}
	ov := append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + t.TempDir()}, extra...)
	cfg, err := LoadConfig("", ov, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(cfg, &Options{Logger: slog.New(slog.NewJSONHandler(buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, buf
}

// TestSlowRequestLogEveryRequest: with strata.request.slow.ms=0 every
// request gets a slow-request line naming its API, version, client id and
// address and partition count, with the time split.
func TestSlowRequestLogEveryRequest(t *testing.T) {
	s, buf := jsonServer(t, "strata.request.slow.ms=0", "strata.metrics.listener=")
	r := newTopic(t, s, "slowlog", 2)
	req := produceRequest("slowlog", 0, makeBatch(t, 3, 20), 9)
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition, p1.Records = 1, makeBatch(t, 2, 20)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	r.roundTrip(req, 1)
	f := fetchRequest(12, "slowlog", 0, 0)
	f.MaxWaitMillis = 0
	r.roundTrip(f, 2)
	r.roundTrip(kmsg.NewPtrApiVersionsRequest(), 3) // the fetch's line is written once this is answered
	slow := withMsg(buf.lines(t), "slow request")
	want := map[string]float64{"CreateTopics": 0, "Produce": 2, "Fetch": 1}
	seen := map[string]bool{}
	for _, l := range slow {
		api, _ := l["api"].(string)
		parts, ok := want[api]
		if !ok {
			continue
		}
		seen[api] = true
		if l["partitions"] != parts {
			t.Errorf("%s: partitions %v, want %v", api, l["partitions"], parts)
		}
		if l["client_id"] != "raw" || l["client_address"] != r.nc.LocalAddr().String() {
			t.Errorf("%s: client %v at %v, want raw at %s", api, l["client_id"], l["client_address"], r.nc.LocalAddr())
		}
		var sum float64
		for _, k := range []string{"queue_ms", "local_ms", "remote_ms", "throttle_ms", "send_ms"} {
			v, ok := l[k].(float64)
			if !ok || v < 0 {
				t.Errorf("%s: %s = %v", api, k, l[k])
			}
			sum += v
		}
		if total, _ := l["total_ms"].(float64); total < sum-0.01 || total > sum+0.01 {
			t.Errorf("%s: total_ms %v is not the sum of the split %v", api, total, sum)
		}
		if _, ok := l["version"].(float64); !ok {
			t.Errorf("%s: no version: %v", api, l)
		}
	}
	for api := range want {
		if !seen[api] {
			t.Errorf("no slow-request line for %s in %v", api, slow)
		}
	}
}

// TestSlowRequestLogQueued: a produce kept waiting for request memory
// (queued.max.request.bytes held by a request whose body has not arrived)
// longer than strata.request.slow.ms is logged with its queue time; the
// requests that were not slow are not.
func TestSlowRequestLogQueued(t *testing.T) {
	const limit = 2000
	s, buf := jsonServer(t, "strata.request.slow.ms=300", "socket.request.max.bytes=2000", "queued.max.request.bytes=2000")
	newTopic(t, s, "queued", 1)
	// A: an ApiVersions v0 request of exactly limit bytes whose last byte
	// is held back: its reservation uses up the pool.
	a := dialRaw(t, s)
	cid := strings.Repeat("a", limit-10)
	frame := binary.BigEndian.AppendUint32(nil, limit)
	frame = binary.BigEndian.AppendUint16(frame, uint16(kmsg.ApiVersions))
	frame = binary.BigEndian.AppendUint16(frame, 0)
	frame = binary.BigEndian.AppendUint32(frame, 1)
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(cid)))
	frame = append(frame, cid...)
	a.write(frame[:len(frame)-1])
	waitFor(t, 10*time.Second, "the slow produce's line", func() bool { return s.reqMem.inUse() == limit })
	// B: a produce, which waits for memory.
	b := dialRaw(t, s)
	b.send(produceRequest("queued", 0, makeBatch(t, 2, 20), 9), 5)
	waitFor(t, 10*time.Second, "the slow produce's line", func() bool { return s.reqMem.waiting.Load() == 1 })
	held := time.Now() // B has waited since before now
	for time.Since(held) < 400*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	a.write(frame[len(frame)-1:])
	if _, err := a.readFrame(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.readFrame(); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	waitFor(t, 10*time.Second, "the slow produce's line", func() bool {
		for _, l := range withMsg(buf.lines(t), "slow request") {
			if l["api"] == "Produce" {
				line = l
				return true
			}
		}
		return false
	})
	if q, _ := line["queue_ms"].(float64); q < 400 {
		t.Errorf("queue_ms %v, want at least 400: %v", line["queue_ms"], line)
	}
	if line["client_address"] != b.nc.LocalAddr().String() || line["partitions"] != float64(1) || line["version"] != float64(9) {
		t.Errorf("line %v", line)
	}
}

// TestSlowRequestLogFetchWaitNotSlow: a consumer fetch that long-polls
// past the threshold is not slow: the wait is the client's max wait, not
// the broker's slowness (remote time is left out for fetches).
func TestSlowRequestLogFetchWaitNotSlow(t *testing.T) {
	s, buf := jsonServer(t, "strata.request.slow.ms=500")
	r := newTopic(t, s, "idle", 1)
	f := fetchRequest(12, "idle", 0, 0)
	f.MaxWaitMillis, f.MinBytes = 1500, 1
	began := time.Now()
	r.roundTrip(f, 3)
	if waited := time.Since(began); waited < time.Second {
		t.Fatalf("fetch answered after %v, before its max wait", waited)
	}
	// The connection serves in order: once this is answered the fetch's
	// line, had there been one, is written.
	r.roundTrip(kmsg.NewPtrApiVersionsRequest(), 4)
	for _, l := range withMsg(buf.lines(t), "slow request") {
		if l["api"] == "Fetch" {
			t.Fatalf("idle long poll logged as slow: %v", l)
		}
	}
}

// TestSlowRequestLogNoAllocs: timing requests for the slow-request log
// adds no allocation to a produce or a fetch below the threshold, with
// metrics off (the log alone times requests) and on.
func TestSlowRequestLogNoAllocs(t *testing.T) {
	allocs := func(timed bool, overrides ...string) (produce, fetch float64) {
		s := startServer(t, t.TempDir(), overrides...)
		newTopic(t, s, "na", 1)
		c := &conn{s: s, nc: discardConn{}, log: s.log}
		frame := produceFrame(t, "na", 10, 100)
		work := make([]byte, len(frame))
		produceOnce := func() {
			copy(work, frame)
			if err := c.handle(work); err != nil {
				t.Fatal(err)
			}
		}
		fetch1 := fetchFrame(t, "na")
		fetchOnce := func() {
			if err := c.handle(fetch1); err != nil {
				t.Fatal(err)
			}
		}
		produceOnce()
		fetchOnce()
		if s.timed != timed {
			t.Fatalf("%v: timed %v, want %v", overrides, s.timed, timed)
		}
		return testing.AllocsPerRun(200, produceOnce), testing.AllocsPerRun(200, fetchOnce)
	}
	baseP, baseF := allocs(false, "strata.metrics.listener=", "strata.request.slow.ms=-1")
	for _, ov := range [][]string{
		{"strata.metrics.listener=", "strata.request.slow.ms=3600000"},
		{"strata.metrics.listener=127.0.0.1:0", "strata.request.slow.ms=3600000"},
	} {
		p, f := allocs(true, ov...)
		t.Logf("%v: produce %v (untimed %v), fetch %v (untimed %v)", ov, p, baseP, f, baseF)
		if p > baseP || f > baseF {
			t.Errorf("%v adds allocations: produce %v -> %v, fetch %v -> %v", ov, baseP, p, baseF, f)
		}
	}
}

// TestLogSummary: the broker logs a one-line summary each
// strata.log.summary.interval.ms with its rates, partitions and groups.
func TestLogSummary(t *testing.T) {
	s, buf := jsonServer(t, "strata.log.summary.interval.ms=50", "strata.metrics.listener=127.0.0.1:0")
	r := newTopic(t, s, "summed", 3)
	r.roundTrip(produceRequest("summed", 0, makeBatch(t, 5, 20), 9), 1)
	var line map[string]any
	waitFor(t, 10*time.Second, "a summary line with the produce's rate", func() bool {
		for _, l := range withMsg(buf.lines(t), "broker summary") {
			if v, _ := l["messages_in_per_s"].(float64); v > 0 {
				line = l
				return true
			}
		}
		return false
	})
	if line["partitions"] != float64(3) || line["leaders"] != float64(3) || line["under_replicated"] != float64(0) || line["groups"] != float64(0) {
		t.Errorf("summary %v", line)
	}
	for _, k := range []string{"bytes_in_per_s", "bytes_out_per_s", "requests_per_s", "produce_p99_ms", "fetch_p99_ms", "isr_shrinks", "offline", "node_id"} {
		if _, ok := line[k]; !ok {
			t.Errorf("summary lacks %s: %v", k, line)
		}
	}
	if v, _ := line["bytes_in_per_s"].(float64); v <= 0 {
		t.Errorf("bytes_in_per_s %v", line["bytes_in_per_s"])
	}
	if v, _ := line["produce_p99_ms"].(float64); v <= 0 {
		t.Errorf("produce_p99_ms %v", line["produce_p99_ms"])
	}
}

// TestSlowRequestLogThrottle: a produce over the client's
// producer_byte_rate is throttled (KIP-219: the response's throttle_time_ms,
// then the connection is muted); its slow-request line's throttle_ms is that
// throttle time, and an unthrottled request's is 0.
func TestSlowRequestLogThrottle(t *testing.T) {
	s, buf := jsonServer(t, "strata.request.slow.ms=0", "strata.metrics.listener=",
		"quota.window.num=3", "quota.window.size.seconds=1")
	r := newTopic(t, s, "throttled", 1)
	setQuota(t, s, clientEntity("raw"), quotaProducerByteRate, 64<<10, false)
	batch := makeBatch(t, 10, 20<<10) // 200 KiB: over 64 KiB/s at once
	var corr, throttle int32
	for corr = 10; corr < 30; corr++ {
		resp := r.roundTrip(produceRequest("throttled", 0, batch, 9), corr).(*kmsg.ProduceResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("produce: code %d", c)
		}
		if throttle = resp.ThrottleMillis; throttle > 0 {
			break
		}
	}
	if throttle == 0 {
		t.Fatal("no produce was throttled")
	}
	r.roundTrip(kmsg.NewPtrApiVersionsRequest(), 99) // read after the throttle: the produce's line is written
	lineFor := func(corr int32) (line map[string]any) {
		// a line is written once its response is sent: wait for it
		waitFor(t, 10*time.Second, fmt.Sprintf("the slow-request line of correlation id %d", corr), func() bool {
			for _, l := range withMsg(buf.lines(t), "slow request") {
				if l["correlation_id"] == float64(corr) && l["client_id"] == "raw" {
					line = l
					return true
				}
			}
			return false
		})
		return line
	}
	if l := lineFor(corr); l["api"] != "Produce" || l["throttle_ms"] != float64(throttle) {
		t.Errorf("throttled produce (throttle_time_ms %d): line %v", throttle, l)
	}
	if l := lineFor(99); l["throttle_ms"] != float64(0) {
		t.Errorf("ApiVersions (exempt, not throttled): line %v", l)
	}
}
