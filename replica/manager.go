package replica

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// Manager is a broker's replication: its partitions, the controller's
// LeaderAndIsr and StopReplica applied to them, follower fetches served, and
// the requests this broker owes others, produced as data by Ready. It does no
// I/O besides its partitions' logs and checkpoints, starts no goroutine and
// reads no clock: the Runner (production) or the simulation sends what Ready
// returns and hands back every answer.
type Manager struct {
	cfg Config

	mu              sync.Mutex
	closed          bool
	controllerEpoch int32
	brokerEpoch     int64
	parts           map[TopicPartition]*Partition
	order           []*Partition // sorted by topic, then partition: deterministic iteration
	endpoints       map[int32]Endpoint
	fetching        map[FetchTarget]int // Fetches in flight to the target (2: one ahead, see FetchAhead)
	listing         map[int32]bool      // a ListOffsets is in flight to the broker
	alterInflight   bool
	alterSent       []alterSent
	alterRetryAt    int64
	nextShrinkMs    int64
	// leaderQuota and followerQuota are the replication throttles (Kafka's
	// ReplicationQuotaManager for LEADER and FOLLOWER).
	leaderQuota, followerQuota *Quota

	wakeMu sync.Mutex // guards wakeCh and woken only
	wakeCh chan struct{}
	woken  bool
}

// Endpoint is a leader's address from LeaderAndIsr's live_leaders.
type Endpoint struct {
	Host string
	Port int32
}

type alterSent struct {
	p  *Partition
	id uint64
}

// NewManager returns a Manager with no partitions.
func NewManager(cfg Config) (*Manager, error) {
	cfg = cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Manager{
		cfg:             cfg,
		controllerEpoch: -1,
		brokerEpoch:     -1,
		parts:           map[TopicPartition]*Partition{},
		endpoints:       map[int32]Endpoint{},
		fetching:        map[FetchTarget]int{},
		listing:         map[int32]bool{},
		leaderQuota:     cfg.LeaderQuota,
		followerQuota:   cfg.FollowerQuota,
	}, nil
}

// LeaderQuota is the throttle of what this broker sends followers as
// leader (leader.replication.throttled.rate, the topics'
// leader.replication.throttled.replicas naming this broker): the broker's
// fetch serving asks it for the partitions ThrottleLeader names.
func (m *Manager) LeaderQuota() *Quota { return m.leaderQuota }

// FollowerQuota is the throttle of this broker's follower fetches
// (follower.replication.throttled.rate, the topics'
// follower.replication.throttled.replicas naming this broker): Ready
// leaves a throttled partition that is not caught up out of its Fetch
// while the quota is exceeded, and counts the bytes throttled partitions
// receive.
func (m *Manager) FollowerQuota() *Quota { return m.followerQuota }

// Config is the manager's effective configuration.
func (m *Manager) Config() Config { return m.cfg }

// staleBrokerEpoch tells whether a control request was meant for an earlier
// registration of this broker (KIP-380): its broker epoch is known (not -1)
// and below the current one, or this process has not registered yet (no
// SetBrokerEpoch), so the request can only be for an earlier process. A
// controller that has not seen this broker's new registration yet may still
// send, or resend, what it decided for the old one; a process restarted
// after a power loss must not lead with its shortened log because of it
// (mu held).
func (m *Manager) staleBrokerEpoch(e int64) bool {
	return e >= 0 && (m.brokerEpoch < 0 || e < m.brokerEpoch)
}

// SetBrokerEpoch sets the broker epoch AlterPartition carries (the czxid of
// this broker's registration znode); control requests carrying an older
// one are refused with STALE_BROKER_EPOCH (KIP-380).
func (m *Manager) SetBrokerEpoch(e int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.brokerEpoch = e
}

// ControllerEpoch is the highest controller epoch seen.
func (m *Manager) ControllerEpoch() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.controllerEpoch
}

// Partition returns a hosted partition, or nil.
func (m *Manager) Partition(topic string, partition int32) *Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[TopicPartition{Topic: topic, Partition: partition}]
}

// Partitions returns the hosted partitions, sorted by topic and partition.
func (m *Manager) Partitions() []*Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.order)
}

// Endpoint returns a leader's address as the last LeaderAndIsr gave it.
func (m *Manager) Endpoint(broker int32) (Endpoint, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endpoints[broker]
	return e, ok
}

