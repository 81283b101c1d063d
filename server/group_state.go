package server

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is Kafka's classic group state.
type groupState int8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	}
	return "Dead"
}

// member is one group member.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	joinCh      chan joinResult // set while a JoinGroup is parked
	syncCh      chan syncResult // set while a SyncGroup is parked
	pendingSync bool            // joined this generation, no SyncGroup yet
	lastHB      time.Time
	timer       *time.Timer
}

// joinResult is what a JoinGroup is answered with.
type joinResult struct {
	code         int16
	generation   int32
	protocolType string
	protocol     string
	leader       string
	memberID     string
	members      []kmsg.JoinGroupResponseMember
}

// syncResult is what a SyncGroup is answered with.
type syncResult struct {
	code         int16
	protocolType string
	protocol     string
	assignment   []byte
}

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTs    int64
	expireTs    int64 // -1 unless the commit set a retention time
}

// group is one consumer group (or a standalone group holding only
// offsets). Every field is guarded by mu.
type group struct {
	co *coordinator
	id string

	mu           sync.Mutex
	state        groupState
	stateTs      time.Time // when the state last changed (Kafka's currentStateTimestamp)
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	instances    map[string]string      // group.instance.id -> member id
	pending      map[string]*time.Timer // ids handed out with MEMBER_ID_REQUIRED

	rebalanceSeq   uint64 // bumped to invalidate a rebalance timer
	rebalanceTimer *time.Timer
	initialDelay   bool      // in the initial rebalance delay of an empty group
	delayDeadline  time.Time // the latest the initial delay may run to
	lastJoin       time.Time // last JoinGroup of the rebalance in progress
	syncsLeft      int       // SyncGroup answers still due this generation
	syncSeq        uint64    // bumped to invalidate a pending-sync timer
	syncTimer      *time.Timer

	offsets map[topicPartition]offsetEntry
	stopped bool // the coordinator shut down: timers do nothing
}

func newGroup(co *coordinator, id string) *group {
	return &group{co: co, id: id, state: groupEmpty, stateTs: time.Now(),
		members: map[string]*member{}, instances: map[string]string{}, pending: map[string]*time.Timer{},
		offsets: map[topicPartition]offsetEntry{}}
}

func (g *group) setState(s groupState) {
	g.state = s
	g.stateTs = time.Now()
}

// newMemberID is Kafka's member id: the client id, '-', a random UUID.
func newMemberID(clientID string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// shutdown answers parked requests and stops every timer (g.mu held).
func (g *group) shutdown() { g.shutdownWith(kerr.CoordinatorNotAvailable.Code) }

// shutdownWith is shutdown answering parked requests with code (cluster
// mode's unload: NOT_COORDINATOR, the group moved).
func (g *group) shutdownWith(code int16) {
	g.stopped = true
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	g.rebalanceSeq++
	g.stopSyncTimer()
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	for _, m := range g.members {
		if m.timer != nil {
			m.timer.Stop()
		}
		if m.joinCh != nil {
			m.joinCh <- joinResult{code: code, memberID: m.id, generation: -1}
			m.joinCh = nil
		}
		if m.syncCh != nil {
			m.syncCh <- syncResult{code: code}
			m.syncCh = nil
		}
	}
}
