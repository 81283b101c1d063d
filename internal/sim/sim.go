package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/cluster/zksim"
	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/replica"
)

// Start is the simulated clock's start: a realistic wall-clock time in
// milliseconds (times of 0 must look long ago).
const Start = int64(1_700_000_000_000)

// Options shape a run. Zero values take the defaults in parentheses.
type Options struct {
	Seed       uint64
	Brokers    int   // (3) brokers, ids 1..Brokers
	Partitions int   // (2) partitions of each topic, each replicated on every broker
	MinISR     int   // (2) min.insync.replicas of the topics
	DurationMs int64 // (10000) simulated time with load and faults
	// FlushEveryMessage sets flush.messages=1 on every log; otherwise
	// nothing is fsynced but checkpoints (Kafka's default) and power loss is
	// restricted (see the package doc).
	FlushEveryMessage bool
	// Faults turns on crashes, power loss, network and ZooKeeper faults,
	// controller moves and leader elections.
	Faults bool
	// PowerLossInRollWindow lets a power loss without application fsync
	// strike while a log's flush after a roll is pending (its sealed
	// segment's tail unsynced, the new segment's data maybe written back
	// first). Off, a power loss first runs the broker's pending log work.
	// On, segment recovery can leave a gap inside a log (see the package
	// doc: a known storage bug, seed 70). With FlushEveryMessage the window
	// is always open (the sealed segment is synced already).
	PowerLossInRollWindow bool
	// Verbose keeps the whole trace.
	Verbose bool

	LagTimeMs        int64 // (1000) replica.lag.time.max.ms
	SessionTimeoutMs int64 // (1500) zookeeper.session.timeout.ms
	FetchWaitMs      int64 // (100) replica.fetch.wait.max.ms
	BackoffMs        int64 // (50) replica.fetch.backoff.ms
	FetchMaxBytes    int32 // (2048) replica.fetch.max.bytes: small, so catching up takes many fetches
	SegmentBytes     int64 // (4096) segment.bytes: small, so logs roll often
	ProduceTimeoutMs int64 // (2000) the producer's request timeout
	QuiesceMs        int64 // (60000) how long the healed cluster gets to converge
}

func (o *Options) defaults() {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	if o.Brokers == 0 {
		o.Brokers = 3
	}
	if o.Partitions == 0 {
		o.Partitions = 2
	}
	if o.MinISR == 0 {
		o.MinISR = 2
	}
	if o.FetchMaxBytes == 0 {
		o.FetchMaxBytes = 2048
	}
	def(&o.DurationMs, 10000)
	def(&o.LagTimeMs, 1000)
	def(&o.SessionTimeoutMs, 1500)
	def(&o.FetchWaitMs, 100)
	def(&o.BackoffMs, 50)
	def(&o.SegmentBytes, 4096)
	def(&o.ProduceTimeoutMs, 2000)
	def(&o.QuiesceMs, 60000)
}

// simTopic is a topic the admin creates (or will).
type simTopic struct {
	Name     string
	Replicas [][]int32
	created  bool
}

// simPart is a partition of a created topic; its index in Sim.Parts is its
// number in the history.
type simPart struct {
	TP       replica.TopicPartition
	Replicas []int32
}

type leaderKey struct {
	part  int // index in Sim.Parts
	epoch int32
}

type uncleanKey struct {
	tp     replica.TopicPartition
	broker int32
}

// Sim is one simulated cluster.
type Sim struct {
	Opt     Options
	W       *World
	Net     *Network
	ZK      *zksim.Server
	Brokers []*Broker // index = broker id; [0] is nil (the clients' node)
	Hist    *History
	Topics  []*simTopic
	Parts   []*simPart

	admin        *zksim.Session
	adminSession int64
	cl           clients
	zkCut        []bool // broker cut off ZooKeeper
	zkLossRate   float64
	watchLag     int64

	electedBy    map[int32]int32 // controller epoch -> the broker that won it
	maxCtrlEpoch int32
	zkState      map[replica.TopicPartition]cluster.PartitionState // the state znodes as written
	unclean      map[uncleanKey]bool                               // lost power while in the partition's ISR, not out of it since

	seq        int
	violations []string
	obs        [][]observation // [broker][partition index]
	leaderOf   map[leaderKey]int32
	loadOn     bool
	stats      Stats
	report     *history.Report
	reads      map[replica.TopicPartition]map[int64]string // what consumers read: offset -> value
	deleted    map[replica.TopicPartition]int64            // the highest DeleteRecords offset applied
	randSeq    uint64
}

