package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// bombBatch puts data, a records section already compressed with c,
// behind a valid producer header claiming one record.
func bombBatch(t testing.TB, c record.Codec, data []byte) []byte {
	t.Helper()
	hdr := makeBatch(t, 1, 1)
	b := append(append([]byte(nil), hdr[:record.BatchHeaderSize]...), data...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint16(b[21:], uint16(c))
	binary.BigEndian.PutUint32(b[23:], 0) // last offset delta
	binary.BigEndian.PutUint32(b[57:], 1) // one record
	record.Batch(b).UpdateCRC()
	return b
}

func mustCompress(t testing.TB, c record.Codec, src []byte) []byte {
	t.Helper()
	out, err := record.Compress(c, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// zstdRLEFrame is one zstd frame declaring window (a power of two) made of
// n RLE blocks of 128 KiB of zeros: n*128 KiB from 4n+6 bytes.
func zstdRLEFrame(window, n int) []byte {
	k := 0
	for 1<<k < window {
		k++
	}
	f := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	f = append(f, 0, byte((k-10)<<3))
	for i := range n {
		h := uint32(128<<10)<<3 | 1<<1 // RLE block
		if i == n-1 {
			h |= 1 // last
		}
		f = append(f, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return f
}

// bigRecordStream is a gzip stream (concatenated members) of one record
// whose value is mib MiB of zeros: valid, and mib MiB from ~mib KB.
func bigRecordStream(t testing.TB, mib int) []byte {
	t.Helper()
	v := mib << 20
	n := binary.PutVarint(make([]byte, 10), int64(v))
	body := 4 + n + v + 1 // attributes, ts, offset, key -1, value length, value, headers
	pre := binary.AppendVarint(nil, int64(body))
	pre = append(pre, 0, 0, 0)
	pre = binary.AppendVarint(pre, -1)
	pre = binary.AppendVarint(pre, int64(v))
	out := mustCompress(t, record.CodecGzip, pre)
	zero := mustCompress(t, record.CodecGzip, make([]byte, 1<<20))
	for range mib {
		out = append(out, zero...)
	}
	return append(out, mustCompress(t, record.CodecGzip, []byte{0})...)
}

// heapPeak samples the heap every millisecond until end: objects is every
// allocated object, garbage not yet swept included (what the process
// holds); live is what the last garbage collection found reachable.
type heapPeak struct {
	objects, live atomic.Uint64
	stop, done    chan struct{}
}

func watchHeap() *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	go func() {
		defer close(h.done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > h.objects.Load() {
				h.objects.Store(v)
			}
			if v := s[1].Value.Uint64(); v > h.live.Load() {
				h.live.Store(v)
			}
			select {
			case <-h.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return h
}

// end stops sampling and returns the peaks.
func (h *heapPeak) end() (objects, live uint64) {
	close(h.stop)
	<-h.done
	return h.objects.Load(), h.live.Load()
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestDecompressionBombs sends real decompression bombs through the broker,
// four connections at a time, while another client produces plain batches:
// gzip (250 KB of concatenated members, 250 MiB of zeros), zstd (RLE
// frames, 256 MiB), lz4 (64 KiB blocks, 64 MiB), snappy (a raw block of
// 20 MiB, the most 1 MB of snappy can hold) and a valid gzip record whose
// value is 48 MiB of zeros, over the broker's cap of 32 MiB (lowered for
// the test from 256 MiB). Each is refused with CORRUPT_MESSAGE or
// INVALID_RECORD as Kafka would; a 16 MiB one under the cap is accepted, as
// Kafka accepts it; the peak heap (runtime/metrics, garbage included) stays
// within the decompression budget plus 24 MiB of where it started (the
// whole-batch validation held up to 256 MiB per connection: 2.37 GB for four
// bombs); the other client's produces all succeed. Then zstd frames
// declaring the largest window allowed (128 MiB) take turns in the budget
// and reuse one decoder: the heap holds one such window, not four.
//
// The heap is the process's: it runs in a process of its own (the test
// binary run again for this test alone), so what it measures is this
// broker and these clients, not what the tests before it (shuffled, run
// -count times) left running and allocating in the same heap, and the
// garbage allowance (GOGC=100: as much again as the heap live at the last
// collection) is computed from this test's heap, not theirs.
func TestDecompressionBombs(t *testing.T) {
	if os.Getenv(bombsAloneEnv) == "" {
		runAlone(t, "TestDecompressionBombs", bombsAloneEnv)
		return
	}
	s := startServer(t, t.TempDir())
	s.maxDecompressed.Store(32 << 20)
	newTopic(t, s, "bomb", 1)
	newTopic(t, s, "plain", 1)

	zstdZeros := bytes.Repeat(mustCompressZstdFrame(t, 1<<20), 256)
	lz4Zeros := mustCompress(t, record.CodecLZ4, make([]byte, 64<<20))
	snappyZeros := snappy.Encode(nil, make([]byte, 20<<20))
	gzipZeros := bytes.Repeat(mustCompress(t, record.CodecGzip, make([]byte, 1<<20)), 250)
	bombs := []struct {
		name  string
		batch []byte
		codes []int16 // acceptable answers
	}{
		{"gzip zeros", bombBatch(t, record.CodecGzip, gzipZeros), []int16{kerr.InvalidRecord.Code, kerr.CorruptMessage.Code}},
		{"zstd zeros", bombBatch(t, record.CodecZstd, zstdZeros), []int16{kerr.InvalidRecord.Code, kerr.CorruptMessage.Code}},
		{"lz4 zeros", bombBatch(t, record.CodecLZ4, lz4Zeros), []int16{kerr.InvalidRecord.Code, kerr.CorruptMessage.Code}},
		{"snappy zeros", bombBatch(t, record.CodecSnappy, snappyZeros), []int16{kerr.InvalidRecord.Code, kerr.CorruptMessage.Code}},
		{"gzip 48 MiB record", bombBatch(t, record.CodecGzip, bigRecordStream(t, 48)), []int16{kerr.CorruptMessage.Code}},
		{"gzip 16 MiB record", bombBatch(t, record.CodecGzip, bigRecordStream(t, 16)), []int16{0}},
	}
	for _, b := range bombs {
		t.Logf("%s: %d bytes", b.name, len(b.batch))
		if len(b.batch) > int(s.cfg.MessageMaxBytes) {
			t.Fatalf("%s: %d bytes exceed message.max.bytes", b.name, len(b.batch))
		}
	}

	// The other client: plain batches, one at a time, until the bombs end.
	plain := dialRaw(t, s)
	stopPlain := make(chan struct{})
	var plainOK, plainBad atomic.Int64
	var plainMax atomic.Int64
	var plainWG sync.WaitGroup
	plainWG.Add(1)
	go func() {
		defer plainWG.Done()
		for {
			select {
			case <-stopPlain:
				return
			default:
			}
			t0 := time.Now()
			// A deadline per produce: dialRaw's runs from the dial, and
			// the bombs can outlast it on a loaded machine.
			_ = plain.nc.SetDeadline(time.Now().Add(time.Minute))
			resp, err := plain.call(produceRequest("plain", 0, makeBatch(t, 10, 100), 9))
			if d := time.Since(t0).Microseconds(); d > plainMax.Load() {
				plainMax.Store(d)
			}
			if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
				plainBad.Add(1)
				return
			}
			plainOK.Add(1)
		}
	}()

	conns := make([]*rawConn, 4)
	for i := range conns {
		conns[i] = dialRaw(t, s)
	}
	base := liveHeap()
	h := watchHeap()
	for _, b := range bombs {
		frame := produceFrameOf(b.batch)
		var wg sync.WaitGroup
		codes := make([]int16, len(conns))
		errs := make([]error, len(conns))
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], errs[i] = c.produceFrame(frame)
			}()
		}
		wg.Wait()
		for i := range conns {
			if errs[i] != nil {
				t.Fatalf("%s: connection %d: %v", b.name, i, errs[i])
			}
			ok := false
			for _, want := range b.codes {
				ok = ok || codes[i] == want
			}
			if !ok {
				t.Errorf("%s: code %d (%v), want one of %v", b.name, codes[i], kerr.ErrorForCode(codes[i]), b.codes)
			}
		}
	}
	peak, live := h.end()
	// The other client keeps going until it has been served at least once
	// (it normally has been hundreds of times by now).
	for deadline := time.Now().Add(20 * time.Second); plainOK.Load() == 0 && plainBad.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	close(stopPlain)
	plainWG.Wait()
	grew, liveGrew := int64(peak)-int64(base), int64(live)-int64(base)
	t.Logf("heap %d MiB before; peak %d MiB (+%d MiB) with garbage, %d MiB (+%d MiB) live at a collection; budget peak %d KiB; plain produces: %d ok, slowest %d ms",
		base>>20, peak>>20, grew>>20, live>>20, liveGrew>>20, s.decompression.peak.Load()>>10, plainOK.Load(), plainMax.Load()/1000)
	// Live: what the budget lets through at once (three 20 MiB snappy
	// blocks), plus the four connections' 1 MB request buffers and pools.
	// With garbage: up to as much again before a collection (GOGC=100).
	if liveGrew > DecompressionBudget+24<<20 {
		t.Errorf("the live heap grew by %d MiB during the bombs, want at most the %d MiB budget + 24 MiB", liveGrew>>20, DecompressionBudget>>20)
	}
	if grew > 2*(DecompressionBudget+24<<20) {
		t.Errorf("the heap grew by %d MiB during the bombs, want at most twice the %d MiB budget + 24 MiB", grew>>20, DecompressionBudget>>20)
	}
	if plainBad.Load() != 0 || plainOK.Load() == 0 {
		t.Errorf("the other client: %d produces ok, %d failed", plainOK.Load(), plainBad.Load())
	}
	if p := s.decompression.peak.Load(); p > DecompressionBudget {
		t.Errorf("decompression budget peak %d above its size", p)
	}
	if end := s.topics.partition("bomb", 0).log.LogEndOffset(); end != 4 {
		t.Errorf("bomb log end offset %d, want 4 (the four 16 MiB records)", end)
	}

	// Recompression to the topic's compression.type streams too: the
	// 16 MiB record goes to lz4 (a few KB), and to uncompressed it passes
	// max.message.bytes and is MESSAGE_TOO_LARGE as soon as it does.
	admin := dialRaw(t, s)
	for _, tc := range [][2]string{{"to-lz4", "lz4"}, {"to-none", "uncompressed"}} {
		if code := createWithConfigs(t, admin, tc[0], "compression.type", tc[1]); code != 0 {
			t.Fatalf("create %s: %d", tc[0], code)
		}
	}
	big := bombBatch(t, record.CodecGzip, bigRecordStream(t, 16))
	base = liveHeap()
	h = watchHeap()
	for _, tc := range []struct {
		topic string
		want  int16
	}{{"to-lz4", 0}, {"to-none", kerr.MessageTooLarge.Code}} {
		frame := produceFrameTo(tc.topic, big)
		var wg sync.WaitGroup
		codes := make([]int16, len(conns))
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if codes[i], err = c.produceFrame(frame); err != nil {
					codes[i] = -2
				}
			}()
		}
		wg.Wait()
		for i, code := range codes {
			if code != tc.want {
				t.Errorf("%s, connection %d: code %d, want %d", tc.topic, i, code, tc.want)
			}
		}
	}
	peak, live = h.end()
	grew, liveGrew = int64(peak)-int64(base), int64(live)-int64(base)
	t.Logf("recompressing 16 MiB records: +%d MiB with garbage, +%d MiB live", grew>>20, liveGrew>>20)
	if liveGrew > DecompressionBudget+24<<20 || grew > 2*(DecompressionBudget+24<<20) {
		t.Errorf("recompression grew the heap by %d MiB (%d MiB live)", grew>>20, liveGrew>>20)
	}
	if end := s.topics.partition("to-lz4", 0).log.LogEndOffset(); end != 4 {
		t.Errorf("to-lz4 log end offset %d, want 4", end)
	}

	// zstd frames declaring a 128 MiB window (the most a stream may) each
	// need more than the whole budget: they run one at a time, so the heap
	// holds one such window, not four.
	wide := produceFrameOf(bombBatch(t, record.CodecZstd, zstdRLEFrame(record.MaxStreamWindow, 2048)))
	base = liveHeap()
	h = watchHeap()
	var wg sync.WaitGroup
	codes := make([]int16, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if codes[i], err = c.produceFrame(wide); err != nil {
				codes[i] = -2
			}
		}()
	}
	wg.Wait()
	peak, _ = h.end()
	grew = int64(peak) - int64(base)
	t.Logf("128 MiB windows: +%d MiB with garbage, codes %v", grew>>20, codes)
	for i, code := range codes {
		if code != kerr.InvalidRecord.Code && code != kerr.CorruptMessage.Code {
			t.Errorf("wide window %d: code %d", i, code)
		}
	}
	if grew > record.MaxStreamWindow+48<<20 {
		t.Errorf("four 128 MiB-window frames grew the heap by %d MiB, want one window's worth", grew>>20)
	}
}

// produceFrameOf is a whole Produce v9 request frame (size prefix included)
// for one batch to partition 0 of "bomb" (produceFrameTo: of topic),
// correlation id 7: built once and written by every connection, so the
// client side adds no garbage per send.
func produceFrameOf(batch []byte) []byte { return produceFrameTo("bomb", batch) }

func produceFrameTo(topic string, batch []byte) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bomb")).AppendRequest(nil, produceRequest(topic, 0, batch, 9), 7)
}

