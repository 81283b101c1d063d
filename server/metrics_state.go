package server

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/internal/metrics"
	"github.com/stratalog/strata/replica"
)

// brokerState is what the broker knows of itself and the cluster at one
// moment: the scrape-time gauges and the status page are built from it.
type brokerState struct {
	NodeID       int32
	ClusterID    string
	Controller   int32 // -1 unknown
	IsController bool  // a single node coordinates itself
	Brokers      []int32
	Partitions   []partStatus // sorted by topic, partition
	Groups       []groupLag   // sorted by id
}

// partStatus is one partition as this broker sees it. Local is set when it
// holds a replica; the log figures are only known then.
type partStatus struct {
	Topic                string
	Partition            int32
	Leader               int32
	Replicas, ISR        []int32
	Local, IsLeader      bool
	Offline              bool // no leader (cluster) or its log dir failed
	UnderReplicated      bool // led here, ISR smaller than the replicas
	UnderMinISR          bool // led here, ISR below min.insync.replicas
	Size                 int64
	Segments             int
	StartOffset, EndOff  int64
	HighWatermark        int64
	MaxFollowerLag       int64
	internal, diskFailed bool
}

// groupLag is a consumer group with its committed offsets and lag.
type groupLag struct {
	ID      string
	State   string
	Members int
	Parts   []groupPartLag
}

type groupPartLag struct {
	Topic     string
	Partition int32
	Committed int64
	Lag       int64 // high watermark − committed; -1 when the high watermark is not known here
}

