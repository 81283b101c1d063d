package server

import (
	"encoding/binary"
	"fmt"
	"io"
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
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(h.corr))
	if flex {
		b = append(b, 0) // response header v1 tag buffer
	}
	b = binary.BigEndian.AppendUint32(b, 0) // throttle_time_ms
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
				b = append(b, 0) // partition tags
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

	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	prev := 0
	for _, cut := range cuts {
		if _, err := c.nc.Write(b[prev:cut.at]); err != nil {
			return fmt.Errorf("write fetch response: %w", err)
		}
		if err := c.sendRegion(cut.region); err != nil {
			return fmt.Errorf("send records: %w", err)
		}
		prev = cut.at
	}
	if _, err := c.nc.Write(b[prev:]); err != nil {
		return fmt.Errorf("write fetch response: %w", err)
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

// sendRegion writes a file region to the connection with sendfile(2) at an
// explicit offset, waiting for the socket on EAGAIN through the runtime
// poller. Files without a descriptor (the in-memory filesystem) or
// connections that are not TCP are copied through a pooled buffer.
func (c *conn) sendRegion(r *segment.Region) error {
	f, ok := vfs.AsOSFile(r.File)
	if !ok || c.tcp == nil {
		return c.copyRegion(r)
	}
	sc, err := c.tcp.SyscallConn()
	if err != nil {
		return err
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	off, remain := r.Pos, r.Len
	var opErr error
	ctlErr := fc.Control(func(ffd uintptr) {
		werr := sc.Write(func(sfd uintptr) bool {
			for remain > 0 {
				n, err := unix.Sendfile(int(sfd), int(ffd), &off, int(min(remain, 1<<30)))
				if n > 0 {
					remain -= int64(n)
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket is writable
				case err == unix.EINTR:
					continue
				case err != nil:
					opErr = err
					return true
				case n == 0:
					opErr = io.ErrUnexpectedEOF // the file is shorter than the region
					return true
				}
			}
			return true
		})
		if werr != nil && opErr == nil {
			opErr = werr
		}
	})
	if ctlErr != nil {
		return ctlErr
	}
	if opErr == nil {
		sendfileBytes.Add(r.Len)
	}
	return opErr
}

// sendfileBytes counts record bytes sent with sendfile (tests read it).
var sendfileBytes atomic.Int64

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyRegion is the fallback for regions without a descriptor.
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
		if _, err := c.nc.Write(buf[:n]); err != nil {
			return err
		}
		pos += int64(n)
	}
	return nil
}
