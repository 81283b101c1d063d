package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerOptions are the broker configs the controller decides with.
// A nil *ControllerOptions means Kafka's defaults; in a non-nil one a zero
// number means its default, booleans are taken as they are.
type ControllerOptions struct {
	// UncleanLeaderElectionEnable is the broker default of
	// unclean.leader.election.enable (Kafka: false); a topic override wins.
	UncleanLeaderElectionEnable bool
	// DeleteTopicEnable is delete.topic.enable (Kafka: true). When false,
	// deletion requests are removed without deleting anything.
	DeleteTopicEnable bool
	// LeaderImbalancePerBrokerPercentage is
	// leader.imbalance.per.broker.percentage (default 10).
	LeaderImbalancePerBrokerPercentage int
	// InterBrokerListener names the listener whose endpoint LeaderAndIsr's
	// live_leaders carry (inter.broker.listener.name, default PLAINTEXT);
	// a broker without it is given its first endpoint.
	InterBrokerListener string
	// MaxWriteBatchBytes bounds the estimated size of one ZooKeeper multi
	// (default 256 KiB, a quarter of ZooKeeper's 1 MiB jute.maxbuffer).
	MaxWriteBatchBytes int
	// OnElection, if set, is told of each leader elected for an offline
	// partition (unclean: from outside the ISR), for the broker's
	// ControllerStats. It runs on the controller's event loop.
	OnElection func(unclean bool)
	// OnElectionTime, if set, is told after the driver carried out an
	// event in which the controller elected leaders for offline
	// partitions how long that took: the Step and its ZooKeeper writes
	// (Kafka's LeaderElectionRateAndTimeMs times its controller's handling
	// of such an event, ZooKeeper writes included).
	OnElectionTime func(time.Duration)
	// Rand draws the topic ids the controller writes for topics that have
	// none. The driver must seed it randomly (crypto/rand); nil uses a
	// fixed seed, for tests.
	Rand *rand.Rand
}

func (o *ControllerOptions) withDefaults() ControllerOptions {
	var r ControllerOptions
	if o == nil {
		r.DeleteTopicEnable = true
	} else {
		r = *o
	}
	if r.LeaderImbalancePerBrokerPercentage == 0 {
		r.LeaderImbalancePerBrokerPercentage = 10
	}
	if r.InterBrokerListener == "" {
		r.InterBrokerListener = "PLAINTEXT"
	}
	if r.MaxWriteBatchBytes <= 0 {
		r.MaxWriteBatchBytes = 256 << 10
	}
	if r.Rand == nil {
		r.Rand = rand.New(rand.NewPCG(0x5747a7a, 0xc0de))
	}
	return r
}

// Request versions the controller sends. kmsg v1.15.1 encodes each of
// them as Kafka does (its StopReplica v4 and UpdateMetadata v8 do not).
const (
	LeaderAndISRVersion   int16 = 5 // Kafka 2.8 (IBP 2.8-IV1): topic ids
	UpdateMetadataVersion int16 = 7 // Kafka 2.8 (IBP 2.8-IV1): topic ids
	StopReplicaVersion    int16 = 3 // Kafka 2.6+ (KIP-570): per-partition leader epoch and delete flag
)

// WriteBatch is one ZooKeeper multi the driver must apply with ZK.Multi and
// report with Step(WriteResult{Batch: ID, ...}). Ops[0] is always the
// fencing check of /controller_epoch at the version this controller
// incremented it to.
type WriteBatch struct {
	ID  uint64
	Ops []Op
}

// Request is a control request for broker Broker. ID identifies it in the
// RequestResult the driver steps back.
type Request struct {
	ID     uint64
	Broker int32
	Msg    kmsg.Request // *kmsg.LeaderAndISRRequest, *kmsg.UpdateMetadataRequest or *kmsg.StopReplicaRequest
}

// Reply answers the controller request event with the same ID
// (AlterPartition, ControlledShutdown, ElectLeaders).
type Reply struct {
	ID  uint64
	Msg kmsg.Response
}

