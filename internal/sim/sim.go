package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	Partitions int   // (2) partitions of topic "t", each replicated on every broker
	MinISR     int   // (2) min.insync.replicas of the producer's acks=-1
	DurationMs int64 // (20000) simulated time with load and faults
	// FlushEveryMessage sets flush.messages=1 on every log; otherwise
	// nothing is fsynced but checkpoints (Kafka's default) and power loss is
	// restricted (see the package doc).
	FlushEveryMessage bool
	// Faults turns on crashes, power loss, network faults and leader moves.
	Faults bool
	// Verbose keeps the whole trace.
	Verbose bool

	LagTimeMs        int64 // (1000) replica.lag.time.max.ms
	SessionTimeoutMs int64 // (1500) zookeeper.session.timeout.ms
	FetchWaitMs      int64 // (100) replica.fetch.wait.max.ms
	BackoffMs        int64 // (50) replica.fetch.backoff.ms
	FetchMaxBytes    int32 // (2048) replica.fetch.max.bytes: small, so catching up takes many fetches
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
	def(&o.DurationMs, 20000)
	def(&o.LagTimeMs, 1000)
	def(&o.SessionTimeoutMs, 1500)
	def(&o.FetchWaitMs, 100)
	def(&o.BackoffMs, 50)
	def(&o.ProduceTimeoutMs, 2000)
	def(&o.QuiesceMs, 60000)
}

// Sim is one simulated cluster.
type Sim struct {
	Opt     Options
	W       *World
	Net     *Network
	Ctrl    *Controller
	Brokers []*Broker // index = broker id; [0] is nil (the controller's id)
	Hist    *History
	Topic   string

	seq        int
	pending    []*pendingProduce
	violations []string
	obs        [][]observation   // [broker][partition]
	leaderOf   []map[int32]int32 // [partition] epoch -> leader
	lostPower  [][]bool          // [partition][broker]: lost power since it last joined the ISR
	loadOn     bool
	stats      Stats
	report     *history.Report
	reads      map[replica.TopicPartition]map[int64]string // what consumers read: offset -> value
}

// Stats count what a run did.
type Stats struct {
	ProcessCrashes, PowerLosses, LinkCuts, Isolations, LeaderMoves, ControllerFailovers, DeleteRecords int
	// What the faults led to: fetches answered with a diverging epoch, with
	// OFFSET_OUT_OF_RANGE, with FENCED_LEADER_EPOCH; ListOffsets sent.
	Diverging, OutOfRange, Fenced, ListOffsets int
	Steps                                      int
}

// New builds a cluster: brokers started, topic "t" created with every
// broker in every partition's replicas (assignments rotated).
func New(opt Options) *Sim {
	opt.defaults()
	s := &Sim{Opt: opt, W: NewWorld(opt.Seed, Start, opt.Verbose), Hist: newHistory(), Topic: "t", reads: map[replica.TopicPartition]map[int64]string{}}
	s.Brokers = make([]*Broker, opt.Brokers+1)
	nodes := make([]Node, opt.Brokers+1)
	for id := 1; id <= opt.Brokers; id++ {
		s.Brokers[id] = newBroker(s, int32(id))
		nodes[id] = s.Brokers[id]
	}
	s.Ctrl = newController(s)
	nodes[0] = s.Ctrl
	s.Net = NewNetwork(s.W, nodes)
	s.obs = make([][]observation, opt.Brokers+1)
	for i := range s.obs {
		s.obs[i] = make([]observation, opt.Partitions)
	}
	s.leaderOf = make([]map[int32]int32, opt.Partitions)
	s.lostPower = make([][]bool, opt.Partitions)
	for i := range s.leaderOf {
		s.leaderOf[i] = map[int32]int32{}
		s.lostPower[i] = make([]bool, opt.Brokers+1)
	}
	for _, b := range s.Brokers[1:] {
		b.start()
	}
	s.RunFor(50) // registrations
	var assignments [][]int32
	for p := 0; p < opt.Partitions; p++ {
		var rs []int32
		for i := 0; i < opt.Brokers; i++ {
			rs = append(rs, int32((p+i)%opt.Brokers+1))
		}
		assignments = append(assignments, rs)
	}
	s.Ctrl.createTopic(s.Topic, assignments)
	s.RunFor(50)
	return s
}

