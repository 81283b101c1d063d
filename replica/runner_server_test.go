package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// tserver is a small Kafka listener for the Runner's tests, standing in for
// the broker's cluster mode: it decodes requests with kmsg and answers
// Fetch (long-polling, records sent with sendfile as the broker does) and
// ListOffsets from a leader's Manager, and AlterPartition from a fake
// controller. Over real TCP sockets.
type tserver struct {
	t    testing.TB
	ln   net.Listener
	addr string
	m    *Manager     // answers Fetch and ListOffsets, if set
	ctrl *tcontroller // answers AlterPartition, if set

	// corruptNext, when set, makes the next Fetch answer with the records'
	// bytes flipped (a CRC the follower must refuse).
	corruptNext atomic.Bool
	// garbageNext makes the next response a frame that decodes as nothing.
	garbageNext atomic.Bool

	// onFetch, when set, sees every Fetch as it comes (before it is served).
	onFetch atomic.Pointer[func(*kmsg.FetchRequest)]

	fetches  atomic.Int64 // Fetch requests answered
	parked   atomic.Int64 // Fetch requests waiting now
	accepted atomic.Int64 // connections accepted

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed chan struct{}
	wg     sync.WaitGroup
}

// startServer listens on addr ("127.0.0.1:0" for a fresh port; an old
// server's address to reopen it).
func startServer(t testing.TB, addr string, m *Manager, ctrl *tcontroller) *tserver {
	t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the old socket of a reopened address may linger
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &tserver{t: t, ln: ln, addr: ln.Addr().String(), m: m, ctrl: ctrl, conns: map[net.Conn]bool{}, closed: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Close stops the listener and cuts every connection (a broker going away).
func (s *tserver) Close() {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return
	default:
	}
	close(s.closed)
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *tserver) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		select {
		case <-s.closed:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.conns[c] = true
		s.accepted.Add(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *tserver) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	var hdr [4]byte
	var buf, out []byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < 10 || n > 64<<20 {
			return
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		key := int16(binary.BigEndian.Uint16(buf))
		version := int16(binary.BigEndian.Uint16(buf[2:]))
		corr := int32(binary.BigEndian.Uint32(buf[4:]))
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		body := buf[8:]
		idLen := int(int16(binary.BigEndian.Uint16(body)))
		body = body[2+max(idLen, 0):]
		if req.IsFlexible() {
			body = body[1:] // no tagged fields in the Runner's headers
		}
		if err := req.ReadFrom(body); err != nil {
			s.t.Errorf("tserver: decoding %s v%d: %v", kmsg.NameForKey(key), version, err)
			return
		}
		if s.garbageNext.CompareAndSwap(true, false) {
			frame := binary.BigEndian.AppendUint32(nil, 8)
			frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
			frame = append(frame, 0xff, 0xff, 0xff, 0xff)
			if _, err := c.Write(frame); err != nil {
				return
			}
			continue
		}
		var resp kmsg.Response
		switch r := req.(type) {
		case *kmsg.FetchRequest:
			if s.m == nil {
				return
			}
			if err := s.serveFetch(c, corr, r); err != nil {
				return
			}
			continue
		case *kmsg.ListOffsetsRequest:
			if s.m == nil {
				return
			}
			resp = s.m.HandleListOffsets(r)
		case *kmsg.AlterPartitionRequest:
			if s.ctrl == nil {
				return
			}
			resp = s.ctrl.handleAlter(r)
		default:
			return
		}
		out = append(out[:0], 0, 0, 0, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(corr))
		if resp.IsFlexible() {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// fetchPartAnswer is one partition's part of a Fetch answer.
type fetchPartAnswer struct {
	partition int32
	res       FollowerFetchResult
}

// serveFetch answers a follower's Fetch v12 as the broker does: each
// partition through Partition.FetchFromFollower; with fewer than min bytes
// and no error it parks until the leader's log or high watermark moves or
// max wait passes, then answers again.
func (s *tserver) serveFetch(c net.Conn, corr int32, req *kmsg.FetchRequest) error {
	if req.Version != 12 {
		return fmt.Errorf("fetch v%d", req.Version)
	}
	if f := s.onFetch.Load(); f != nil {
		(*f)(req)
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	// The high watermarks as the request found them: one that moves since
	// (this fetch's own progress included) is answered at once, so the
	// follower learns it without waiting for data or max wait.
	hw0 := map[TopicPartition]int64{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if p := s.m.Partition(rt.Topic, rp.Partition); p != nil {
				hw0[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = p.HighWatermark()
			}
		}
	}
	for {
		var waits []reflect.SelectCase
		answers := make([][]fetchPartAnswer, len(req.Topics))
		var bytes int64
		urgent := false
		now := time.Now().UnixMilli()
		for i, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				a := fetchPartAnswer{partition: rp.Partition}
				p := s.m.Partition(rt.Topic, rp.Partition)
				if p == nil {
					a.res = FollowerFetchResult{Err: ErrUnknownPartition, HighWatermark: -1, LogStartOffset: -1, DivergingEndOffset: -1}
					urgent = true
				} else {
					waits = append(waits, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.Log().Changed())},
						reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.HWChanged())})
					a.res = p.FetchFromFollower(FollowerFetch{
						ReplicaID:          req.ReplicaID,
						FetchOffset:        rp.FetchOffset,
						LogStartOffset:     rp.LogStartOffset,
						CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
						LastFetchedEpoch:   rp.LastFetchedEpoch,
						MaxBytes:           int64(rp.PartitionMaxBytes),
					}, now)
					bytes += a.res.Records.Len
					if a.res.Err != nil || a.res.DivergingEndOffset >= 0 || a.res.HighWatermark > hw0[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] {
						urgent = true
					}
				}
				answers[i] = append(answers[i], a)
			}
		}
		if urgent || bytes >= int64(req.MinBytes) || !time.Now().Before(deadline) {
			err := s.writeFetch(c, corr, req, answers)
			release(answers)
			s.fetches.Add(1)
			return err
		}
		release(answers)
		timer := time.NewTimer(time.Until(deadline))
		waits = append(waits, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.closed)})
		s.parked.Add(1)
		reflect.Select(waits)
		s.parked.Add(-1)
		timer.Stop()
		select {
		case <-s.closed:
			return errors.New("closed")
		default:
		}
	}
}

