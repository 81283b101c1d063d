package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/segment"
)

// fetchPart is one partition of a Fetch response: its offsets and the file
// region holding its records (sent with sendfile).
type fetchPart struct {
	partition int32
	code      int16
	hw        int64
	lso       int64 // last stable offset
	logStart  int64
	// aborted: the aborted transactions of the range read, for a
	// read_committed fetch.
	aborted []producer.AbortedTxn
	region  segment.Region
	// diverging (cluster mode, a follower's fetch): the follower's log
	// diverges after epoch divEpoch, which ends at divEnd on the leader
	// (Fetch v12's diverging_epoch).
	diverging bool
	divEpoch  int32
	divEnd    int64
}

// fetchTopic groups the parts of one requested topic.
type fetchTopic struct {
	name  string
	parts []fetchPart
}

// handleFetch answers Fetch v4-12. It reads every partition; if fewer than
// min_bytes are available (and nothing failed) it waits, woken by the first
// append to any of the partitions (Log.Changed), until max_wait_ms has
// passed, then reads again. The response is framed by hand around the file
// regions (writeFetch). There are no fetch sessions: session id 0 tells the
// client to send full requests; an incremental request (epoch > 0) gets
// FETCH_SESSION_ID_NOT_FOUND.
func (s *Server) handleFetch(c *conn, h *reqHeader, req *kmsg.FetchRequest) error {
	var waits []<-chan struct{}
	return s.fetchLoop(c, h, req, func() ([]fetchTopic, int64, bool, time.Duration) {
		waits = s.fetchWaits(req)
		topics, bytes, failed := s.readFetch(req)
		return topics, bytes, failed, 0
	}, func(timer <-chan time.Time) { waitAny(waits, timer, s.done) })
}

// fetchLoop is a Fetch's read-and-wait loop, single-node and in a cluster:
// read reads the partitions once, taking first what park will wait on (so
// a change between the read and the wait is not missed), and says how soon
// to read again when it held partitions back (0: only at max wait); park
// waits for that, the timer or the server's shutdown. The response is
// written when min_bytes are there, a partition failed, max_wait_ms has
// passed or the server closes.
func (s *Server) fetchLoop(c *conn, h *reqHeader, req *kmsg.FetchRequest, read func() (topics []fetchTopic, bytes int64, failed bool, again time.Duration), park func(timer <-chan time.Time)) error {
	if req.Version >= 7 && (req.SessionEpoch > 0 || req.SessionID != 0) {
		return c.writeFetch(h, req, kerr.FetchSessionIDNotFound.Code, nil)
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		topics, bytes, failed, again := read()
		remaining := time.Until(deadline)
		if bytes >= int64(req.MinBytes) || failed || remaining <= 0 || s.closing.Load() {
			if c.fetchThrottled(h, req, bytes) { // over a quota: an empty response (Kafka's getThrottledResponse)
				releaseFetch(topics)
				topics = nil
			}
			err := c.writeFetch(h, req, 0, topics)
			releaseFetch(topics)
			return err
		}
		releaseFetch(topics)
		fetchParks.Add(1)
		if again > 0 {
			remaining = min(remaining, again)
		}
		if timer == nil {
			timer = time.NewTimer(remaining)
		} else {
			timer.Reset(remaining)
		}
		c.parked(false, func() { park(timer.C) })
	}
}

// fetchWaits collects the Changed channels of the requested partitions. It
// is called before reading so an append between the read and the wait is
// not missed.
func (s *Server) fetchWaits(req *kmsg.FetchRequest) []<-chan struct{} {
	var out []<-chan struct{}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			if p := s.topics.partition(rt.Topic, rt.Partitions[j].Partition); p != nil {
				out = append(out, p.log.Changed())
			}
		}
	}
	return out
}