// Ready is what the controller wants done; Ready() hands it out once.
type Ready struct {
	// Writes are to be applied one at a time, in order, each reported
	// with a WriteResult before the next is started.
	Writes []WriteBatch
	// Requests are to be sent now: per broker in this order (one
	// connection, Kafka's per-broker queue), each reported with a
	// RequestResult.
	Requests []Request
	// Replies are to be sent now.
	Replies []Reply
	// Log lines worth the state-change log (unclean elections, refused
	// inputs, failures).
	Log []string
	// Resigned: the controller stopped (a fenced write, Resign, or an
	// activation naming another broker); it is inactive until Activate.
	Resigned bool
	// Reload: a write failed without proof of fencing (connection loss,
	// an unexpected version or node); the controller is inactive until
	// the driver steps Activate with a fresh LoadSnapshot.
	Reload bool
}

// Empty tells whether r holds nothing to do.
func (r *Ready) Empty() bool {
	return len(r.Writes) == 0 && len(r.Requests) == 0 && len(r.Replies) == 0 && len(r.Log) == 0 && !r.Resigned && !r.Reload
}

// Controller is the ZooKeeper-mode controller as a deterministic state
// machine: Step applies one event, Ready returns the writes, requests and
// replies decided since the last call. See the package documentation for
// the driver's contract. It is not safe for concurrent use.
type Controller struct {
	id   int32
	opts ControllerOptions
	// offlineElected counts the leaders elected for offline partitions
	// (the driver times the events that raise it).
	offlineElected uint64

	active       bool
	epoch        int32
	epochVersion int32

	brokers      map[int32]*Broker // live, including shutting down
	shuttingDown map[int32]bool
	offlineDirs  map[int32]map[TopicPartition]bool // replicas on failed log dirs
	topics       map[string]*ctopic
	names        []string                   // sorted topic names
	tombstones   map[string][16]byte        // topics this controller deleted: a late event listing them is stale
	adminDeleted map[string]bool            // /admin/delete_topics children deleted without a topic
	logDirDone   map[string]bool            // log dir notification znodes deleted
	zkReassign   map[TopicPartition][]int32 // reassignments of /admin/reassign_partitions in progress

	// ZooKeeper writes.
	ops       []Op
	expects   []int32 // per op: the version a set must produce, or -1
	opsBytes  int
	nextBatch uint64
	lastBatch uint64 // last batch cut
	inflight  []inflightBatch
	outWrites []WriteBatch

	// Requests and replies.
	rb         reqBatch
	held       []heldOut
	nextReq    uint64
	awaiting   map[uint64]awaitReq
	outReqs    []Request
	outReplies []Reply

	log      []string
	resigned bool
	reload   bool
	scratch  []byte
}

type ctopic struct {
	name           string
	id             [16]byte
	version        int32
	configs        map[string]string
	parts          []cpart
	partitionsNode bool
	extraNodes     []string
	deleting       bool
	deleteNode     bool
	del            *deletion
}

type cpart struct {
	replicas []int32
	node     bool // /brokers/topics/T/partitions/P exists
	hasState bool
	st       PartitionState
	// adding and removing: the reassignment in progress (controller_reassign.go).
	adding, removing []int32
}

type inflightBatch struct {
	id      uint64
	expects []int32
}

// NewController returns an inactive controller for broker id.
func NewController(id int32, opts *ControllerOptions) *Controller {
	c := &Controller{id: id, opts: opts.withDefaults()}
	c.clear()
	return c
}

func (c *Controller) clear() {
	c.active = false
	c.brokers = map[int32]*Broker{}
	c.shuttingDown = map[int32]bool{}
	c.offlineDirs = map[int32]map[TopicPartition]bool{}
	c.topics = map[string]*ctopic{}
	c.names = nil
	c.tombstones = map[string][16]byte{}
	c.adminDeleted = map[string]bool{}
	c.logDirDone = map[string]bool{}
	c.zkReassign = map[TopicPartition][]int32{}
	c.ops, c.expects, c.opsBytes = nil, nil, 0
	c.inflight = nil
	c.rb = reqBatch{}
	c.awaiting = map[uint64]awaitReq{}
}

// Active tells whether the controller is active (activated and not since
// resigned or waiting for a reload).
func (c *Controller) Active() bool { return c.active }

