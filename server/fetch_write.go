package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// fetchCut marks where a file region goes: after wbuf[:at].
type fetchCut struct {
	at     int
	region *segment.Region
}

// fetchInlineMax is the most record bytes a Fetch response copies into its
// frame instead of sending them with sendfile: below it the response leaves
// in one write (one system call and one TCP segment for a long poll that
// wakes for a few records, instead of a write, a sendfile and a write).
const fetchInlineMax = 32 << 10

// writeFetch frames a Fetch response (v4-12) by hand, because kmsg can only
// encode records it holds in memory: everything but the records is appended
// to the connection's write buffer, the frame size is computed up front
// including the regions, and each partition's records go from the segment
// file to the socket with sendfile at an explicit offset (zero-copy; the
// file's shared offset is never used, so concurrent fetches cannot race).
// When all the regions together hold at most fetchInlineMax bytes they are
// read (pread) into the frame instead, and the frame is written at once.
func (c *conn) writeFetch(h *reqHeader, req *kmsg.FetchRequest, topCode int16, topics []fetchTopic) error {
	v := req.Version
	flex := v >= 12
	var total int64
	for i := range topics {
		for j := range topics[i].parts {
			total += topics[i].parts[j].region.Len
		}
	}
	inline := total <= fetchInlineMax
	throttle := c.quota.throttle
	if throttle > 0 && v < 8 {
		c.quota.throttle = 0 // before KIP-219: the response is held back instead of muting after it
		c.throttleWait(throttle)
	}
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(h.corr))
	if flex {
		b = append(b, 0) // response header v1 tag buffer
	}
	b = binary.BigEndian.AppendUint32(b, uint32(throttle.Milliseconds())) // throttle_time_ms
	if v >= 7 {
		b = binary.BigEndian.AppendUint16(b, uint16(topCode))
		b = binary.BigEndian.AppendUint32(b, 0) // session_id: no sessions
	}
	b = appendArrayLen(b, len(topics), flex)
	var cuts []fetchCut
	var regionBytes int64
	for i := range topics {
		t := &topics[i]
		b = appendString(b, t.name, flex)
		b = appendArrayLen(b, len(t.parts), flex)
		for j := range t.parts {
			p := &t.parts[j]
			b = binary.BigEndian.AppendUint32(b, uint32(p.partition))
			b = binary.BigEndian.AppendUint16(b, uint16(p.code))
			b = binary.BigEndian.AppendUint64(b, uint64(p.hw))
			b = binary.BigEndian.AppendUint64(b, uint64(p.hw)) // last_stable_offset = HW: no transactions
			if v >= 5 {
				b = binary.BigEndian.AppendUint64(b, uint64(p.logStart))
			}
			// aborted_transactions: null for read_uncommitted, empty for
			// read_committed, as Kafka answers.
			if req.IsolationLevel == 1 {
				b = appendArrayLen(b, 0, flex)
			} else {
				b = appendArrayLen(b, -1, flex)
			}
			if v >= 11 {
				b = binary.BigEndian.AppendUint32(b, 0xffffffff) // preferred_read_replica -1
			}
			n := p.region.Len
			if flex {
				b = binary.AppendUvarint(b, uint64(n)+1)
			} else {
				b = binary.BigEndian.AppendUint32(b, uint32(n))
			}
			switch {
			case n > 0 && inline:
				var err error
				if b, err = appendRegion(b, &p.region); err != nil {
					return fmt.Errorf("read records: %w", err)
				}
			case n > 0:
				cuts = append(cuts, fetchCut{at: len(b), region: &p.region})
				regionBytes += n
			}
			if flex {
				b = appendPartitionTags(b, p)
			}
		}
		if flex {
			b = append(b, 0) // topic tags
		}
	}
	if flex {
		b = append(b, 0) // response tags
	}
	size := int64(len(b)-4) + regionBytes
	if size > 1<<31-1 {
		return fmt.Errorf("fetch response of %d bytes", size)
	}
	binary.BigEndian.PutUint32(b, uint32(size))
	c.wbuf = b
	if c.s != nil && c.s.met != nil {
		c.s.noteFetch(req, topics)
		began := time.Now()
		defer func() { c.send += time.Since(began) }()
	}

	if len(cuts) == 0 {
		if err := c.writeAll(b); err != nil {
			return fmt.Errorf("write fetch response: %w", err)
		}
		return nil
	}
	// The pieces before each region go with MSG_MORE, so the kernel sends
	// them in the same TCP segments as the region's first bytes instead of
	// pushing each small piece on its own.
	prev := 0
	for _, cut := range cuts {
		if err := c.writeMore(b[prev:cut.at]); err != nil {
			return fmt.Errorf("write fetch response: %w", err)
		}
		if err := c.sendRegion(cut.region); err != nil {
			return fmt.Errorf("send records: %w", err)
		}
		prev = cut.at
	}
	if prev < len(b) {
		if err := c.writeAll(b[prev:]); err != nil {
			return fmt.Errorf("write fetch response: %w", err)
		}
	}
	return nil
}

// appendRegion appends a region's bytes to b, read at its explicit offset.
func appendRegion(b []byte, r *segment.Region) ([]byte, error) {
	b = slices.Grow(b, int(r.Len))
	if _, err := r.ReadInto(b[len(b):]); err != nil {
		return b, err
	}
	inlineFetchBytes.Add(r.Len)
	return b[:len(b)+int(r.Len)], nil
}

