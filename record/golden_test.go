package record

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Regenerate with: go test ./record -run TestGoldenKgoUpdate -update
var updateGolden = flag.Bool("update", false, "regenerate record/testdata golden files from franz-go")

const (
	goldenTopic      = "golden"
	goldenProducerID = 4242
)

var goldenCodecs = map[Codec]kgo.CompressionCodec{
	CodecNone:   kgo.NoCompression(),
	CodecGzip:   kgo.GzipCompression(),
	CodecSnappy: kgo.SnappyCompression(),
	CodecLZ4:    kgo.Lz4Compression(),
	CodecZstd:   kgo.ZstdCompression(),
}

func goldenPath(c Codec) string { return filepath.Join("testdata", "kgo-"+c.String()+".bin") }

// goldenRecords are what the golden files hold: compressible values, a null
// key, a tombstone, headers with a null and an empty value.
func goldenRecords() []Record {
	var recs []Record
	for i := 0; i < 8; i++ {
		r := Record{
			Timestamp: 1700000000000 + int64(i*3),
			Key:       []byte(fmt.Sprintf("key-%d", i)),
			Value:     []byte(strings.Repeat(fmt.Sprintf("value %d, compressible; ", i), 20)),
		}
		switch i {
		case 2:
			r.Key = nil
		case 3:
			r.Value = nil
		case 5:
			r.Headers = []Header{{Key: "trace", Value: []byte("abc")}, {Key: "nil", Value: nil}, {Key: "empty", Value: []byte{}}}
		}
		recs = append(recs, r)
	}
	return recs
}

// fakeBroker answers just enough of the protocol for a franz-go producer and
// keeps the record bytes of every ProduceRequest as kgo sent them.
type fakeBroker struct {
	ln       net.Listener
	mu       sync.Mutex
	produced [][]byte
}

func startFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return b
}