func (s *Sim) countFetch(r *kmsg.FetchResponse) {
	if r == nil {
		return
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			switch {
			case p.DivergingEpoch.EndOffset >= 0:
				s.stats.Diverging++
			case p.ErrorCode == kerr.OffsetOutOfRange.Code:
				s.stats.OutOfRange++
			case p.ErrorCode == kerr.FencedLeaderEpoch.Code:
				s.stats.Fenced++
			}
		}
	}
}

// TP names partition i of the topic.
func (s *Sim) TP(i int) replica.TopicPartition {
	return replica.TopicPartition{Topic: s.Topic, Partition: int32(i)}
}

// Step runs one event and what follows every event: the brokers settle, the
// pending produces are decided, the step invariants checked.
func (s *Sim) step(until int64) bool {
	if !s.W.Step(until) {
		return false
	}
	for _, b := range s.Brokers[1:] {
		b.settle()
	}
	s.pollProduces()
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
// everything, let the cluster converge, and check. It returns an error
// describing every violation.
func (s *Sim) Run() error {
	s.startLoad()
	if s.Opt.Faults {
		s.scheduleFault()
	}
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
	s.Net.HealAll()
	for _, b := range s.Brokers[1:] {
		s.Ctrl.flush(b.ID)
		if !b.up {
			s.restartWhenExpired(b)
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

// describe summarises the cluster for reports.
func (s *Sim) describe() string {
	var b strings.Builder
	for _, ps := range s.Ctrl.Parts {
		fmt.Fprintf(&b, "\n  controller %s: leader %d epoch %d isr %v version %d", ps.TP, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Version)
		for _, r := range ps.Replicas {
			br := s.Brokers[r]
			p := br.partition(ps.TP)
			if p == nil {
				fmt.Fprintf(&b, "\n    broker %d: up %v live %v, no partition", r, br.up, s.Ctrl.Live(r))
				continue
			}
			fmt.Fprintf(&b, "\n    broker %d: up %v live %v %v of %d epoch %d isr %v leo %d hw %d epochs %v failed %v",
				r, br.up, s.Ctrl.Live(r), p.Role(), p.Leader(), p.LeaderEpoch(), p.ISR(), p.Log().LogEndOffset(), p.HighWatermark(), p.Epochs(), p.Failed())
		}
	}
	return b.String()
}

// startLoad runs the producer and the consumer until the load stops.
func (s *Sim) startLoad() {
	s.loadOn = true
	var produce, consume func()
	produce = func() {
		if !s.loadOn {
			return
		}
		s.produce(s.TP(s.W.Intn(s.Opt.Partitions)))
		s.W.After(s.W.Between(2, 30), produce)
	}
	consume = func() {
		if !s.loadOn {
			return
		}
		s.consume(s.TP(s.W.Intn(s.Opt.Partitions)))
		s.W.After(s.W.Between(20, 200), consume)
	}
	s.W.After(1, produce)
	s.W.After(10, consume)
}

// scheduleFault injects the next fault after a random pause.
func (s *Sim) scheduleFault() {
	s.W.After(s.W.Between(50, 600), func() {
		if !s.Opt.Faults || !s.loadOn {
			return
		}
		s.injectFault()
		s.scheduleFault()
	})
}

func (s *Sim) randomBroker() *Broker { return s.Brokers[1+s.W.Intn(s.Opt.Brokers)] }

func (s *Sim) upBrokers() []*Broker {
	return slices.DeleteFunc(slices.Clone(s.Brokers[1:]), func(b *Broker) bool { return !b.up })
}

// injectFault picks one fault at random.
func (s *Sim) injectFault() {
	switch k := s.W.Intn(100); {
	case k < 15: // a link between two brokers goes down for a while
		a, b := s.randomBroker(), s.randomBroker()
		if a == b {
			return
		}
		s.stats.LinkCuts++
		s.W.Tracef("fault: link %d-%d cut", a.ID, b.ID)
		s.Net.Cut(a.ID, b.ID, true)
		s.W.After(s.W.Between(100, 3000), func() {
			s.W.Tracef("fault: link %d-%d healed", a.ID, b.ID)
			s.Net.Cut(a.ID, b.ID, false)
		})
	case k < 25: // a broker loses ZooKeeper (and the controller), or everyone
		b := s.randomBroker()
		if !b.up {
			return
		}
		all := s.W.Chance(0.5)
		s.stats.Isolations++
		s.W.Tracef("fault: broker %d isolated (from everyone: %v)", b.ID, all)
		s.isolate(b, all, true)
		s.W.After(s.W.Between(200, 4000), func() {
			s.W.Tracef("fault: broker %d reconnected", b.ID)
			s.isolate(b, all, false)
		})
	case k < 37: // a process crash
		ups := s.upBrokers()
		if len(ups) == 0 {
			return
		}
		b := ups[s.W.Intn(len(ups))]
		s.stats.ProcessCrashes++
		b.crash(false)
		s.W.After(s.W.Between(100, 3000), func() { s.restartWhenExpired(b) })
	case k < 47: // a power loss
		ups := s.upBrokers()
		if len(ups) == 0 {
			return
		}
		b := ups[s.W.Intn(len(ups))]
		if !s.powerLossAllowed(b.ID) {
			return
		}
		s.stats.PowerLosses++
		for i := range s.lostPower {
			s.lostPower[i][b.ID] = true
		}
		b.crash(true)
		s.W.After(s.W.Between(100, 3000), func() { s.restartWhenExpired(b) })
	case k < 60: // leadership moves to another live ISR member
		ps := s.Ctrl.Parts[s.W.Intn(len(s.Ctrl.Parts))]
		var cands []int32
		for _, r := range ps.ISR {
			if r != ps.Leader && s.Ctrl.Live(r) {
				cands = append(cands, r)
			}
		}
		if ps.Leader < 0 || len(cands) == 0 {
			return
		}
		s.stats.LeaderMoves++
		s.Ctrl.moveLeader(ps, cands[s.W.Intn(len(cands))])
	case k < 63:
		s.stats.ControllerFailovers++
		s.Ctrl.failover()
	case k < 67: // DeleteRecords up to some offset below the high watermark
		ps := s.Ctrl.Parts[s.W.Intn(len(s.Ctrl.Parts))]
		if ps.Leader < 0 {
			return
		}
		p := s.Brokers[ps.Leader].partition(ps.TP)
		if p == nil || p.Role() != replica.RoleLeader {
			return
		}
		start, hw := p.Log().LogStartOffset(), p.HighWatermark()
		if hw <= start {
			return
		}
		off := start + s.W.Int64n(hw-start+1)
		got, err := p.DeleteRecords(off)
		s.W.Tracef("fault: DeleteRecords %s up to %d on broker %d: start %d %v", ps.TP, off, ps.Leader, got, err)
		if err != nil {
			s.fail("DeleteRecords %s up to %d below the HW %d: %v", ps.TP, off, hw, err)
		}
		s.stats.DeleteRecords++
		s.Hist.Checker.Deleted(ps.TP.Partition, got)
	case k < 75: // the network slows down for a while
		s.Net.MaxDelayMs = s.W.Between(20, 300)
		s.Net.DropRate = float64(s.W.Intn(10)) / 100
		s.W.Tracef("fault: network delay up to %d ms, drop rate %.2f", s.Net.MaxDelayMs, s.Net.DropRate)
		s.W.After(s.W.Between(200, 3000), func() {
			s.Net.MaxDelayMs, s.Net.DropRate = 20, 0.01
		})
	}
}

// isolate cuts broker b off the controller (its ZooKeeper session) and, if
// all, off the other brokers; or reconnects it.
func (s *Sim) isolate(b *Broker, all, cut bool) {
	s.Net.Cut(ControllerID, b.ID, cut)
	if all {
		for _, o := range s.Brokers[1:] {
			if o != b {
				s.Net.Cut(o.ID, b.ID, cut)
			}
		}
	}
	if cut {
		s.Ctrl.brokerLost(b)
		return
	}
	if s.Ctrl.Live(b.ID) {
		s.Ctrl.flush(b.ID)
	}
}

// restartWhenExpired restarts a crashed broker once the controller has seen
// its session expire (a new registration cannot be made before).
func (s *Sim) restartWhenExpired(b *Broker) {
	if b.up {
		return
	}
	if s.Ctrl.Live(b.ID) {
		s.W.After(100, func() { s.restartWhenExpired(b) })
		return
	}
	b.start()
}