// inlineFetchBytes counts record bytes copied into Fetch frames (tests read it).
var inlineFetchBytes atomic.Int64

// appendPartitionTags writes a partition's tagged fields (v12): none, or
// diverging_epoch (tag 0: epoch, end offset, no tags of its own).
func appendPartitionTags(b []byte, p *fetchPart) []byte {
	if !p.diverging {
		return append(b, 0)
	}
	b = append(b, 1, 0, 13) // one tag: tag 0, 13 bytes
	b = binary.BigEndian.AppendUint32(b, uint32(p.divEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(p.divEnd))
	return append(b, 0)
}

func appendArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n+1)) // -1 (null) encodes as 0
	}
	return binary.BigEndian.AppendUint32(b, uint32(int32(n)))
}

func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}

// The socket calls of the fetch path, behind atomics so tests can inject
// their failures while connections run.
var (
	sendfileCall atomic.Pointer[func(out, in int, off *int64, n int) (int, error)]
	sendmsgCall  atomic.Pointer[func(fd int, p, oob []byte, to unix.Sockaddr, flags int) (int, error)]
)

func init() {
	sf, sm := unix.Sendfile, unix.SendmsgN
	sendfileCall.Store(&sf)
	sendmsgCall.Store(&sm)
}

// writeMore writes b with MSG_MORE: more of the response follows at once, so
// the kernel holds b to fill a segment with what comes next. Without a TCP
// socket it is writeAll.
func (c *conn) writeMore(b []byte) error {
	if c.raw == nil || len(b) == 0 {
		return c.writeAll(b)
	}
	sendmsg := *sendmsgCall.Load()
	return c.rawWrite(func(fd int) (int, error) {
		n, err := sendmsg(fd, b, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
		b = b[max(n, 0):]
		return n, err
	}, int64(len(b)))
}

// rawWrite runs op on the connection's descriptor until it has written n
// bytes in all, waiting for the socket on EAGAIN through the runtime poller
// under the write deadline, set and renewed as writeAll does.
func (c *conn) rawWrite(op func(fd int) (int, error), n int64) error {
	for n > 0 {
		c.armWrite()
		var opErr error
		moved := false
		werr := c.raw.Write(func(fd uintptr) bool {
			for n > 0 {
				m, err := op(int(fd))
				if m > 0 {
					n -= int64(m)
					moved = true
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket is writable
				case err == unix.EINTR:
					continue
				case err != nil:
					opErr = err
					return true
				case m == 0:
					opErr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		switch {
		case opErr != nil:
			return opErr
		case werr == nil:
		case moved && errors.Is(werr, os.ErrDeadlineExceeded):
			// Bytes went out since the deadline was set: not idle.
		default:
			return werr
		}
	}
	return nil
}

// errNoSendfile says sendfile(2) cannot send this file to this socket
// (EINVAL, ENOSYS) and nothing was sent: the caller copies instead.
var errNoSendfile = errors.New("server: sendfile not supported here")

// sendRegion writes a file region to the connection with sendfile(2) at an
// explicit offset, waiting for the socket on EAGAIN through the runtime
// poller. Files without a descriptor (the in-memory filesystem),
// connections that are not TCP, and a sendfile that fails with EINVAL or
// ENOSYS before its first byte (a filesystem or kernel without it) are
// copied through a pooled buffer.
func (c *conn) sendRegion(r *segment.Region) error {
	f, ok := vfs.AsOSFile(r.File)
	if !ok || c.raw == nil {
		return c.copyRegion(r)
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	off := r.Pos
	sendfile := *sendfileCall.Load()
	var opErr error
	ctlErr := fc.Control(func(ffd uintptr) {
		opErr = c.rawWrite(func(sfd int) (int, error) {
			n, err := sendfile(sfd, int(ffd), &off, int(min(r.Pos+r.Len-off, 1<<30)))
			if (err == unix.EINVAL || err == unix.ENOSYS) && off == r.Pos {
				return 0, errNoSendfile
			}
			if n > 0 {
				sendfileBytes.Add(int64(n))
			}
			return n, err
		}, r.Len)
	})
	if ctlErr != nil {
		return ctlErr
	}
	if errors.Is(opErr, errNoSendfile) {
		sendfileFallbacks.Add(1)
		return c.copyRegion(r)
	}
	return opErr
}

// fetchParks counts the times a Fetch parked to wait for data (tests wait
// on it to know a long poll is parked).
var fetchParks atomic.Int64

// sendfileBytes counts record bytes sent with sendfile as they go,
// sendfileFallbacks the regions copied because sendfile refused them (tests
// read both).
var sendfileBytes, sendfileFallbacks atomic.Int64

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyRegion is the fallback for regions sendfile cannot send.
func (c *conn) copyRegion(r *segment.Region) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for pos, end := r.Pos, r.Pos+r.Len; pos < end; {
		n := int(min(int64(len(buf)), end-pos))
		m, err := r.File.ReadAt(buf[:n], pos)
		if m < n {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if err := c.writeAll(buf[:n]); err != nil {
			return err
		}
		pos += int64(n)
	}
	return nil
}