// state collects the broker's state.
func (s *Server) state() brokerState {
	st := brokerState{NodeID: s.NodeID(), ClusterID: s.ClusterID(), Controller: -1}
	hws := map[topicPartition]int64{}
	if s.cl == nil {
		st.Controller, st.IsController, st.Brokers = st.NodeID, true, []int32{st.NodeID}
		for _, t := range s.topics.all() {
			for _, p := range s.topics.parts(t) {
				ps := partStatus{Topic: t.name, Partition: p.index, Leader: st.NodeID, Replicas: []int32{st.NodeID},
					ISR: []int32{st.NodeID}, Local: true, IsLeader: true, internal: t.name == OffsetsTopic}
				if p.offlineErr() != nil {
					ps.Offline, ps.diskFailed, ps.ISR = true, true, nil
				} else {
					fillLog(&ps, p.log)
					hws[topicPartition{t.name, p.index}] = ps.HighWatermark
				}
				st.Partitions = append(st.Partitions, ps)
			}
		}
	} else {
		cl := s.cl
		im := cl.images.load()
		st.Controller = im.controllerID
		if cl.mem != nil {
			st.IsController = cl.mem.IsController()
			if id := cl.mem.ControllerID(); id >= 0 {
				st.Controller = id
			}
		}
		for _, b := range im.brokers {
			st.Brokers = append(st.Brokers, b.id)
		}
		for name, t := range im.topics {
			for i := range t.parts {
				mp := &t.parts[i]
				if !mp.present {
					continue
				}
				ps := partStatus{Topic: name, Partition: int32(i), Leader: mp.leader, Replicas: mp.replicas, ISR: mp.isr,
					Offline: mp.leader < 0, internal: name == OffsetsTopic}
				if rp := cl.rm.Partition(name, int32(i)); rp != nil {
					ps.Local = true
					if rp.Failed() != nil {
						ps.diskFailed = true
					} else if l := rp.Log(); l != nil {
						fillLog(&ps, l)
						ps.HighWatermark = rp.HighWatermark()
						// Consumer lag for a partition followed here:
						// the follower's high watermark, which trails the
						// leader's by at most one fetch round trip
						// (replica.fetch.wait.max.ms when idle). The
						// leader's, below, replaces it when led here.
						hws[topicPartition{name, int32(i)}] = ps.HighWatermark
					}
					ps.IsLeader = rp.Role() == replica.RoleLeader
					if ps.IsLeader {
						ps.ISR = rp.ISR()
						ps.UnderReplicated = len(ps.ISR) < len(ps.Replicas)
						ps.UnderMinISR = len(ps.ISR) < int(cl.topicConfig(name).effMinISR(cl.cfg))
						ps.MaxFollowerLag = rp.MaxFollowerLag()
						hws[topicPartition{name, int32(i)}] = ps.HighWatermark
					}
				}
				st.Partitions = append(st.Partitions, ps)
			}
		}
		if r := cl.remoteHW.Load(); r != nil {
			r.fill(hws)
		}
	}
	sort.Slice(st.Partitions, func(i, j int) bool {
		a, b := &st.Partitions[i], &st.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	if s.groups != nil {
		for _, g := range s.groups.sortedGroups() {
			st.Groups = append(st.Groups, g.lag(hws))
		}
	}
	return st
}

// fillLog copies a log's figures into ps.
func fillLog(ps *partStatus, l PartitionLog) {
	snap := l.Snapshot()
	for _, sg := range snap.Segments {
		ps.Size += sg.Size()
	}
	ps.Segments = len(snap.Segments)
	ps.StartOffset, ps.EndOff = snap.Start, snap.End
	ps.HighWatermark = l.HighWatermark()
}

// lag is the group's committed offsets against the high watermarks of the
// partitions: the leader's where this broker leads, a follower's (at most
// one fetch behind) where it follows, the one the lag refresher last learnt
// from the leader (metrics_lag_remote.go: at most
// strata.consumer.lag.refresh.ms old) where it holds no replica. A
// partition whose high watermark is not known has no lag.
func (g *group) lag(hws map[topicPartition]int64) groupLag {
	g.mu.Lock()
	gl := groupLag{ID: g.id, State: g.state.String(), Members: len(g.members)}
	for tp, e := range g.offsets {
		pl := groupPartLag{Topic: tp.topic, Partition: tp.partition, Committed: e.offset, Lag: -1}
		if hw, ok := hws[tp]; ok {
			pl.Lag = max(hw-e.offset, 0)
		}
		gl.Parts = append(gl.Parts, pl)
	}
	g.mu.Unlock()
	sort.Slice(gl.Parts, func(i, j int) bool {
		a, b := &gl.Parts[i], &gl.Parts[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return gl
}

// onISRChange counts a leader's accepted ISR change.
func (s *Server) onISRChange(before, after []int32) {
	if s.met == nil {
		return
	}
	for _, id := range before {
		if !slices.Contains(after, id) {
			s.met.ISRShrinks.Add(1)
			break
		}
	}
	for _, id := range after {
		if !slices.Contains(before, id) {
			s.met.ISRExpands.Add(1)
			break
		}
	}
}

// onElection counts a leader the controller on this broker elected for
// an offline partition.
func (s *Server) onElection(unclean bool) {
	if s.met == nil {
		return
	}
	s.met.LeaderElections.Add(1)
	if unclean {
		s.met.UncleanElections.Add(1)
	}
}

// onElectionTime records how long the controller on this broker took to
// handle an event that elected leaders for offline partitions.
func (s *Server) onElectionTime(d time.Duration) {
	if s.met != nil {
		s.met.LeaderElectionTime.Observe(d)
	}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	tpLabels = []string{"topic", "partition"}
	gtpLabel = []string{"consumergroup", "topic", "partition"}

	dPartCount   = desc("kafka_server_replicamanager_partitioncount", "Partition replicas on this broker (ReplicaManager PartitionCount).")
	dLeaderCount = desc("kafka_server_replicamanager_leadercount", "Partitions this broker leads (ReplicaManager LeaderCount).")
	dUnderRepl   = desc("kafka_server_replicamanager_underreplicatedpartitions", "Partitions led here whose ISR is smaller than their replica set (UnderReplicatedPartitions).")
	dUnderMinISR = desc("kafka_server_replicamanager_underminisrpartitioncount", "Partitions led here whose ISR is below min.insync.replicas (UnderMinIsrPartitionCount).")
	dOfflineRepl = desc("kafka_server_replicamanager_offlinereplicacount", "Replicas here whose log dir failed (OfflineReplicaCount).")
	dMaxLag      = desc("kafka_server_replicafetchermanager_maxlag", "Largest lag in offsets of a follower behind this broker as leader (ReplicaFetcherManager MaxLag, seen from the leader).", "clientid")
	dPartUnder   = desc("kafka_cluster_partition_underreplicated", "1 when the partition, led here, has fewer in-sync replicas than replicas (Partition UnderReplicated).", tpLabels...)

	dActiveCtl   = desc("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller, 0 elsewhere; a single node coordinates itself (ActiveControllerCount).")
	dOfflinePart = desc("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader, reported by the active controller (OfflinePartitionsCount).")
	dGlobalParts = desc("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster, reported by the active controller (GlobalPartitionCount).")
	dGlobalTopic = desc("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster, reported by the active controller (GlobalTopicCount).")

	dLogSize     = desc("kafka_log_log_size", "Bytes of a partition's log segments on this broker (Log Size).", tpLabels...)
	dLogStart    = desc("kafka_log_log_logstartoffset", "A partition's log start offset on this broker (Log LogStartOffset).", tpLabels...)
	dLogEnd      = desc("kafka_log_log_logendoffset", "A partition's log end offset on this broker (Log LogEndOffset).", tpLabels...)
	dLogSegments = desc("kafka_log_log_numlogsegments", "A partition's segment count on this broker (Log NumLogSegments).", tpLabels...)

	dTopicCur    = desc("kafka_topic_partition_current_offset", "High watermark of a partition led here (kafka_exporter).", tpLabels...)
	dTopicOldest = desc("kafka_topic_partition_oldest_offset", "Log start offset of a partition led here (kafka_exporter).", tpLabels...)
	dGroupLag    = desc("kafka_consumergroup_lag", "High watermark minus the group's committed offset; a follower's high watermark trails the leader's by at most one fetch, a partition with no replica here has its leader's from the last strata.consumer.lag.refresh.ms round (kafka_exporter).", gtpLabel...)
	dGroupOffset = desc("kafka_consumergroup_current_offset", "The group's committed offset (kafka_exporter).", gtpLabel...)
	dGroupMemb   = desc("kafka_consumergroup_members", "Members of a consumer group coordinated here (kafka_exporter).", "consumergroup")

	dSendfile = desc("strata_fetch_sendfile_bytes_total", "Record bytes sent to fetchers with sendfile(2), zero-copy (all brokers of the process).")
)

// stateCollector exports brokerState at scrape time.
type stateCollector struct{ s *Server }

func (stateCollector) Describe(chan<- *prometheus.Desc) {}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.state()
	known := map[string]bool{}
	for i := range st.Partitions {
		known[st.Partitions[i].Topic] = true
	}
	c.s.met.RetainTopics(func(name string) bool { return known[name] }) // deleted topics' series go
	var parts, leaders, under, underMin, offlineRepl, offline int
	var maxLag int64
	topics := map[string]bool{}
	for i := range st.Partitions {
		p := &st.Partitions[i]
		topics[p.Topic] = true
		if p.Offline {
			offline++
		}
		if !p.Local {
			continue
		}
		parts++
		if p.diskFailed {
			offlineRepl++
			continue
		}
		tp := []string{p.Topic, strconv.Itoa(int(p.Partition))}
		metrics.Gauge(ch, dLogSize, float64(p.Size), tp...)
		metrics.Gauge(ch, dLogStart, float64(p.StartOffset), tp...)
		metrics.Gauge(ch, dLogEnd, float64(p.EndOff), tp...)
		metrics.Gauge(ch, dLogSegments, float64(p.Segments), tp...)
		if !p.IsLeader {
			continue
		}
		leaders++
		metrics.Gauge(ch, dTopicCur, float64(p.HighWatermark), tp...)
		metrics.Gauge(ch, dTopicOldest, float64(p.StartOffset), tp...)
		metrics.Gauge(ch, dPartUnder, b2f(p.UnderReplicated), tp...)
		if p.UnderReplicated {
			under++
		}
		if p.UnderMinISR {
			underMin++
		}
		maxLag = max(maxLag, p.MaxFollowerLag)
	}
	metrics.Gauge(ch, dPartCount, float64(parts))
	metrics.Gauge(ch, dLeaderCount, float64(leaders))
	metrics.Gauge(ch, dUnderRepl, float64(under))
	metrics.Gauge(ch, dUnderMinISR, float64(underMin))
	metrics.Gauge(ch, dOfflineRepl, float64(offlineRepl))
	metrics.Gauge(ch, dMaxLag, float64(maxLag), "Replica")
	metrics.Gauge(ch, dActiveCtl, b2f(st.IsController))
	if !st.IsController {
		offline, topics = 0, nil
	}
	metrics.Gauge(ch, dOfflinePart, float64(offline))
	globalParts := 0
	if st.IsController {
		globalParts = len(st.Partitions)
	}
	metrics.Gauge(ch, dGlobalParts, float64(globalParts))
	metrics.Gauge(ch, dGlobalTopic, float64(len(topics)))
	for i := range st.Groups {
		g := &st.Groups[i]
		metrics.Gauge(ch, dGroupMemb, float64(g.Members), g.ID)
		for _, p := range g.Parts {
			l := []string{g.ID, p.Topic, strconv.Itoa(int(p.Partition))}
			metrics.Gauge(ch, dGroupOffset, float64(p.Committed), l...)
			if p.Lag >= 0 {
				metrics.Gauge(ch, dGroupLag, float64(p.Lag), l...)
			}
		}
	}
	metrics.Counter(ch, dSendfile, uint64(sendfileBytes.Load()))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
