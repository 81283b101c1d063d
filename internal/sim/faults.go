package sim

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/replica"
)

// scheduleFault injects the next fault after a random pause.
func (s *Sim) scheduleFault() {
	s.W.After(s.W.Between(50, 500), func() {
		if !s.Opt.Faults || !s.loadOn {
			return
		}
		s.injectFault()
		s.scheduleFault()
	})
}

// injectFault picks one fault at random. While a broker that lost power is
// still in an ISR (see powerLossAllowed) only the faults that cannot take
// the other ISR members away are injected.
func (s *Sim) injectFault() {
	k := s.W.Intn(100)
	if s.anyUnclean() && (k < 65 || k >= 80 && k < 86) {
		return
	}
	switch {
	case k < 10: // a link between two brokers goes down for a while
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
	case k < 20: // a broker is cut off ZooKeeper, the other brokers, or both (clients still reach it)
		b := s.randomBroker()
		zk, peers := true, true
		switch s.W.Intn(3) {
		case 0:
			peers = false
		case 1:
			zk = false
		}
		if zk && s.zkCut[b.ID] {
			return
		}
		s.stats.Isolations++
		if zk {
			s.stats.ZKIsolations++
		}
		s.W.Tracef("fault: broker %d isolated (zookeeper %v, brokers %v)", b.ID, zk, peers)
		s.isolate(b, zk, peers, true)
		s.W.After(s.W.Between(200, 4000), func() {
			s.W.Tracef("fault: broker %d reconnected", b.ID)
			s.isolate(b, zk, peers, false)
		})
	case k < 30: // a process crash
		ups := s.upBrokers()
		if len(ups) == 0 {
			return
		}
		b := ups[s.W.Intn(len(ups))]
		s.stats.ProcessCrashes++
		b.crash(false)
		s.restartLater(b)
	case k < 37: // a power loss
		ups := s.upBrokers()
		if len(ups) == 0 {
			return
		}
		b := ups[s.W.Intn(len(ups))]
		if !s.powerLossAllowed(b.ID) {
			return
		}
		if s.W.Chance(0.5) {
			b.armPowerLoss(40) // strikes in the middle of whatever writes next
			return
		}
		s.stats.PowerLosses++
		s.markUnclean(b.ID)
		b.crash(true)
		s.restartLater(b)
	case k < 45: // ZooKeeper expires a broker's session (a long pause): often the controller's or a leader's
		b := s.expiryVictim()
		if b == nil || !b.up || s.zkCut[b.ID] {
			return
		}
		if sid := b.member.zk.SessionID(); sid != 0 && s.ZK.ExpireSession(sid) {
			s.stats.SessionExpiries++
			s.W.Tracef("fault: zookeeper expires broker %d's session 0x%x", b.ID, sid)
		}
	case k < 50: // the controller moves: /controller deleted, as Kafka's operators force a re-election
		if c := s.controllerNow(); c > 0 {
			s.stats.ControllerMoves++
			s.W.Tracef("fault: admin deletes /controller (broker %d)", c)
			_ = s.admin.Delete(cluster.ControllerPath, -1)
		}
	case k < 55: // ZooKeeper turns lossy and slow for a while
		s.stats.ZKFaultPeriods++
		s.zkLossRate = float64(1+s.W.Intn(10)) / 100
		s.watchLag = s.W.Between(50, 1000)
		s.W.Tracef("fault: zookeeper loses %.2f of calls, watch events lag up to %d ms", s.zkLossRate, s.watchLag)
		s.W.After(s.W.Between(200, 3000), func() {
			s.zkLossRate, s.watchLag = 0, 0
			s.W.Tracef("fault: zookeeper healthy again")
		})
	case k < 65: // preferred leader election (admin ElectLeaders, or the auto rebalance tick)
		if s.W.Chance(0.5) {
			s.electPreferred()
		} else if m := s.activeController(); m != nil {
			s.stats.PreferredElections++
			s.W.Tracef("fault: auto leader rebalance tick on controller %d", m.b.ID)
			m.step(cluster.RebalanceTick{})
		}
	case k < 70: // DeleteRecords up to some offset below the high watermark
		s.deleteRecords()
	case k >= 80 && k < 86: // a broker stops (SIGTERM): controlled shutdown, then a clean stop
		ups := s.upBrokers()
		if len(ups) == 0 {
			return
		}
		b := ups[s.W.Intn(len(ups))]
		if b.serving && b.dying == nil {
			s.stats.ControlledShutdowns++
			b.controlledShutdown()
		}
	case k < 80: // the network slows down and drops more for a while
		s.Net.MaxDelayMs = s.W.Between(20, 300)
		s.Net.DropRate = float64(s.W.Intn(10)) / 100
		s.W.Tracef("fault: network delay up to %d ms, drop rate %.2f", s.Net.MaxDelayMs, s.Net.DropRate)
		s.W.After(s.W.Between(200, 3000), func() {
			s.Net.MaxDelayMs, s.Net.DropRate = 20, 0.01
		})
	}
}

