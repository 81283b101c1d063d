package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

func idemBatch(t *testing.T, pid int64, seq int32, v string) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, seq
	b, err := record.AppendBatch(nil, opts, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(v)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewLeaderDedupsRetries: a follower builds the producer state from
// the batches it replicates, so after it takes over, a producer's retry
// of a batch the old leader appended (whose answer was lost) gets the
// original offset, not a second copy, and a gap is refused as
// OUT_OF_ORDER_SEQUENCE_NUMBER without taking the log dir offline.
func TestNewLeaderDedupsRetries(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	mustFollower(t, tr.f2, state(1, 0, []int32{1, 2, 3}), t0)
	for seq, v := range []string{"a", "b", "c"} {
		if _, err := tr.l.AppendAsLeader(idemBatch(t, 42, int32(seq), v), -1, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	replicate(t, tr.l, tr.f2, t0)
	// Broker 2 takes over.
	mustLeader(t, tr.f2, state(2, 1, []int32{2, 3}), t0+1)
	res, err := tr.f2.AppendAsLeader(idemBatch(t, 42, 2, "c"), -1, 1, t0+1)
	if err != nil || !res.Info.Duplicate || res.Info.FirstOffset != 2 {
		t.Fatalf("retry on the new leader: %+v, %v", res.Info, err)
	}
	if end := tr.f2.Log().LogEndOffset(); end != 3 {
		t.Fatalf("new leader's log end %d, want 3", end)
	}
	_, err = tr.f2.AppendAsLeader(idemBatch(t, 42, 9, "gap"), -1, 1, t0+1)
	if !errors.Is(err, producer.ErrOutOfOrderSequence) || ErrorCode(err) != 45 {
		t.Fatalf("gap: %v (code %d)", err, ErrorCode(err))
	}
	if tr.f2.Log().Err() != nil {
		t.Fatalf("a refused batch took the log offline: %v", tr.f2.Log().Err())
	}
	if _, err := tr.f2.AppendAsLeader(idemBatch(t, 42, 3, "d"), -1, 1, t0+1); err != nil {
		t.Fatal(err)
	}
}
