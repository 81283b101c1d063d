package replica

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// aheadPart is the partition's part of a Fetch sent before the answer data
// to its part rp of the fetch in flight (sent to leader) is applied: the
// fetch the partition would make once data is appended (see
// Manager.FetchAhead). rp nil: the partition was not in that fetch; data
// nil: the answer left it out. ok false: the partition does not fetch now
// (as fetchPart); veto: the part cannot be known before data is applied (an
// error, a divergence, records ending at or past the high watermark data
// carries, records not continuing the log, a throttled partition with
// records), so there is no fetch ahead of the answer. ahead: the part
// fetches from past the log end (the end of data's whole batches).
func (p *Partition) aheadPart(now int64, leader int32, rp *kmsg.FetchRequestTopicPartition, data *kmsg.FetchResponseTopicPartition, throttled bool) (part kmsg.FetchRequestTopicPartition, ok, ahead, veto bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	part, l, ok := p.fetchPartLocked(now)
	if !ok || l != leader {
		return part, false, false, false
	}
	if rp == nil || data == nil || !p.fetchMatches(leader, rp.CurrentLeaderEpoch, rp.FetchOffset, phaseFetching) {
		// data changes nothing here (or is dropped): Ready's part
		return part, true, false, false
	}
	if data.ErrorCode != 0 || data.DivergingEpoch.EndOffset >= 0 {
		return part, false, false, true
	}
	if len(data.RecordBatches) == 0 {
		return part, true, false, false // the same offset again; only the high watermark moves
	}
	if throttled {
		return part, false, false, true
	}
	end, epoch, ok := wholeBatchesEnd(data.RecordBatches, part.FetchOffset)
	if !ok || end >= data.HighWatermark {
		return part, false, false, true
	}
	part.FetchOffset = end
	if epoch >= 0 {
		part.LastFetchedEpoch = epoch
	}
	return part, true, true, false
}

// wholeBatchesEnd is where the log will end once records, the leader's
// answer to a fetch from leo, are appended (appendAsFollower), and the
// latest leader epoch then: the next offset after its whole v2 batches, the
// first starting at leo. ok false when that is not known before the
// append (no whole batch, another magic, a first batch starting elsewhere,
// a malformed header). CRCs are the append's to check: a bad one fails the
// append, and the answer to a fetch from end is then dropped.
func wholeBatchesEnd(records []byte, leo int64) (end int64, epoch int32, ok bool) {
	epoch = -1
	n := 0
	it := record.NewIterator(records, record.ScanOptions{})
	for it.Next() {
		h := it.Header()
		if h.Magic != 2 || (n == 0 && h.Offset != leo) || h.Offset < end {
			return 0, 0, false
		}
		end = h.LastOffset + 1
		if e := it.Batch().PartitionLeaderEpoch(); e >= 0 {
			epoch = e
		}
		n++
	}
	if err := it.Err(); err != nil && !errors.Is(err, record.ErrTruncated) {
		return 0, 0, false
	}
	return end, epoch, n > 0
}