// waitAny returns when any of chans, timeout or done fires. Up to two
// channels (a single-node fetch of one partition; a follower's fetch of one
// partition in cluster mode, which waits on the log and the partition) are
// one select; more take a goroutine each.
func waitAny(chans []<-chan struct{}, timeout <-chan time.Time, done <-chan struct{}) {
	switch len(chans) {
	case 0:
		select {
		case <-timeout:
		case <-done:
		}
		return
	case 1:
		select {
		case <-chans[0]:
		case <-timeout:
		case <-done:
		}
		return
	case 2:
		select {
		case <-chans[0]:
		case <-chans[1]:
		case <-timeout:
		case <-done:
		}
		return
	}
	woke := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	for _, ch := range chans {
		go func() {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				case <-stop:
				}
			case <-stop:
			}
		}()
	}
	select {
	case <-woke:
	case <-timeout:
	case <-done:
	}
}

// readFetch reads every requested partition within the partition and
// response byte limits, the response's being the smaller of the request's
// max_bytes and the broker's fetch.max.bytes, as in Kafka; the first
// partition with data always gets at least one whole batch (KIP-74). failed
// reports a partition error, which answers at once.
func (s *Server) readFetch(req *kmsg.FetchRequest) (topics []fetchTopic, total int64, failed bool) {
	remaining := max(min(int64(req.MaxBytes), int64(s.cfg.FetchMaxBytes)), 0)
	for i := range req.Topics {
		rt := &req.Topics[i]
		ft := fetchTopic{name: rt.Topic, parts: make([]fetchPart, 0, len(rt.Partitions))}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			fp := fetchPart{partition: rp.Partition, hw: -1, lso: -1, logStart: -1}
			p := s.topics.partition(rt.Topic, rp.Partition)
			if p == nil {
				fp.code = kerr.UnknownTopicOrPartition.Code
				failed = true
				ft.parts = append(ft.parts, fp)
				continue
			}
			if code := s.fetchCodecCheck(rt.Topic, req.Version); code != 0 {
				fp.code, failed = code, true
				ft.parts = append(ft.parts, fp)
				continue
			}
			if p.offlineErr() != nil { // its log dir failed (logged once then)
				fp.code, failed = kerr.KafkaStorageError.Code, true
				ft.parts = append(ft.parts, fp)
				continue
			}
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			if total == 0 || limit > 0 {
				var r segment.Region
				var err error
				if req.IsolationLevel == 1 {
					r, err = p.log.ReadStable(rp.FetchOffset, max(limit, 0))
				} else {
					r, err = p.log.ReadToHighWatermark(rp.FetchOffset, max(limit, 0))
				}
				switch {
				case errors.Is(err, segment.ErrOffsetOutOfRange):
					fp.code = kerr.OffsetOutOfRange.Code
					failed = true
				case errors.Is(err, segment.ErrClosed): // deleted meanwhile
					fp.code = kerr.UnknownTopicOrPartition.Code
					failed = true
				case errors.Is(err, segment.ErrOffline): // logged once when the dir failed
					fp.code = kerr.KafkaStorageError.Code
					failed = true
				case err != nil:
					s.log.Error("fetch read failed", "topic", rt.Topic, "partition", rp.Partition, "offset", rp.FetchOffset, "error", err)
					fp.code = kerr.KafkaStorageError.Code
					failed = true
				case r.Len > limit && total > 0:
					r.Release() // only the first partition may exceed the limits
				default:
					fp.region = r
					total += r.Len
					remaining -= r.Len
				}
			}
			fp.hw = p.log.HighWatermark()
			fp.lso = p.log.LastStableOffset()
			if req.IsolationLevel == 1 && fp.region.Len > 0 {
				fp.aborted = p.log.AbortedTxns(rp.FetchOffset, fp.lso, nil)
			}
			fp.logStart = p.log.LogStartOffset()
			ft.parts = append(ft.parts, fp)
		}
		topics = append(topics, ft)
	}
	return topics, total, failed
}

func releaseFetch(topics []fetchTopic) {
	for i := range topics {
		for j := range topics[i].parts {
			topics[i].parts[j].region.Release()
		}
	}
}