// Wake returns a channel closed when Ready may have new work: after a
// control request, an answer, or a partition's state change. Time-driven work
// (backoffs, ISR checks, AlterPartition retries) is announced by
// Ready.NextMs instead.
func (m *Manager) Wake() <-chan struct{} {
	m.wakeMu.Lock()
	defer m.wakeMu.Unlock()
	if m.wakeCh == nil {
		m.wakeCh = make(chan struct{})
		if m.woken {
			close(m.wakeCh)
		}
	}
	return m.wakeCh
}

// signal wakes the Runner. It takes only wakeMu, so partitions call it with
// their own locks held.
func (m *Manager) signal() {
	m.wakeMu.Lock()
	defer m.wakeMu.Unlock()
	if !m.woken {
		m.woken = true
		if m.wakeCh != nil {
			close(m.wakeCh)
		}
	}
}

// takeWake re-arms the wake channel (Ready).
func (m *Manager) takeWake() {
	m.wakeMu.Lock()
	defer m.wakeMu.Unlock()
	if m.woken {
		m.woken = false
		m.wakeCh = nil
	}
}

// insert registers a new partition (mu held).
func (m *Manager) insert(p *Partition) {
	m.parts[p.tp] = p
	i, _ := slices.BinarySearchFunc(m.order, p.tp, func(q *Partition, tp TopicPartition) int { return compareTP(q.tp, tp) })
	m.order = slices.Insert(m.order, i, p)
}

func (m *Manager) remove(p *Partition) {
	delete(m.parts, p.tp)
	m.order = slices.DeleteFunc(m.order, func(q *Partition) bool { return q == p })
}

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// leaderAndIsrPartition flattens the request's versions.
type leaderAndIsrPartition struct {
	topic   string
	topicID [16]byte
	st      *kmsg.LeaderAndISRRequestTopicPartition
}

