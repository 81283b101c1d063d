package fuzz

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stratalog/strata/producer"
)

// FuzzProducerFiles parses arbitrary bytes as a producer snapshot, an
// aborted-transaction index and a producer id block: nothing panics, every
// error is the package's sentinel, and whatever parses encodes back to the
// same bytes (a snapshot that loads also snapshots back to itself).
func FuzzProducerFiles(f *testing.F) {
	f.Add(producer.EncodeSnapshot(nil))
	f.Add(producer.EncodeSnapshot([]producer.SnapshotEntry{{ProducerID: 7, Epoch: 1, LastSequence: 4, LastOffset: 5,
		OffsetDelta: 1, Timestamp: 1700000000000, CoordinatorEpoch: 3, TxnFirstOffset: -1}}))
	f.Add(producer.AppendAbortedTxn(nil, producer.AbortedTxn{ProducerID: 7, FirstOffset: 4, LastOffset: 6, LastStableOffset: 7}))
	f.Add(producer.EncodeBlock(2, producer.Block{Start: 0, End: 999}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if es, err := producer.DecodeSnapshot(data); err != nil {
			if !errors.Is(err, producer.ErrBadSnapshot) {
				t.Fatalf("snapshot: error %v is not ErrBadSnapshot", err)
			}
		} else {
			if back := producer.EncodeSnapshot(es); !bytes.Equal(back, data) {
				t.Fatalf("snapshot: %x encodes back as %x", data, back)
			}
			if st, err := producer.LoadSnapshot(es, 1<<62, 0); err == nil {
				if back := producer.EncodeSnapshot(st.SnapshotEntries()); len(back) != len(data) {
					t.Fatalf("snapshot: loaded state snapshots to %d bytes, not %d", len(back), len(data))
				}
			} else if !errors.Is(err, producer.ErrBadSnapshot) {
				t.Fatalf("load: error %v is not ErrBadSnapshot", err)
			}
		}
		if list, err := producer.DecodeTxnIndex(data, 0, 1<<62); err != nil {
			if !errors.Is(err, producer.ErrBadTxnIndex) {
				t.Fatalf("txnindex: error %v is not ErrBadTxnIndex", err)
			}
		} else {
			var back []byte
			for _, a := range list {
				back = producer.AppendAbortedTxn(back, a)
			}
			if !bytes.Equal(back, data) {
				t.Fatalf("txnindex: %x encodes back as %x", data, back)
			}
		}
		if b, err := producer.DecodeBlock(data); err != nil {
			if !errors.Is(err, producer.ErrBadBlock) {
				t.Fatalf("block: error %v is not ErrBadBlock", err)
			}
		} else if b2, err := producer.DecodeBlock(producer.EncodeBlock(1, b)); err != nil || b2 != b {
			t.Fatalf("block %+v round trip: %+v, %v", b, b2, err)
		}
	})
}
