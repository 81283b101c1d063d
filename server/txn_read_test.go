package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/record"
)

// appendTxn appends, as the transaction coordinator's markers and a
// transactional producer's batches reach a partition, one batch of values
// (or a marker when values is nil) for producer pid.
func appendTxn(t *testing.T, l PartitionLog, pid int64, seq int32, values []string, marker string) {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, seq, true
	var b []byte
	var err error
	if marker != "" {
		opts.BaseSequence = -1
		b, err = record.AppendEndTxnBatch(nil, opts, marker == "commit", 1, time.Now().UnixMilli())
	} else {
		recs := make([]record.Record, len(values))
		for i, v := range values {
			recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(v)}
		}
		b, err = record.AppendBatch(nil, opts, recs)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
}

// TestFetchReadCommitted: a read_committed consumer (franz-go) gets the
// committed transaction's records, none of the aborted one's (the broker
// returns it among the aborted transactions), no control records, and
// stops at the last stable offset before an open transaction; a
// read_uncommitted one sees every data record. ListOffsets at
// read_committed answers the last stable offset as the end.
func TestFetchReadCommitted(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "txn", 1)
	l := s.topics.partition("txn", 0).log
	appendTxn(t, l, 100, 0, []string{"a1", "a2"}, "") // 0-1 aborted below
	appendTxn(t, l, 101, 0, []string{"c1"}, "")       // 2 committed below
	appendTxn(t, l, 100, 0, nil, "abort")             // 3
	appendTxn(t, l, 101, 1, []string{"c2"}, "")       // 4
	appendTxn(t, l, 101, 0, nil, "commit")            // 5
	appendTxn(t, l, 102, 0, []string{"open1"}, "")    // 6: still open
	appendTxn(t, l, 103, 0, []string{"late"}, "")     // 7
	appendTxn(t, l, 103, 0, nil, "commit")            // 8
	if lso := l.LastStableOffset(); lso != 6 {
		t.Fatalf("LSO %d, want 6", lso)
	}
	read := func(level kgo.IsolationLevel, want int) []string {
		t.Helper()
		cl := newClient(t, s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"txn": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(100*time.Millisecond))
		var got []string
		ctx := testCtx(t)
		for len(got) < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %v of %d", got, want)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
			for _, r := range fs.Records() {
				got = append(got, string(r.Value))
			}
		}
		// Nothing more arrives (a read_committed consumer must stop at 6).
		ctx2, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		for _, r := range cl.PollFetches(ctx2).Records() {
			got = append(got, string(r.Value))
		}
		return got
	}
	if got := read(kgo.ReadCommitted(), 2); len(got) != 2 || got[0] != "c1" || got[1] != "c2" {
		t.Fatalf("read_committed got %v, want [c1 c2]", got)
	}
	if got := read(kgo.ReadUncommitted(), 6); len(got) != 6 {
		t.Fatalf("read_uncommitted got %v, want the 6 data records", got)
	}
	adm := kadm.NewClient(newClient(t, s))
	ends, err := adm.ListCommittedOffsets(testCtx(t), "txn")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("txn", 0); o.Offset != 6 {
		t.Fatalf("read_committed end offset %d, want 6", o.Offset)
	}
	ends, err = adm.ListEndOffsets(testCtx(t), "txn")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("txn", 0); o.Offset != 9 {
		t.Fatalf("end offset %d, want 9", o.Offset)
	}
}