func release(answers [][]fetchPartAnswer) {
	for _, t := range answers {
		for i := range t {
			t[i].res.Records.Release()
		}
	}
}

// writeFetch frames a Fetch v12 response by hand (kmsg encodes only records
// it holds in memory) and sends each partition's records from the segment
// file with sendfile at its offset, as the broker's fetch path does.
func (s *tserver) writeFetch(c net.Conn, corr int32, req *kmsg.FetchRequest, answers [][]fetchPartAnswer) error {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, 0)                        // response header tags
	b = binary.BigEndian.AppendUint32(b, 0) // throttle
	b = binary.BigEndian.AppendUint16(b, 0) // error
	b = binary.BigEndian.AppendUint32(b, 0) // session id
	b = binary.AppendUvarint(b, uint64(len(req.Topics)+1))
	type cut struct {
		at int
		r  *segment.Region
	}
	var cuts []cut
	var regions int64
	for i, rt := range req.Topics {
		b = binary.AppendUvarint(b, uint64(len(rt.Topic)+1))
		b = append(b, rt.Topic...)
		b = binary.AppendUvarint(b, uint64(len(answers[i])+1))
		for j := range answers[i] {
			a := &answers[i][j]
			b = binary.BigEndian.AppendUint32(b, uint32(a.partition))
			b = binary.BigEndian.AppendUint16(b, uint16(ErrorCode(a.res.Err)))
			b = binary.BigEndian.AppendUint64(b, uint64(a.res.HighWatermark))
			b = binary.BigEndian.AppendUint64(b, uint64(a.res.HighWatermark)) // last stable offset
			b = binary.BigEndian.AppendUint64(b, uint64(a.res.LogStartOffset))
			b = append(b, 0)                                 // aborted transactions: null
			b = binary.BigEndian.AppendUint32(b, 0xffffffff) // preferred read replica
			n := a.res.Records.Len
			if a.res.Err != nil {
				n = 0
			}
			b = binary.AppendUvarint(b, uint64(n)+1)
			if n > 0 {
				if s.corruptNext.CompareAndSwap(true, false) {
					rec, err := a.res.Records.ReadInto(nil)
					if err != nil {
						return err
					}
					rec[len(rec)-1] ^= 0xff // the last record byte: the CRC fails
					b = append(b, rec...)
				} else {
					cuts = append(cuts, cut{at: len(b), r: &a.res.Records})
					regions += n
				}
			}
			if a.res.DivergingEndOffset >= 0 {
				b = append(b, 1, 0, 13) // one tag: 0 (diverging_epoch), 13 bytes
				b = binary.BigEndian.AppendUint32(b, uint32(a.res.DivergingEpoch))
				b = binary.BigEndian.AppendUint64(b, uint64(a.res.DivergingEndOffset))
				b = append(b, 0)
			} else {
				b = append(b, 0)
			}
		}
		b = append(b, 0) // topic tags
	}
	b = append(b, 0) // response tags
	binary.BigEndian.PutUint32(b, uint32(int64(len(b)-4)+regions))
	prev := 0
	for _, ct := range cuts {
		if _, err := c.Write(b[prev:ct.at]); err != nil {
			return err
		}
		if err := sendRegion(c, ct.r); err != nil {
			return err
		}
		prev = ct.at
	}
	_, err := c.Write(b[prev:])
	return err
}