// Epoch is the controller epoch it acts with, and the version of
// /controller_epoch its writes are fenced on.
func (c *Controller) Epoch() (epoch, version int32) { return c.epoch, c.epochVersion }

// Step applies one event.
func (c *Controller) Step(ev Event) {
	switch e := ev.(type) {
	case Activate:
		c.activate(e.Snapshot)
	case Resign:
		if c.active {
			c.stop(true, "resigned: "+e.Reason)
		}
	case WriteResult:
		c.onWriteResult(e)
	case AlterPartition:
		c.onAlterPartition(e)
	case ControlledShutdown:
		c.onControlledShutdown(e)
	case ElectLeaders:
		c.onElectLeaders(e)
	case AlterReassignments:
		c.onAlterReassignments(e)
	case ListReassignments:
		c.onListReassignments(e)
	default:
		if !c.active {
			return
		}
		switch e := ev.(type) {
		case BrokersChanged:
			c.onBrokers(e.Brokers)
		case TopicsChanged:
			c.onTopics(e.Topics)
		case TopicConfigChanged:
			c.onTopicConfig(e.Topic, e.Configs)
		case DeletionsRequested:
			c.onDeletions(e.Topics)
		case LogDirEvents:
			c.onLogDirEvents(e.Events)
		case RebalanceTick:
			c.onRebalanceTick()
		case ReassignZnode:
			c.onReassignZnode(e)
		case RequestResult:
			c.onRequestResult(e)
		}
	}
	if c.active {
		c.flush()
	}
}

// Ready returns what was decided since the last call and forgets it.
func (c *Controller) Ready() Ready {
	r := Ready{
		Writes:   c.outWrites,
		Requests: c.outReqs,
		Replies:  c.outReplies,
		Log:      c.log,
		Resigned: c.resigned,
		Reload:   c.reload,
	}
	c.outWrites, c.outReqs, c.outReplies, c.log = nil, nil, nil, nil
	c.resigned, c.reload = false, false
	return r
}

func (c *Controller) logf(format string, args ...any) {
	c.log = append(c.log, fmt.Sprintf("controller %d epoch %d: ", c.id, c.epoch)+fmt.Sprintf(format, args...))
}

// stop makes the controller inactive: resign (fenced or told) or wait for
// a reload (outcome unknown). Held requests are dropped; held replies are
// answered NOT_CONTROLLER.
func (c *Controller) stop(resign bool, why string) {
	c.logf("%s", why)
	for _, h := range c.held {
		if h.reply != nil {
			c.outReplies = append(c.outReplies, Reply{ID: h.reply.ID, Msg: h.notController()})
		}
	}
	c.held = nil
	c.outWrites, c.outReqs = nil, nil
	c.clear()
	if resign {
		c.resigned = true
	} else {
		c.reload = true
	}
}

// flush ends a step: pending writes become a batch, the requests decided
// become held or ready.
func (c *Controller) flush() {
	c.cutWrites()
	c.flushRequests()
}

// --- topic and broker helpers ---

func (c *Controller) addTopicName(name string) {
	i := sort.SearchStrings(c.names, name)
	if i < len(c.names) && c.names[i] == name {
		return
	}
	c.names = slices.Insert(c.names, i, name)
}

func (c *Controller) removeTopic(name string) {
	delete(c.topics, name)
	if i := sort.SearchStrings(c.names, name); i < len(c.names) && c.names[i] == name {
		c.names = slices.Delete(c.names, i, i+1)
	}
	for _, m := range c.offlineDirs {
		for tp := range m {
			if tp.Topic == name {
				delete(m, tp)
			}
		}
	}
}

// live: registered (including shutting down).
func (c *Controller) live(b int32) bool { return c.brokers[b] != nil }

// online: live, not shutting down, and the partition's log dir not failed
// (Kafka's isReplicaOnline).
func (c *Controller) online(b int32, tp TopicPartition) bool {
	if c.brokers[b] == nil || c.shuttingDown[b] {
		return false
	}
	return !c.offlineDirs[b][tp]
}

func (c *Controller) sortedBrokerIDs() []int32 {
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (t *ctopic) unclean(def bool) bool {
	if v, ok := t.configs[UncleanLeaderElectionConfig]; ok {
		return strings.EqualFold(v, "true")
	}
	return def
}
