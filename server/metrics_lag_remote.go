package server

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// Consumer lag of a partition with no replica on the coordinator's broker:
// its high watermark is asked of its leader. Every
// strata.consumer.lag.refresh.ms the lag refresher collects the partitions
// the groups coordinated here have committed offsets for, leaves out those
// with a replica here (their high watermark is local), and sends one
// ListOffsets (latest, read_uncommitted: the high watermark, as
// kafka_exporter reads it) to each leader over the inter-broker listener,
// with its security, all leaders at once, each bounded by
// controller.socket.timeout.ms and the interval. Each round replaces the
// previous round's answers: a partition whose leader did not answer, or
// answered with an error, has no lag series until a later round gets one;
// an answer older than three intervals (a round stuck) is not used either.
// Scrapes and requests never wait on another broker.

// errNoBrokerAddr: the metadata cache has no inter-broker address for a
// partition's leader.
var errNoBrokerAddr = errors.New("server: no address known for the broker")

// remoteHWs are the high watermarks the last round learnt from leaders on
// other brokers.
type remoteHWs struct {
	every time.Duration
	mu    sync.Mutex
	hw    map[topicPartition]int64
	at    time.Time             // when the round that set hw began
	conns map[int32]*kwire.Conn // the refresher goroutine's only
}

// startLagRefresh starts the lag refresher in cluster mode with metrics on
// and strata.consumer.lag.refresh.ms positive.
func (s *Server) startLagRefresh() {
	if s.cl == nil || s.met == nil || s.cfg.ConsumerLagRefreshMs <= 0 {
		return
	}
	r := &remoteHWs{every: time.Duration(s.cfg.ConsumerLagRefreshMs) * time.Millisecond, conns: map[int32]*kwire.Conn{}}
	s.cl.remoteHW.Store(r)
	s.bgWG.Add(1)
	go s.lagRefreshLoop(r)
}

// lagRefreshLoop refreshes r each interval until the broker closes.
func (s *Server) lagRefreshLoop(r *remoteHWs) {
	defer s.bgWG.Done()
	defer func() {
		for _, c := range r.conns {
			c.Close()
		}
	}()
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.refreshRemoteHWs(r)
		}
	}
}

// refreshRemoteHWs runs one round.
func (s *Server) refreshRemoteHWs(r *remoteHWs) {
	cl := s.cl
	began := time.Now()
	byLeader := map[int32][]topicPartition{}
	im := cl.images.load()
	seen := map[topicPartition]bool{}
	for _, g := range s.groups.sortedGroups() {
		g.mu.Lock()
		for tp := range g.offsets {
			if seen[tp] {
				continue
			}
			seen[tp] = true
			mp, ok := im.partition(tp.topic, tp.partition)
			if !ok || mp.leader < 0 || mp.leader == cl.id || cl.rm.Partition(tp.topic, tp.partition) != nil {
				continue
			}
			byLeader[mp.leader] = append(byLeader[mp.leader], tp)
		}
		g.mu.Unlock()
	}
	for id, c := range r.conns {
		if byLeader[id] == nil {
			c.Close()
			delete(r.conns, id)
		}
	}
	timeout := min(r.every, time.Duration(cl.cfg.Cluster.ControllerSocketTimeoutMs)*time.Millisecond)
	ctx, cancel := context.WithTimeout(cl.ctx, timeout)
	defer cancel()
	type answer struct {
		leader int32
		conn   *kwire.Conn
		hws    map[topicPartition]int64
	}
	answers := make(chan answer, len(byLeader))
	for leader, tps := range byLeader {
		go func(leader int32, tps []topicPartition, c *kwire.Conn) {
			hws, c, err := s.leaderHWs(ctx, leader, tps, c)
			if err != nil {
				s.log.Debug("consumer lag: no high watermarks from the leader", "broker", leader, "partitions", len(tps), "error", err)
			}
			answers <- answer{leader, c, hws}
		}(leader, tps, r.conns[leader])
	}
	hw := map[topicPartition]int64{}
	for range byLeader {
		a := <-answers
		if a.conn == nil {
			delete(r.conns, a.leader)
		} else {
			r.conns[a.leader] = a.conn
		}
		for tp, v := range a.hws {
			hw[tp] = v
		}
	}
	r.mu.Lock()
	r.hw, r.at = hw, began
	r.mu.Unlock()
}

// leaderHWs asks broker leader for the high watermarks of tps on c (dialled
// when nil or when the broker's address changed). It returns the
// connection to keep, nil after an error (it is closed).
func (s *Server) leaderHWs(ctx context.Context, leader int32, tps []topicPartition, c *kwire.Conn) (map[topicPartition]int64, *kwire.Conn, error) {
	cl := s.cl
	addr, ok := cl.brokerAddr(leader)
	if c != nil && (!ok || c.Addr() != addr) {
		c.Close()
		c = nil
	}
	if !ok {
		return nil, nil, errNoBrokerAddr
	}
	if c == nil {
		var err error
		c, err = kwire.Dial(ctx, addr, kwire.Options{ClientID: "broker-" + strconv.Itoa(int(cl.id)) + "-consumer-lag", Security: cl.security})
		if err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		return tps[i].topic < tps[j].topic || tps[i].topic == tps[j].topic && tps[i].partition < tps[j].partition
	})
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = 5, -1, 0
	for i := 0; i < len(tps); {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = tps[i].topic
		for ; i < len(tps) && tps[i].topic == rt.Topic; i++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tps[i].partition, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	out := map[topicPartition]int64{}
	for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 && rp.Offset >= 0 {
				out[topicPartition{rt.Topic, rp.Partition}] = rp.Offset
			}
		}
	}
	return out, c, nil
}

// fill adds the last round's high watermarks to hws for partitions it has
// none of, unless that round began more than three intervals ago (the
// refresher is stuck or late: its answers are not presented as fresh).
func (r *remoteHWs) fill(hws map[topicPartition]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at.IsZero() || time.Since(r.at) > 3*r.every {
		return
	}
	for tp, v := range r.hw {
		if _, ok := hws[tp]; !ok {
			hws[tp] = v
		}
	}
}