// controlledShutdown is a broker stopping on SIGTERM with
// controlled.shutdown.enable: it asks the controller (the one its metadata
// names) to move its leaderships, retrying until none is left or
// controlled.shutdown.max.retries (3) attempts failed, then stops cleanly
// (logs flushed, checkpoints written, the session closed: its registration
// goes at once) and restarts later.
func (b *Broker) controlledShutdown() {
	s, inc := b.s, b.inc
	b.s.W.Tracef("fault: broker %d shuts down (controlled)", b.ID)
	attempts := 0
	var try func()
	stop := func(why string) {
		if b.inc != inc || !b.up || b.dying != nil {
			return
		}
		s.W.Tracef("broker %d stops: %s", b.ID, why)
		if err := b.stop(); err != nil {
			s.fail("broker %d: clean stop: %v", b.ID, err)
		}
		s.restartLater(b)
	}
	try = func() {
		if b.inc != inc || !b.up || b.dying != nil {
			return
		}
		attempts++
		ctrl := b.meta.controller
		if attempts > 3 || ctrl < 1 || int(ctrl) >= len(s.Brokers) {
			stop("controlled shutdown gave up")
			return
		}
		req := kmsg.NewPtrControlledShutdownRequest()
		req.Version = 3
		req.BrokerID, req.BrokerEpoch = b.ID, b.member.epoch
		to, w := s.Brokers[ctrl], encodeReq(req)
		s.Net.Call(Conn{From: b.ID, To: ctrl, Kind: ConnAlter}, true, 0,
			func(reply func(any)) { to.serveController(w, reply) },
			func(resp any, err error) {
				if err == nil {
					d, derr := decodeResp(resp.(wire))
					if derr != nil {
						s.fail("broker %d: %v", b.ID, derr)
						return
					}
					r := d.(*kmsg.ControlledShutdownResponse)
					if r.ErrorCode == 0 && len(r.PartitionsRemaining) == 0 {
						stop("controlled shutdown done")
						return
					}
					s.W.Tracef("broker %d: controlled shutdown answered %d, %d partitions remaining", b.ID, r.ErrorCode, len(r.PartitionsRemaining))
				}
				s.W.After(200, try) // controlled.shutdown.retry.backoff.ms
			})
	}
	try()
}

// expiryVictim picks whose session expires: the controller, a leader or
// anyone, a third of the time each.
func (s *Sim) expiryVictim() *Broker {
	switch s.W.Intn(3) {
	case 0:
		if c := s.controllerNow(); c > 0 {
			return s.Brokers[c]
		}
	case 1:
		if len(s.Parts) > 0 {
			if l := s.zkState[s.Parts[s.W.Intn(len(s.Parts))].TP].Leader; l > 0 {
				return s.Brokers[l]
			}
		}
	}
	return s.randomBroker()
}

// restartLater restarts a crashed broker after a while.
func (s *Sim) restartLater(b *Broker) {
	s.W.After(s.W.Between(100, 3000), func() {
		if !b.up {
			b.start()
		}
	})
}

// isolate cuts broker b off ZooKeeper and/or the other brokers, or
// reconnects it.
func (s *Sim) isolate(b *Broker, zk, peers, cut bool) {
	if zk {
		s.cutZK(b, cut)
	}
	if peers {
		for _, o := range s.Brokers[1:] {
			if o != b {
				s.Net.Cut(o.ID, b.ID, cut)
			}
		}
	}
}