// Stats count what a run did.
type Stats struct {
	ProcessCrashes, PowerLosses, PowerLossesMidWrite, LinkCuts, Isolations, ZKIsolations, SessionExpiries,
	ControllerMoves, PreferredElections, ControlledShutdowns, DeleteRecords, ZKFaultPeriods, TopicsCreated int
	// (PowerLossesMidWrite: of PowerLosses, those that struck inside a disk
	// operation.) What the faults led to: controller elections, controller writes that
	// landed, and those fenced; ZooKeeper calls whose request or response
	// was lost; fetches answered with a diverging epoch, with
	// OFFSET_OUT_OF_RANGE, with FENCED_LEADER_EPOCH; ListOffsets sent; log
	// background tasks (flushes after rolls); fetches sent ahead of the
	// answer before them (FetchAhead), those of them on a view of the
	// answer before as it arrived (the Runner's early send), and the
	// partitions of their answers that applied and that were dropped (the
	// log no longer ended at the offset fetched).
	Elections, ControllerWrites, FencedWrites, ZKCallsLost      int
	Diverging, OutOfRange, Fenced, ListOffsets, BackgroundTasks int
	FetchesAhead, FetchesEarly, AheadApplied, AheadDropped      int
	Steps                                                       int
}

// New builds a cluster: ZooKeeper, brokers started and registered, a
// controller elected, topic "t" created through the admin znodes with every
// broker in every partition's replicas (assignments rotated); topic "u"
// follows during the run.
func New(opt Options) *Sim {
	opt.defaults()
	s := &Sim{
		Opt: opt, W: NewWorld(opt.Seed, Start, opt.Verbose), Hist: newHistory(),
		electedBy: map[int32]int32{}, zkState: map[replica.TopicPartition]cluster.PartitionState{},
		unclean: map[uncleanKey]bool{}, obs: make([][]observation, opt.Brokers+1), leaderOf: map[leaderKey]int32{},
		reads: map[replica.TopicPartition]map[int64]string{}, deleted: map[replica.TopicPartition]int64{},
		cl:    clients{meta: map[replica.TopicPartition]partMeta{}, controller: -1, pos: map[replica.TopicPartition]int64{}},
		zkCut: make([]bool, opt.Brokers+1),
	}
	s.setupZK()
	s.Brokers = make([]*Broker, opt.Brokers+1)
	nodes := make([]Node, opt.Brokers+1)
	nodes[ClientNode] = clientNode{}
	for id := 1; id <= opt.Brokers; id++ {
		s.Brokers[id] = newBroker(s, int32(id))
		nodes[id] = s.Brokers[id]
	}
	s.Net = NewNetwork(s.W, nodes)
	for _, name := range []string{"t", "u"} {
		t := &simTopic{Name: name}
		for p := range opt.Partitions {
			var rs []int32
			for i := range opt.Brokers {
				rs = append(rs, int32((p+i+len(s.Topics))%opt.Brokers+1))
			}
			t.Replicas = append(t.Replicas, rs)
		}
		s.Topics = append(s.Topics, t)
	}
	for _, b := range s.Brokers[1:] {
		b.start()
	}
	s.RunFor(200) // registrations, election
	s.createTopic(s.Topics[0])
	s.RunFor(200)
	s.refreshMeta()
	s.RunFor(100)
	return s
}

type clientNode struct{}

func (clientNode) Alive() (bool, int) { return true, 0 }

// childRand is a random source for a component (the controller's topic
// ids), drawn from the run's.
func (s *Sim) childRand() *rand.Rand {
	s.randSeq++
	return rand.New(rand.NewPCG(s.W.Rand.Uint64(), s.randSeq))
}

// step runs one event and what follows every event: the brokers settle and
// the step invariants are checked.
func (s *Sim) step(until int64) bool {
	if !s.W.Step(until) {
		return false
	}
	for _, b := range s.Brokers[1:] {
		b.settle()
	}
	s.checkStep()
	return true
}

// RunFor runs the simulation for d milliseconds.
func (s *Sim) RunFor(d int64) {
	end := s.W.Now + d
	for s.step(end) {
	}
	s.W.Now = max(s.W.Now, end)
}

// Run runs the whole scenario: load (and faults) for DurationMs, then heal
// everything, let the cluster converge, stop it and check. It returns an
// error describing every violation.
func (s *Sim) Run() error {
	s.startLoad()
	if s.Opt.Faults {
		s.scheduleFault()
	}
	s.W.After(s.W.Between(0, s.Opt.DurationMs/2), func() {
		s.stats.TopicsCreated++
		s.createTopic(s.Topics[1])
	})
	s.RunFor(s.Opt.DurationMs)
	s.loadOn = false
	if err := s.Heal(); err != nil {
		return err
	}
	s.finalCheck()
	s.stats.Steps = s.W.Steps()
	return s.Err()
}