// produceFrame writes a prepared produce frame and returns the partition's
// error code.
func (r *rawConn) produceFrame(frame []byte) (int16, error) {
	// A deadline per round trip: the connections serve the whole test,
	// longer under load than dialRaw's 20 s from the dial, and a bomb
	// waits its turn in the decompression budget behind the other
	// connections' (four 64 MiB lz4 bombs under -race at load 40: tens
	// of seconds).
	_ = r.nc.SetDeadline(time.Now().Add(time.Minute))
	if _, err := r.nc.Write(frame); err != nil {
		return 0, err
	}
	b, err := r.readFrame()
	if err != nil {
		return 0, err
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	if len(b) < 5 {
		return 0, fmt.Errorf("short response")
	}
	if err := resp.ReadFrom(b[5:]); err != nil { // correlation id, header tags
		return 0, err
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// mustCompressZstdFrame is one zstd frame of n zeros.
func mustCompressZstdFrame(t testing.TB, n int) []byte {
	t.Helper()
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.EncodeAll(make([]byte, n), nil)
}

// bombsAloneEnv marks the process TestDecompressionBombs runs in alone.
const bombsAloneEnv = "STRATA_TEST_BOMBS_ALONE"

// runAlone runs test (a heap-measuring test) in a fresh process, the test
// binary run again for it alone with env set, and passes on its log and
// its verdict.
func runAlone(t *testing.T, test, env string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s alone:\n%s", test, out)
	if err != nil {
		t.Fatalf("%s alone: %v", test, err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+test)) {
		t.Fatalf("%s alone did not run and pass", test)
	}
}