// deleteRecords moves a leader's log start to some offset below its high
// watermark (DeleteRecords, which the broker serves on the leader).
func (s *Sim) deleteRecords() {
	if len(s.Parts) == 0 {
		return
	}
	i := s.W.Intn(len(s.Parts))
	sp := s.Parts[i]
	l := s.zkState[sp.TP].Leader
	if l < 1 {
		return
	}
	p := s.Brokers[l].partition(sp.TP)
	if p == nil || p.Role() != replica.RoleLeader {
		return
	}
	start, hw := p.Log().LogStartOffset(), p.HighWatermark()
	if hw <= start {
		return
	}
	off := start + s.W.Int64n(hw-start+1)
	got, err := p.DeleteRecords(off)
	s.W.Tracef("fault: DeleteRecords %s up to %d on broker %d: start %d %v", sp.TP, off, l, got, err)
	if err != nil {
		s.fail("DeleteRecords %s up to %d below the HW %d: %v", sp.TP, off, hw, err)
	}
	s.stats.DeleteRecords++
	s.Hist.Checker.Deleted(int32(i), got)
	s.deleted[sp.TP] = max(s.deleted[sp.TP], got)
}

// markUnclean notes that broker id lost power while in the ISRs it is in.
func (s *Sim) markUnclean(id int32) {
	if s.Opt.FlushEveryMessage {
		return
	}
	for _, sp := range s.Parts {
		if slices.Contains(s.zkState[sp.TP].ISR, id) {
			s.unclean[uncleanKey{sp.TP, id}] = true
		}
	}
}

// anyUnclean tells whether some broker lost power while in an ISR and is
// still in it (as ZooKeeper holds the state).
func (s *Sim) anyUnclean() bool {
	for _, sp := range s.Parts {
		for _, b := range s.Brokers[1:] {
			if s.unclean[uncleanKey{sp.TP, b.ID}] {
				return true
			}
		}
	}
	return false
}

// powerLossAllowed tells whether broker id may lose its unsynced data now
// (see the package doc). Without application fsync the records a power
// loss takes live on in the other ISR members' page caches; they are lost
// only if the broker that lost them becomes the ISR's last member and is
// elected (KIP-966), which Kafka's controller does when the others leave
// the ISR before it. So a power loss is allowed only when every other
// broker is up, registered, in touch with ZooKeeper, in every ISR, and not
// itself unclean; and until the broker has left every ISR it was in
// (ZooKeeper's state says so), no fault that could take another ISR member
// away is injected (injectFault). The controller must see the broker die:
// one that registers again before a controller loads a snapshot (a new
// controller, or the same one reloading after a ZooKeeper error) is never
// seen to have bounced and stays the leader (and ISR member) it was, with
// the shortened log, in the same leader epoch as its followers' longer one
// (found by this simulation: seed 174, the controller itself losing power;
// seed 2326 of SIM_SEED_BASE 2000, a reload; Kafka 2.x's ZooKeeper
// controller does the same, KIP-966 again). So a power loss also needs an
// active controller that is not the broker, in touch with ZooKeeper, no
// ZooKeeper fault period on (the faults that could move or reload the
// controller are off while a broker is unclean).
func (s *Sim) powerLossAllowed(id int32) bool {
	if s.Opt.FlushEveryMessage {
		return true
	}
	if s.anyUnclean() || s.zkLossRate > 0 || s.Brokers[id].alterInflight > 0 {
		return false // an ISR change it asked for may still land: it may leave itself the ISR's last member (seed 5178 of base 5000)
	}
	if c := s.activeController(); c == nil || c.b.ID == id || s.zkCut[c.b.ID] || s.controllerNow() != c.b.ID {
		return false
	}
	for _, b := range s.Brokers[1:] {
		if b.ID == id {
			continue
		}
		if !b.up || b.member.session == 0 || s.zkCut[b.ID] {
			return false
		}
		for _, sp := range s.Parts {
			if !slices.Contains(s.zkState[sp.TP].ISR, b.ID) {
				return false
			}
		}
	}
	return true
}
