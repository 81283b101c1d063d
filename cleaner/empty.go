package cleaner

import (
	"fmt"
	"math"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// DefaultProducerIDExpirationMs is Kafka's producer.id.expiration.ms (1 day):
// a producer whose last batch is older is no longer active, and the cleaner
// need not keep that batch to preserve its sequence.
const DefaultProducerIDExpirationMs = 24 * 3600 * 1000

// A batch that loses every record is dropped, except where Kafka's cleaner
// (Cleaner.cleanInto's batch retention, MemoryRecords.filterTo) keeps it
// empty (RETAIN_EMPTY):
//
//   - it is the last data batch of an active producer (a producer id, and no
//     later batch of that producer in the log): it carries the producer's
//     epoch and last sequence, which idempotent producers are checked
//     against. Strata keeps no producer state, so a producer counts as active
//     while its last batch's max timestamp is within producer.id.expiration.ms
//     of now, the test Kafka's producer state manager expires producers by;
//   - it is the last batch of the cleaning round: its next offset is the
//     first uncleanable offset, so the log end (offline) and the round's last
//     offset never move back.
//
// And one of strata's own: the last batch of a group whose last segment
// would otherwise keep nothing, so that the cleaned segment's offsets reach
// into the group's last segment. The loader rolls a crashed swap forward by
// removing the old segments whose base lies below the swap's next offset
// (segment.Open); without that batch the group's last old segment would
// survive the roll-forward and bring back what the pass removed.
//
// A kept empty batch is written as Kafka's DefaultRecordBatch.writeEmptyHeader
// does: the 61-byte header alone, uncompressed whatever the batch's codec was
// (a compressed empty payload makes librdkafka abort), no records, first
// timestamp -1, the batch's max timestamp, no delete horizon, and the batch's
// offsets, producer fields, leader epoch and timestamp type.
func appendEmptyBatch(dst []byte, b record.Batch) ([]byte, error) {
	o := record.DefaultBatchOptions()
	o.BaseOffset = b.BaseOffset()
	o.LeaderEpoch = b.PartitionLeaderEpoch()
	o.LogAppendTime = b.IsLogAppendTime()
	o.AppendTime = b.MaxTimestamp()
	o.Transactional = b.IsTransactional()
	o.Control = b.IsControl()
	o.ProducerID, o.ProducerEpoch, o.BaseSequence = b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	o.LastOffsetDelta = b.LastOffsetDelta()
	start := len(dst)
	dst, err := record.AppendBatch(dst, o, nil)
	if err != nil {
		return dst, err
	}
	if !o.LogAppendTime {
		record.Batch(dst[start:]).SetMaxTimestamp(b.MaxTimestamp())
	}
	return dst, nil
}

// retainEmpty says whether a v2 batch that loses every record is kept empty
// (see appendEmptyBatch). groupEnd is one past the group's last offset.
func (p *pass) retainEmpty(b record.Batch, groupEnd int64) (bool, error) {
	last := b.LastOffset()
	if last+1 == p.st.FirstUncleanable {
		return true, nil
	}
	if last+1 == groupEnd && p.segKept == 0 {
		return true, nil
	}
	if pid := b.ProducerID(); pid >= 0 {
		lasts, err := p.producerLasts()
		if err != nil {
			return false, err
		}
		pl, ok := lasts[pid]
		return ok && pl.last == last && p.o.now-pl.maxTs < p.o.producerExpiryMs, nil
	}
	return false, nil
}

// producerLast is where a producer's last batch in the log is.
type producerLast struct{ last, maxTs int64 }

// producerLasts maps every producer id of the log to its last batch, walking
// every segment once (each up to its size now, the active one included), on
// the first batch with a producer id that would be emptied: logs written
// without producer ids never pay for it. A batch appended after the walk can
// only make an earlier one of its producer kept needlessly, never dropped.
func (p *pass) producerLasts() (map[int64]producerLast, error) {
	if p.producers != nil {
		return p.producers, nil
	}
	m := map[int64]producerLast{}
	var sc record.FileScanner
	for _, s := range p.l.Segments() {
		if !s.Acquire() {
			return nil, fmt.Errorf("%w: %s", ErrAborted, s.Path(segment.LogSuffix))
		}
		size := s.Size()
		sc.Reset(s.LogFile(), 0, size, record.ScanOptions{ReadSize: p.o.readSize, MaxEntrySize: math.MaxInt32})
		for sc.Next() {
			h := sc.Header()
			if h.Magic != 2 {
				continue
			}
			if pid := sc.Batch().ProducerID(); pid >= 0 {
				if pl, ok := m[pid]; !ok || h.LastOffset > pl.last {
					m[pid] = producerLast{last: h.LastOffset, maxTs: h.MaxTimestamp}
				}
			}
		}
		err := sc.Err()
		s.Release()
		p.o.throttle.Observe(size)
		if err != nil {
			return nil, fmt.Errorf("cleaner: %s: %w", s.Path(segment.LogSuffix), err)
		}
	}
	p.producers = m
	return m, nil
}
