package server

import (
	"time"
)

// expiryLoop expires offsets every offsets.retention.check.interval.ms.
func (co *coordinator) expiryLoop() {
	defer co.s.bgWG.Done()
	t := time.NewTicker(time.Duration(co.cfg.OffsetsRetentionCheckMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-co.s.done:
			return
		case <-t.C:
			co.expireOffsets(time.Now())
		}
	}
}

// expireOffsets applies offsets.retention.minutes as Kafka 2.1+ does: only
// groups without members lose offsets; a consumer group's offsets expire
// together once the group has been Empty for the retention time, a
// standalone group's each when its commit is that old (or at the expire
// timestamp a v2-v4 commit asked for). Tombstones are written; a group left
// with no offsets and no members is removed (its metadata tombstoned).
func (co *coordinator) expireOffsets(now time.Time) (expired int) {
	retention := time.Duration(co.cfg.OffsetsRetentionMs) * time.Millisecond
	for _, g := range co.sortedGroups() {
		if co.groupCheck(g.id) != 0 {
			continue
		}
		g.mu.Lock()
		if g.state != groupEmpty {
			g.mu.Unlock()
			continue
		}
		var tps []topicPartition
		for tp, e := range g.offsets {
			var gone bool
			switch {
			case e.expireTs >= 0:
				gone = now.UnixMilli() >= e.expireTs
			case g.protocolType != "":
				gone = !now.Before(g.stateTs.Add(retention))
			default:
				gone = now.UnixMilli() >= e.commitTs+retention.Milliseconds()
			}
			if gone {
				tps = append(tps, tp)
			}
		}
		dead := len(tps) == len(g.offsets)
		if len(tps) > 0 || dead {
			if code := co.deleteOffsets(g, tps, dead); code == 0 {
				expired += len(tps)
				if dead {
					g.setState(groupDead)
					co.remove(g)
				}
			}
		}
		g.mu.Unlock()
	}
	if expired > 0 {
		co.log.Info("offsets expired", "count", expired)
	}
	return expired
}