// LeaderAndIsr applies a LeaderAndIsr request (Kafka's
// ReplicaManager.becomeLeaderOrFollower): a broker epoch below this
// broker's (see SetBrokerEpoch) is refused whole (STALE_BROKER_EPOCH), as
// is a controller epoch below the highest seen (STALE_CONTROLLER_EPOCH);
// otherwise each
// partition whose leader epoch is newer than the one it has, and whose
// replicas include this broker, gets its log opened (created if needed) and
// becomes leader or follower; older or equal epochs answer
// STALE_CONTROLLER_EPOCH, a partition not assigned here
// UNKNOWN_TOPIC_OR_PARTITION, a log that cannot be opened
// KAFKA_STORAGE_ERROR. The response lists every partition in request order.
func (m *Manager) LeaderAndIsr(req *kmsg.LeaderAndISRRequest, now int64) *kmsg.LeaderAndISRResponse {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	if m.staleBrokerEpoch(req.BrokerEpoch) {
		m.cfg.Logger.Warn("ignoring LeaderAndIsr for an earlier registration of this broker", "broker_epoch", req.BrokerEpoch, "current", m.brokerEpoch)
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	if req.ControllerEpoch < m.controllerEpoch {
		m.cfg.Logger.Warn("ignoring LeaderAndIsr from a stale controller", "controller", req.ControllerID, "controller_epoch", req.ControllerEpoch, "latest", m.controllerEpoch)
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return resp
	}
	m.controllerEpoch = req.ControllerEpoch
	for _, l := range req.LiveLeaders {
		m.endpoints[l.BrokerID] = Endpoint{Host: l.Host, Port: l.Port}
	}
	var parts []leaderAndIsrPartition
	for i := range req.PartitionStates {
		parts = append(parts, leaderAndIsrPartition{topic: req.PartitionStates[i].Topic, st: &req.PartitionStates[i]})
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		for j := range ts.PartitionStates {
			parts = append(parts, leaderAndIsrPartition{topic: ts.Topic, topicID: ts.TopicID, st: &ts.PartitionStates[j]})
		}
	}
	hws := map[string]map[TopicPartition]int64{} // replication-offset-checkpoints read for this request
	codes := make([]int16, len(parts))
	for i, lp := range parts {
		codes[i] = ErrorCode(m.applyPartitionState(lp.topic, lp.st, hws, now))
	}
	m.signal()
	// The response, grouped as the version wants it.
	if req.Version < 5 {
		for i, lp := range parts {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition, rp.ErrorCode = lp.topic, lp.st.Partition, codes[i]
			resp.Partitions = append(resp.Partitions, rp)
		}
		return resp
	}
	for i, lp := range parts {
		if i == 0 || parts[i-1].topic != lp.topic {
			t := kmsg.NewLeaderAndISRResponseTopic()
			t.TopicID = lp.topicID
			resp.Topics = append(resp.Topics, t)
		}
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Partition, rp.ErrorCode = lp.st.Partition, codes[i]
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp
}

// applyPartitionState is one partition of a LeaderAndIsr (mu held).
func (m *Manager) applyPartitionState(topic string, st *kmsg.LeaderAndISRRequestTopicPartition, hws map[string]map[TopicPartition]int64, now int64) error {
	tp := TopicPartition{Topic: topic, Partition: st.Partition}
	p := m.parts[tp]
	current := int32(-1)
	if p != nil {
		current = p.LeaderEpoch()
	}
	switch {
	case st.LeaderEpoch <= current:
		m.cfg.Logger.Info("ignoring LeaderAndIsr: leader epoch not newer", "topic", topic, "partition", st.Partition, "leader_epoch", st.LeaderEpoch, "current", current)
		return ErrStaleControllerEpoch
	case !slices.Contains(st.Replicas, m.cfg.BrokerID):
		m.cfg.Logger.Warn("ignoring LeaderAndIsr: not an assigned replica", "topic", topic, "partition", st.Partition, "replicas", st.Replicas)
		return ErrUnknownPartition
	}
	if p == nil {
		var err error
		if p, err = m.open(tp, st.IsNew, hws); err != nil {
			m.cfg.Logger.Error("cannot open partition log", "topic", topic, "partition", st.Partition, "err", err)
			return err
		}
		m.insert(p)
	}
	s := PartitionState{
		ControllerEpoch: st.ControllerEpoch,
		Leader:          st.Leader,
		LeaderEpoch:     st.LeaderEpoch,
		ISR:             st.ISR,
		PartitionEpoch:  st.ZKVersion,
		Replicas:        st.Replicas,
		IsNew:           st.IsNew,
	}
	var err error
	if st.Leader == m.cfg.BrokerID {
		_, err = p.MakeLeader(s, now)
	} else {
		_, err = p.MakeFollower(s, now)
	}
	return err
}

// open opens a partition's log and loads its replication state (mu held).
func (m *Manager) open(tp TopicPartition, isNew bool, hws map[string]map[TopicPartition]int64) (*Partition, error) {
	l, err := m.cfg.OpenLog(tp, OpenOptions{IsNew: isNew, StartAt: -1})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	logDir := parentDir(l.Dir())
	hw, ok := hws[logDir]
	if !ok {
		hw = m.readHighWatermarks(l.Options().FS, logDir)
		hws[logDir] = hw
	}
	p, err := newPartition(tp, l, hw[tp], &m.cfg)
	if err != nil {
		l.Close()
		return nil, err
	}
	p.onChange = m.signal
	p.reopen = func(startAt int64) (*segment.Log, error) {
		return m.cfg.OpenLog(tp, OpenOptions{StartAt: startAt})
	}
	return p, nil
}

// readHighWatermarks reads a log dir's replication-offset-checkpoint; a
// missing or unreadable one gives no high watermarks (they start at 0, which
// is only ever too low: followers learn the leader's, a new leader's moves up
// as its followers fetch).
func (m *Manager) readHighWatermarks(fsys vfs.FS, logDir string) map[TopicPartition]int64 {
	hw, err := ReadHighWatermarks(fsys, logDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.cfg.Logger.Warn("replication-offset-checkpoint unreadable: high watermarks start at 0", "dir", logDir, "err", err)
	}
	return hw
}

// stopPartitionState is one partition of a StopReplica.
type stopPartitionState struct {
	tp          TopicPartition
	leaderEpoch int32
	del         bool
}

// StopReplica applies a StopReplica request (Kafka's stopReplicas): a stale
// broker or controller epoch is refused whole; a partition whose request leader epoch
// (v3+; -1 and -2 always match) is not newer than its own answers
// FENCED_LEADER_EPOCH; the others stop replicating (waiting produces answer
// NOT_LEADER_OR_FOLLOWER) and, with delete, are closed, forgotten and their
// logs deleted.
func (m *Manager) StopReplica(req *kmsg.StopReplicaRequest, now int64) *kmsg.StopReplicaResponse {
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.staleBrokerEpoch(req.BrokerEpoch) {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	if req.ControllerEpoch < m.controllerEpoch {
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return resp
	}
	m.controllerEpoch = req.ControllerEpoch
	var states []stopPartitionState
	for _, t := range req.Topics {
		if req.Version == 0 {
			states = append(states, stopPartitionState{TopicPartition{Topic: t.Topic, Partition: t.Partition}, -1, req.DeletePartitions})
		}
		for _, p := range t.Partitions {
			states = append(states, stopPartitionState{TopicPartition{Topic: t.Topic, Partition: p}, -1, req.DeletePartitions})
		}
		for _, ps := range t.PartitionStates {
			states = append(states, stopPartitionState{TopicPartition{Topic: t.Topic, Partition: ps.Partition}, ps.LeaderEpoch, ps.Delete})
		}
	}
	for _, s := range states {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = s.tp.Topic, s.tp.Partition
		rp.ErrorCode = ErrorCode(m.stopPartition(s))
		resp.Partitions = append(resp.Partitions, rp)
	}
	m.signal()
	return resp
}

func (m *Manager) stopPartition(s stopPartitionState) error {
	p := m.parts[s.tp]
	if p == nil {
		return nil
	}
	if cur := p.LeaderEpoch(); s.leaderEpoch != -1 && s.leaderEpoch != -2 && s.leaderEpoch <= cur {
		return fmt.Errorf("%w: StopReplica at leader epoch %d, partition at %d", ErrFencedLeaderEpoch, s.leaderEpoch, cur)
	}
	p.Stop()
	if !s.del {
		return nil
	}
	m.remove(p)
	if err := p.close(); err != nil {
		m.cfg.Logger.Warn("closing a deleted partition's log", "topic", s.tp.Topic, "partition", s.tp.Partition, "err", err)
	}
	if err := m.cfg.DeleteLog(s.tp, p.Log()); err != nil {
		return fmt.Errorf("%w: deleting %s: %w", ErrStorage, s.tp, err)
	}
	return nil
}

// HighWatermarks returns every partition's high watermark, grouped by log
// dir, as replication-offset-checkpoint keeps them.
func (m *Manager) HighWatermarks() map[string]map[TopicPartition]int64 {
	m.mu.Lock()
	parts := slices.Clone(m.order)
	m.mu.Unlock()
	out := map[string]map[TopicPartition]int64{}
	for _, p := range parts {
		d := p.logDir()
		if out[d] == nil {
			out[d] = map[TopicPartition]int64{}
		}
		out[d][p.tp] = p.CheckpointHighWatermark()
	}
	return out
}

// CheckpointHighWatermarks writes replication-offset-checkpoint in every online log
// dir holding a partition (Kafka: every replica.high.watermark.checkpoint.
// interval.ms and at shutdown). The first error is returned; the other dirs
// are still written.
func (m *Manager) CheckpointHighWatermarks() error {
	m.mu.Lock()
	parts := slices.Clone(m.order)
	m.mu.Unlock()
	byDir := map[string]map[TopicPartition]int64{}
	fsOf := map[string]vfs.FS{}
	offline := map[string]bool{}
	var dirs []string
	for _, p := range parts {
		d := p.logDir()
		if p.Log().Health().Err() != nil {
			offline[d] = true // Kafka checkpoints live log dirs only
		}
		if byDir[d] == nil {
			byDir[d] = map[TopicPartition]int64{}
			fsOf[d] = p.fs
			dirs = append(dirs, d)
		}
		byDir[d][p.tp] = p.CheckpointHighWatermark()
	}
	var first error
	for _, d := range dirs {
		if offline[d] {
			continue
		}
		if err := WriteHighWatermarks(fsOf[d], d, byDir[d]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close closes every partition's log. The Manager takes nothing after.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var first error
	for _, p := range m.order {
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ReadHighWatermarks reads logDir's replication-offset-checkpoint. A missing
// file is an error matching fs.ErrNotExist (and an empty map).
func ReadHighWatermarks(fsys vfs.FS, logDir string) (map[TopicPartition]int64, error) {
	m, err := checkpoint.ReadOffsets(fsys, logDir+"/"+checkpoint.ReplicationOffsetFile)
	if m == nil {
		m = map[TopicPartition]int64{}
	}
	return m, err
}

// WriteHighWatermarks durably replaces logDir's
// replication-offset-checkpoint (tmp, fsync, rename, fsync of the dir).
func WriteHighWatermarks(fsys vfs.FS, logDir string, hw map[TopicPartition]int64) error {
	if err := checkpoint.WriteOffsets(fsys, logDir+"/"+checkpoint.ReplicationOffsetFile, hw); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}
