package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// countingConn is a net.Conn whose reads come from r, at most max bytes
// each (0: no limit); it counts the reads.
type countingConn struct {
	net.Conn
	r     io.Reader
	max   int
	reads int
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.reads++
	if c.max > 0 && len(b) > c.max {
		b = b[:c.max]
	}
	return c.r.Read(b)
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestReadFrameReadAhead: small frames that arrive together are parsed from
// one read (one system call per request, not two: size, then body); a frame
// larger than the read-ahead buffer keeps the bytes already buffered; frames
// split across reads come back whole and in order.
func TestReadFrameReadAhead(t *testing.T) {
	small := [][]byte{bytes.Repeat([]byte{1}, 30), {}, bytes.Repeat([]byte{2}, 200)}
	large := bytes.Repeat([]byte("0123456789abcdef"), (3*inBufSize)/16+5)
	large2 := bytes.Repeat([]byte{4}, inBufSize+100) // smaller than the rbuf large left behind
	last := bytes.Repeat([]byte{3}, inBufSize)       // exactly the buffer
	var stream []byte
	for _, b := range small {
		stream = append(stream, frameOf(b)...)
	}
	want := append(append([][]byte(nil), small...), large, large2, small[0], last, small[2])
	for _, b := range want[len(small):] {
		stream = append(stream, frameOf(b)...)
	}

	for _, max := range []int{0, 1, 7, 1000} {
		nc := &countingConn{r: bytes.NewReader(stream), max: max}
		c := &conn{s: &Server{cfg: &Config{SocketRequestMaxBytes: DefaultSocketRequestMaxBytes}}, nc: nc}
		for i, w := range want {
			got, err := c.readFrame()
			if err != nil {
				t.Fatalf("max read %d, frame %d: %v", max, i, err)
			}
			if !bytes.Equal(got, w) {
				t.Fatalf("max read %d, frame %d: got %d bytes, want %d (or different content)", max, i, len(got), len(w))
			}
			if max == 0 && i == len(small)-1 && nc.reads != 1 {
				t.Errorf("%d small frames sent together took %d reads, want 1", len(small), nc.reads)
			}
		}
		if _, err := c.readFrame(); !errors.Is(err, io.EOF) {
			t.Errorf("max read %d: after the last frame: %v, want io.EOF", max, err)
		}
	}

	// A stream that ends inside a size prefix or a body is cut short, not a
	// clean close.
	for _, cut := range [][]byte{stream[:2], stream[:4+10], append(frameOf(small[0]), stream[:5]...)} {
		c := &conn{s: &Server{cfg: &Config{SocketRequestMaxBytes: DefaultSocketRequestMaxBytes}}, nc: &countingConn{r: bytes.NewReader(cut)}}
		var err error
		for err == nil {
			_, err = c.readFrame()
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stream of %d bytes: %v, want io.ErrUnexpectedEOF", len(cut), err)
		}
	}
}

// TestPipelinedRequests: requests written back to back in one write (a
// produce larger than the read-ahead buffer among them) are all answered,
// in order, and the produce lands whole.
func TestPipelinedRequests(t *testing.T) {
	s := startServer(t, t.TempDir())
	newTopic(t, s, "pipe", 1)
	r := dialRaw(t, s)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	var b []byte
	for i, req := range []kmsg.Request{
		av,
		produceRequest("pipe", 0, makeBatch(t, 3, 10), 7),
		produceRequest("pipe", 0, makeBatch(t, 150, 1000), 7), // > inBufSize
		produceRequest("pipe", 0, makeBatch(t, 2, 10), 7),
		av,
	} {
		b = append(b, f.AppendRequest(nil, req, int32(i+1))...) // it writes the size at dst[0]
	}
	r.write(b)
	for corr := int32(1); corr <= 5; corr++ {
		fr, err := r.readFrame()
		if err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
		if got := int32(binary.BigEndian.Uint32(fr)); got != corr {
			t.Fatalf("response has correlation id %d, want %d", got, corr)
		}
	}
	if end := s.topics.partition("pipe", 0).log.LogEndOffset(); end != 155 {
		t.Fatalf("log end %d, want 155", end)
	}
}