func (b *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	for {
		var sz [4]byte
		if _, err := io.ReadFull(c, sz[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint32(sz[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		resp, key, corr, err := b.handle(msg)
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(corr))
		if resp.IsFlexible() && key != 18 { // ApiVersions responses keep header v0
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (b *fakeBroker) handle(msg []byte) (kmsg.Response, int16, int32, error) {
	if len(msg) < 10 {
		return nil, 0, 0, errors.New("short request")
	}
	key := int16(binary.BigEndian.Uint16(msg))
	version := int16(binary.BigEndian.Uint16(msg[2:]))
	corr := int32(binary.BigEndian.Uint32(msg[4:]))
	p := 8
	if l := int16(binary.BigEndian.Uint16(msg[p:])); l > 0 { // client id
		p += int(l)
	}
	p += 2
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, 0, 0, fmt.Errorf("unknown key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() { // request header tagged fields: assume none
		p++
	}
	if err := req.ReadFrom(msg[p:]); err != nil {
		return nil, 0, 0, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		for _, k := range [][3]int16{{0, 3, 9}, {3, 0, 9}, {18, 0, 3}, {22, 0, 4}} {
			r.ApiKeys = append(r.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k[0], MinVersion: k[1], MaxVersion: k[2]})
		}
	case *kmsg.MetadataResponse:
		addr := b.ln.Addr().(*net.TCPAddr)
		r.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "127.0.0.1", Port: int32(addr.Port)}}
		r.ControllerID = 1
		r.Topics = []kmsg.MetadataResponseTopic{{Topic: kmsg.StringPtr(goldenTopic),
			Partitions: []kmsg.MetadataResponseTopicPartition{{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}}
	case *kmsg.InitProducerIDResponse:
		r.ProducerID, r.ProducerEpoch = goldenProducerID, 0
	case *kmsg.ProduceResponse:
		pr := req.(*kmsg.ProduceRequest)
		for _, tp := range pr.Topics {
			rt := kmsg.ProduceResponseTopic{Topic: tp.Topic}
			for _, pp := range tp.Partitions {
				b.mu.Lock()
				b.produced = append(b.produced, append([]byte(nil), pp.Records...))
				b.mu.Unlock()
				rt.Partitions = append(rt.Partitions, kmsg.ProduceResponseTopicPartition{Partition: pp.Partition})
			}
			r.Topics = append(r.Topics, rt)
		}
	default:
		return nil, 0, 0, fmt.Errorf("unexpected request key %d", key)
	}
	return resp, key, corr, nil
}

// produceWithKgo sends goldenRecords through a real franz-go producer and
// returns the bytes of the record batches it sent.
func produceWithKgo(t *testing.T, c Codec) []byte {
	fb := startFakeBroker(t)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(fb.ln.Addr().String()),
		kgo.DefaultProduceTopic(goldenTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(goldenCodecs[c]),
		kgo.ProducerLinger(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var krs []*kgo.Record
	for _, r := range goldenRecords() {
		kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp)}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs = append(krs, kr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return bytes.Join(fb.produced, nil)
}

func TestGoldenKgoUpdate(t *testing.T) {
	if !*updateGolden {
		t.Skip("run with -update to regenerate the golden files")
	}
	for c := range goldenCodecs {
		data := produceWithKgo(t, c)
		if err := os.WriteFile(goldenPath(c), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoldenKgoDecode decodes batches franz-go produced, one file per codec.
func TestGoldenKgoDecode(t *testing.T) {
	for c := range goldenCodecs {
		t.Run(c.String(), func(t *testing.T) {
			data, err := os.ReadFile(goldenPath(c))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c, data)
		})
	}
}

// TestKgoLive runs franz-go now and decodes what it sends, so a newer franz-go
// is checked too.
func TestKgoLive(t *testing.T) {
	if testing.Short() {
		t.Skip("network test")
	}
	for c := range goldenCodecs {
		t.Run(c.String(), func(t *testing.T) { checkGolden(t, c, produceWithKgo(t, c)) })
	}
}

func checkGolden(t *testing.T, c Codec, data []byte) {
	t.Helper()
	var got []Record
	it := NewIterator(data, ScanOptions{VerifyCRC: true})
	for it.Next() {
		b := it.Batch()
		if err := b.ValidateProduce(it.Pos()); err != nil {
			t.Fatal(err)
		}
		if b.Codec() != c || b.ProducerID() != goldenProducerID || b.ProducerEpoch() != 0 || b.BaseSequence() != int32(len(got)) {
			t.Fatalf("header: codec %v producer %d/%d seq %d", b.Codec(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
		}
		recs, err := b.Records(nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			recs[i].Offset += int64(len(got)) // batches all claim base offset 0
		}
		got = append(got, recs...)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	recordsEqual(t, got, goldenRecords(), 0, nil)
}

// TestEncoderMatchesKmsg checks the other direction: franz-go's kmsg reads our
// batches, and re-encoding them with kmsg (which computes its own CRC) gives
// our bytes exactly.
func TestEncoderMatchesKmsg(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec = c
		opts.BaseOffset = 1234
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 7, 2, 100
		recs := goldenRecords()
		ours := mustBatch(t, opts, recs)
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(ours); err != nil {
			t.Fatal(err)
		}
		if kb.FirstOffset != 1234 || kb.NumRecords != int32(len(recs)) || kb.ProducerID != 7 || kb.FirstSequence != 100 ||
			int16(kb.Attributes)&7 != int16(c) || uint32(kb.CRC) != ours.CRC() {
			t.Fatalf("%v: kmsg sees %+v", c, kb)
		}
		if again := kb.AppendTo(nil); !bytes.Equal(again, ours) {
			t.Fatalf("%v: kmsg re-encoding differs (CRC %x vs %x)", c, binary.BigEndian.Uint32(again[17:]), ours.CRC())
		}
		raw := kb.Records
		if c != CodecNone {
			var err error
			if raw, err = Decompress(c, nil, raw); err != nil {
				t.Fatal(err)
			}
		}
		for i, want := range recs {
			var kr kmsg.Record
			if err := kr.ReadFrom(raw); err != nil {
				t.Fatal(err)
			}
			n := sizeVarint(kr.Length) + int(kr.Length)
			if kr.OffsetDelta != int32(i) || kb.FirstTimestamp+kr.TimestampDelta64 != want.Timestamp ||
				!bytesNullEqual(kr.Key, want.Key) || !bytesNullEqual(kr.Value, want.Value) || len(kr.Headers) != len(want.Headers) {
				t.Fatalf("%v: record %d as kmsg reads it: %+v", c, i, kr)
			}
			// kmsg's record encoder agrees byte for byte.
			if enc := kr.AppendTo(nil); !bytes.Equal(enc, raw[:n]) {
				t.Fatalf("%v: record %d encodes differently in kmsg", c, i)
			}
			raw = raw[n:]
		}
		if len(raw) != 0 {
			t.Fatalf("%v: %d bytes left", c, len(raw))
		}
	}
}