// sendRegion sends a file region to c with sendfile(2) at its offset, or
// by copy when either side has no descriptor.
func sendRegion(c net.Conn, r *segment.Region) error {
	f, ok := vfs.AsOSFile(r.File)
	tc, tcp := c.(*net.TCPConn)
	if !ok || !tcp {
		b, err := r.ReadInto(nil)
		if err != nil {
			return err
		}
		_, err = c.Write(b)
		return err
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	sc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	off, end := r.Pos, r.Pos+r.Len
	var opErr error
	ctlErr := fc.Control(func(ffd uintptr) {
		werr := sc.Write(func(sfd uintptr) bool {
			for off < end {
				_, err := unix.Sendfile(int(sfd), int(ffd), &off, int(end-off))
				switch {
				case err == unix.EAGAIN:
					return false
				case err == unix.EINTR:
				case err != nil:
					opErr = err
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = werr
		}
	})
	if ctlErr != nil {
		return ctlErr
	}
	return opErr
}

// tcontroller plays the controller for AlterPartition: it keeps each
// partition's state (as the state znode would), applies ISR changes that
// name the current leader and partition epochs (partition epoch + 1) and
// answers with the new state, as Kafka's controller does.
type tcontroller struct {
	mu     sync.Mutex
	parts  map[TopicPartition]*tstate
	alters []*kmsg.AlterPartitionRequest // every request answered
	times  []time.Time                   // when each came
	// refuse, when nonzero, is the top-level error code of every answer
	// (NOT_CONTROLLER for a controller that lost its role).
	refuse atomic.Int32
}

type tstate struct {
	leader, leaderEpoch, partitionEpoch int32
	isr, replicas                       []int32
}

func newController() *tcontroller {
	return &tcontroller{parts: map[TopicPartition]*tstate{}}
}

func (c *tcontroller) state(tp TopicPartition) tstate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.parts[tp]; s != nil {
		return *s
	}
	return tstate{}
}

// alterCount is the number of AlterPartition requests answered.
func (c *tcontroller) alterCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.alters)
}

func (c *tcontroller) handleAlter(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alters = append(c.alters, req)
	c.times = append(c.times, time.Now())
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if code := int16(c.refuse.Load()); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionResponseTopicPartition()
			op.Partition = rp.Partition
			s := c.parts[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			switch {
			case s == nil:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.LeaderEpoch != s.leaderEpoch:
				op.ErrorCode = kerr.FencedLeaderEpoch.Code
			case rp.PartitionEpoch != s.partitionEpoch:
				op.ErrorCode = kerr.InvalidUpdateVersion.Code
			default:
				s.isr = append([]int32(nil), rp.NewISR...)
				s.partitionEpoch++
				op.LeaderID, op.LeaderEpoch, op.ISR, op.PartitionEpoch = s.leader, s.leaderEpoch, s.isr, s.partitionEpoch
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}
