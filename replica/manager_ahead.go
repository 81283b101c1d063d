package replica

import "github.com/twmb/franz-go/pkg/kmsg"

// FetchAhead is the Fetch a fetcher may send to f's target before handing
// back resp, the answer to f (in flight, the only fetch in flight to the
// target), or a view of it as far as it has arrived (the Runner's
// earlyView: the answer handed back is then cut to the view's records):
// the fetch Ready would ask once resp is applied, if every
// partition's part of it can be known now (see Partition.aheadPart). It is
// in flight from then on, as Ready's; its outcome is handed back after f's.
// ok is false when no fetch goes ahead: resp failed or is refused, some
// partition's part depends on resp (an error, a divergence, records ending
// at or past the leader's high watermark, a throttled partition with
// records), or no partition is ahead of its log end.
//
// Why the leader may see a fetch offset the follower has not appended yet:
// it is below the high watermark resp carried, which the leader of this
// leader epoch never lowers (another epoch's leader fences the fetch,
// KIP-320), so it neither moves that high watermark nor earns the ISR
// (both need a log end offset at or past it). Why the follower may take
// the answer: a partition applies it only if its log then ends exactly at
// the offset fetched, under the same leader and epoch (fetchMatches); a
// failed or refused append, a truncation, a role change leaves it
// elsewhere, the answer is dropped and the data fetched again from the log
// end.
func (m *Manager) FetchAhead(f FetchRequest, resp *kmsg.FetchResponse, now int64) (FetchRequest, bool) {
	if resp == nil || resp.ErrorCode != 0 {
		return FetchRequest{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tgt := f.Target
	if m.closed || m.fetching[tgt] != 1 {
		return FetchRequest{}, false
	}
	var req *kmsg.FetchRequest
	ahead := false
	for _, p := range m.order {
		if FetcherID(p.tp, m.cfg.NumReplicaFetchers) != tgt.Fetcher || p.followerThrottled(now, m.followerQuota) {
			continue
		}
		rp := findFetchPart(f.Req, p.tp)
		var data *kmsg.FetchResponseTopicPartition
		if rp != nil {
			data = findFetchData(resp, p.tp.Topic, p.tp.Partition)
		}
		part, ok, partAhead, veto := p.aheadPart(now, tgt.Broker, rp, data, m.followerQuota.IsThrottled(p.tp))
		if veto {
			return FetchRequest{}, false
		}
		if !ok {
			continue
		}
		ahead = ahead || partAhead
		if req == nil {
			req = m.newFetchRequest()
		}
		addFetchPart(req, p.tp.Topic, part)
	}
	if !ahead {
		return FetchRequest{}, false
	}
	m.fetching[tgt]++
	return FetchRequest{Target: tgt, Req: req}, true
}

// findFetchPart is tp's part of req, or nil.
func findFetchPart(req *kmsg.FetchRequest, tp TopicPartition) *kmsg.FetchRequestTopicPartition {
	for i := range req.Topics {
		t := &req.Topics[i]
		if t.Topic != tp.Topic {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == tp.Partition {
				return &t.Partitions[j]
			}
		}
	}
	return nil
}
