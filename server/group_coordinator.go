package server

import (
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// coordinator is the group coordinator: the groups of every
// __consumer_offsets partition (all of them, on a single node), their
// members, generations and committed offsets. Each group has its own lock;
// the coordinator's lock covers only the group table.
type coordinator struct {
	s   *Server
	cfg *Config
	log *slog.Logger

	mu     sync.Mutex
	groups map[string]*group
	closed bool

	// loading[p] is set while partition p of __consumer_offsets is being
	// read back at start: its groups answer COORDINATOR_LOAD_IN_PROGRESS.
	loading []atomic.Bool
	topicMu sync.Mutex // serializes creating the offsets topic
	// own is cluster mode's: which offsets partitions this broker leads
	// (cluster_groups.go); nil on a single node, which coordinates all.
	own *ownership
	// txn holds transactional offset commits until their marker.
	txn txnOffsets

	// stats of the last completed rebalances (benchmarks, logs).
	statsMu    sync.Mutex
	rebalances []RebalanceStat
}

// RebalanceStat is one completed rebalance: from the last JoinGroup the
// coordinator received for the generation to the last SyncGroup response it
// sent.
type RebalanceStat struct {
	Group      string
	Generation int32
	Members    int
	Duration   time.Duration
}

func newCoordinator(s *Server) *coordinator {
	co := &coordinator{s: s, cfg: s.cfg, log: s.log.With("component", "group-coordinator"), groups: map[string]*group{}}
	co.loading = make([]atomic.Bool, s.cfg.OffsetsTopicNumPartitions)
	return co
}

// RebalanceStats returns the rebalances completed so far (oldest first).
func (s *Server) RebalanceStats() []RebalanceStat {
	s.groups.statsMu.Lock()
	defer s.groups.statsMu.Unlock()
	return append([]RebalanceStat(nil), s.groups.rebalances...)
}

func (co *coordinator) addStat(st RebalanceStat) {
	co.statsMu.Lock()
	if len(co.rebalances) >= 1024 {
		co.rebalances = co.rebalances[1:]
	}
	co.rebalances = append(co.rebalances, st)
	co.statsMu.Unlock()
	co.log.Info("rebalance completed", "group", st.Group, "generation", st.Generation, "members", st.Members,
		"last_join_to_last_sync_ms", float64(st.Duration.Microseconds())/1000)
}

// loadRefusals counts group requests answered COORDINATOR_LOAD_IN_PROGRESS
// (tests wait on it to know a client was refused).
var loadRefusals atomic.Int64

// groupCheck is the coordinator-level check every group request starts
// with: a valid group id and its offsets partition loaded.
func (co *coordinator) groupCheck(id string) int16 {
	if id == "" {
		return kerr.InvalidGroupID.Code
	}
	p := offsetsPartition(id, int32(len(co.loading)))
	if co.own != nil {
		if code := co.clusterGroupCheck(p); code != 0 {
			return code
		}
	}
	if co.loading[p].Load() {
		loadRefusals.Add(1)
		return kerr.CoordinatorLoadInProgress.Code
	}
	co.mu.Lock()
	closed := co.closed
	co.mu.Unlock()
	if closed {
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// get returns the live group or nil.
func (co *coordinator) get(id string) *group {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.groups[id]
}

// lockGroup returns the group locked, creating it (Empty) when create is
// set, or nil. A group found Dead (deleted meanwhile) is looked up again.
func (co *coordinator) lockGroup(id string, create bool) *group {
	for {
		co.mu.Lock()
		g := co.groups[id]
		if g == nil {
			if !create || co.closed {
				co.mu.Unlock()
				return nil
			}
			g = newGroup(co, id)
			co.groups[id] = g
		}
		co.mu.Unlock()
		g.mu.Lock()
		if g.state != groupDead {
			return g
		}
		g.mu.Unlock()
	}
}

// remove drops a Dead group from the table (g.mu held).
func (co *coordinator) remove(g *group) {
	co.mu.Lock()
	if co.groups[g.id] == g {
		delete(co.groups, g.id)
	}
	co.mu.Unlock()
}

// dropIfUnused removes a group that a failed request created and that holds
// nothing: no members, ids handed out, offsets or generation (g.mu held).
func (co *coordinator) dropIfUnused(g *group) {
	if g.state == groupEmpty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 &&
		g.generation == 0 && g.protocolType == "" {
		g.setState(groupDead)
		co.remove(g)
	}
}

// sortedGroups returns every group, sorted by id.
func (co *coordinator) sortedGroups() []*group {
	co.mu.Lock()
	out := make([]*group, 0, len(co.groups))
	for _, g := range co.groups {
		out = append(out, g)
	}
	co.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// close stops every timer and releases every parked JoinGroup and SyncGroup
// with COORDINATOR_NOT_AVAILABLE. Nothing is written after it.
func (co *coordinator) close() {
	co.mu.Lock()
	co.closed = true
	groups := make([]*group, 0, len(co.groups))
	for _, g := range co.groups {
		groups = append(groups, g)
	}
	co.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.shutdown()
		g.mu.Unlock()
	}
}

func (co *coordinator) isClosed() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.closed
}