// Err reports the violations seen so far.
func (s *Sim) Err() error {
	if len(s.violations) == 0 {
		return nil
	}
	return errors.New(strings.Join(s.violations, "\n"))
}

// Stats returns what the run did.
func (s *Sim) Stats() Stats { return s.stats }

// Report is internal/history's report of the final check (nil before).
func (s *Sim) Report() *history.Report { return s.report }

// Heal stops the faults, reconnects everything, restarts the brokers that are
// down, and runs until the cluster converges (or QuiesceMs passes: a
// violation).
func (s *Sim) Heal() error {
	s.Opt.Faults = false
	for _, b := range s.Brokers[1:] {
		b.powerIn = 0
	}
	s.zkLossRate, s.watchLag = 0, 0
	s.Net.HealAll()
	s.Net.MaxDelayMs, s.Net.DropRate = 20, 0.01
	for _, b := range s.Brokers[1:] {
		s.cutZK(b, false)
	}
	for _, b := range s.Brokers[1:] {
		if !b.up {
			b.start()
		}
	}
	deadline := s.W.Now + s.Opt.QuiesceMs
	for s.W.Now < deadline {
		s.RunFor(100)
		if s.converged() {
			return nil
		}
	}
	s.fail("the healed cluster did not converge in %d ms: %s", s.Opt.QuiesceMs, s.describe())
	return s.Err()
}

// activeController returns the member whose controller is active, if
// exactly one is.
func (s *Sim) activeController() *member {
	var found *member
	for _, b := range s.Brokers[1:] {
		if b.up && b.member.state == ctrlActive {
			if found != nil {
				return nil
			}
			found = b.member
		}
	}
	return found
}

// describe summarises the cluster for reports.
func (s *Sim) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  /controller names %d, epoch %d", s.controllerNow(), s.maxCtrlEpoch)
	for _, br := range s.Brokers[1:] {
		if br.up {
			fmt.Fprintf(&b, "\n  broker %d: up, %s, metadata controller %d", br.ID, br.member.describe(), br.meta.controller)
		} else {
			fmt.Fprintf(&b, "\n  broker %d: down", br.ID)
		}
	}
	for _, sp := range s.Parts {
		st, ok := s.zkState[sp.TP]
		fmt.Fprintf(&b, "\n  %s: zookeeper %v leader %d epoch %d isr %v", sp.TP, ok, st.Leader, st.LeaderEpoch, st.ISR)
		for _, r := range sp.Replicas {
			p := s.Brokers[r].partition(sp.TP)
			if p == nil {
				fmt.Fprintf(&b, "\n    broker %d: no partition", r)
				continue
			}
			fmt.Fprintf(&b, "\n    broker %d: %v of %d epoch %d isr %v leo %d hw %d epochs %v failed %v",
				r, p.Role(), p.Leader(), p.LeaderEpoch(), p.ISR(), p.Log().LogEndOffset(), p.HighWatermark(), p.Epochs(), p.Failed())
		}
	}
	return b.String()
}

// startLoad runs the producer, the consumer and metadata refreshes until the
// load stops.
func (s *Sim) startLoad() {
	s.loadOn = true
	var produce, consume, meta func()
	produce = func() {
		if !s.loadOn {
			return
		}
		if len(s.Parts) > 0 {
			s.produce(s.W.Intn(len(s.Parts)))
		}
		s.W.After(s.W.Between(2, 30), produce)
	}
	consume = func() {
		if !s.loadOn {
			return
		}
		if len(s.Parts) > 0 {
			s.consume(s.W.Intn(len(s.Parts)))
		}
		s.W.After(s.W.Between(10, 100), consume)
	}
	meta = func() {
		if !s.loadOn {
			return
		}
		s.refreshMeta()
		s.W.After(s.W.Between(200, 1000), meta)
	}
	s.W.After(1, produce)
	s.W.After(10, consume)
	s.W.After(5, meta)
}

func (s *Sim) randomBroker() *Broker { return s.Brokers[1+s.W.Intn(s.Opt.Brokers)] }

func (s *Sim) upBrokers() []*Broker {
	return slices.DeleteFunc(slices.Clone(s.Brokers[1:]), func(b *Broker) bool { return !b.up })
}
