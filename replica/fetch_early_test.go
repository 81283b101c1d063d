package replica

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// earlyFetchView is a new earlyView's update.
func earlyFetchView(frame []byte, size int) (*kmsg.FetchResponse, int, bool) {
	var e earlyView
	return e.update(frame, size)
}

// fetchFrame is resp as a Fetch v12 answer's frame after its size prefix:
// correlation id, the header's empty tagged fields, the body.
func fetchFrame(resp *kmsg.FetchResponse) []byte {
	resp.Version = 12
	return resp.AppendTo([]byte{0, 0, 0, 7, 0})
}

// bigBatch is a batch at base of one value of n bytes.
func bigBatch(t testing.TB, base int64, n int) []byte {
	return epochBatch(t, base, 3, strings.Repeat("v", n))
}

// fetchAnswer is a one-partition answer holding records.
func fetchAnswer(records []byte) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "t"
	p := kmsg.NewFetchResponseTopicPartition()
	p.Partition, p.HighWatermark, p.LogStartOffset = 4, 1000, 0
	p.RecordBatches = records
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

// TestEarlyFetchViewWaitsForTheLastWholeBatch feeds an answer of two whole
// 100 KiB batches and a partial one byte by byte: the view is known once
// the partial batch's size has arrived, and not before (what is left
// after the second batch is more than earlyTailOf the records).
func TestEarlyFetchViewWaitsForTheLastWholeBatch(t *testing.T) {
	a, b, c := bigBatch(t, 10, 100<<10), bigBatch(t, 11, 100<<10), bigBatch(t, 12, 100<<10)
	records := append(append(append([]byte(nil), a...), b...), c[:40<<10]...)
	frame := fetchFrame(fetchAnswer(records))
	recStart := bytes.Index(frame, a)
	want := recStart + len(a) + len(b) + record.LogOverhead
	var e earlyView // updated as the bytes come, as a fetcher does
	for k := 0; k <= len(frame); k++ {
		view, cut, ok := earlyFetchView(frame[:k], len(frame))
		_, ecut, eok := e.update(frame[:k], len(frame))
		if ok != (k >= want) || eok != ok || ecut != cut {
			t.Fatalf("%d of %d bytes: ok %v (updated: %v, cut %d), want it from %d", k, len(frame), ok, eok, ecut, want)
		}
		if !ok {
			continue
		}
		if cut != len(a)+len(b) {
			t.Fatalf("%d bytes: cut %d, want %d", k, cut, len(a)+len(b))
		}
		p := view.Topics[0].Partitions[0]
		if p.Partition != 4 || p.HighWatermark != 1000 || len(p.RecordBatches) != cut {
			t.Fatalf("%d bytes: view %+v", k, p)
		}
		end, epoch, whole := wholeBatchesEnd(p.RecordBatches, 10)
		if !whole || end != 12 || epoch != 3 {
			t.Fatalf("%d bytes: the view's batches end at %d epoch %d (%v), want 12 epoch 3", k, end, epoch, whole)
		}
		k += 997 // the rest in steps
	}
	if e.view == nil || &e.view.Topics[0].Partitions[0].RecordBatches[0] != &frame[recStart] {
		t.Fatal("the view's records do not alias the frame")
	}
}

// TestEarlyFetchViewTail: whole batches after the last known one are
// waited for while more than earlyTailOf the records may come; a lone
// batch, all the records, is known from its header.
func TestEarlyFetchViewTail(t *testing.T) {
	small := bigBatch(t, 0, 10<<10)
	for _, n := range []int{1, 10, 40} {
		batches := make([][]byte, n)
		for i := range batches {
			batches[i] = small
		}
		if n == 1 {
			batches[0] = bigBatch(t, 0, 300<<10)
		}
		records := bytes.Join(batches, nil)
		frame := fetchFrame(fetchAnswer(records))
		recStart := len(frame) - len(records) - 3
		if _, cut, ok := earlyFetchView(frame, len(frame)); !ok || cut != len(records) {
			t.Fatalf("%d batches, whole answer: cut %d ok %v, want %d", n, cut, ok, len(records))
		}
		// known once the header of batch j has arrived, j the first
		// after which at most earlyTailOf the records are left
		j := 0
		for len(records)-(j+1)*len(batches[0]) > earlyTailOf(len(records)) {
			j++
		}
		want := recStart + j*len(batches[0]) + record.BatchHeaderSize
		for k := recStart; k <= want; k++ {
			_, cut, ok := earlyFetchView(frame[:k], len(frame))
			if ok != (k == want) {
				t.Fatalf("%d batches: %d bytes: ok %v, want it from %d", n, k, ok, want)
			}
			if ok && cut != (j+1)*len(batches[0]) {
				t.Fatalf("%d batches: cut %d, want %d", n, cut, (j+1)*len(batches[0]))
			}
		}
	}
}

// TestEarlyFetchViewPartitions: the last partition's records decide; the
// ones before are whole (tagged fields and all) in the view.
func TestEarlyFetchViewPartitions(t *testing.T) {
	resp := fetchAnswer(bigBatch(t, 5, 1000))
	first := resp.Topics[0].Partitions[0]
	first.Partition = 1
	first.DivergingEpoch.Epoch, first.DivergingEpoch.EndOffset = 2, 40
	first.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 9, FirstOffset: 3}}
	resp.Topics[0].Partitions = append([]kmsg.FetchResponseTopicPartition{first}, resp.Topics[0].Partitions...)
	second := kmsg.NewFetchResponseTopic()
	second.Topic = "u"
	last := kmsg.NewFetchResponseTopicPartition()
	last.Partition, last.HighWatermark = 0, 77
	records := append(bigBatch(t, 20, 2000), bigBatch(t, 21, 3000)...)
	last.RecordBatches = records
	second.Partitions = append(second.Partitions, last)
	resp.Topics = append(resp.Topics, second)
	frame := fetchFrame(resp)
	view, cut, ok := earlyFetchView(frame, len(frame))
	if !ok || cut != len(records) {
		t.Fatalf("cut %d ok %v, want %d", cut, ok, len(records))
	}
	if len(view.Topics) != 2 || len(view.Topics[0].Partitions) != 2 || view.Topics[1].Topic != "u" {
		t.Fatalf("view %+v", view)
	}
	p := view.Topics[0].Partitions[0]
	if p.DivergingEpoch.EndOffset != 40 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 9 {
		t.Fatalf("first partition %+v", p)
	}
	if !bytes.Equal(view.Topics[0].Partitions[1].RecordBatches, resp.Topics[0].Partitions[1].RecordBatches) {
		t.Fatal("second partition's records differ")
	}
	if lp := view.Topics[1].Partitions[0]; lp.HighWatermark != 77 || !bytes.Equal(lp.RecordBatches, records) {
		t.Fatalf("last partition %+v", lp)
	}
	// until the last partition's first header has arrived, nothing
	if _, _, ok := earlyFetchView(frame[:len(frame)-len(records)], len(frame)); ok {
		t.Fatal("known before the last records arrived")
	}
}

// TestEarlyFetchViewNothing: no records, no partitions, a corrupt batch
// size: nothing to send early on.
func TestEarlyFetchViewNothing(t *testing.T) {
	bad := bigBatch(t, 0, 100)
	bad[11] = 3 // size below a v2 header
	for name, resp := range map[string]*kmsg.FetchResponse{
		"no records":    fetchAnswer(nil),
		"no partitions": kmsg.NewPtrFetchResponse(),
		"corrupt size":  fetchAnswer(bad),
	} {
		frame := fetchFrame(resp)
		if _, _, ok := earlyFetchView(frame, len(frame)); ok {
			t.Errorf("%s: ok", name)
		}
	}
}

// FuzzEarlyFetchView: any prefix of any frame, no panic, and a cut within
// the records it names.
func FuzzEarlyFetchView(f *testing.F) {
	f.Add(fetchFrame(fetchAnswer(append(bigBatch(f, 0, 100), bigBatch(f, 1, 50)...))), 300)
	f.Add(fetchFrame(kmsg.NewPtrFetchResponse()), 3)
	f.Fuzz(func(t *testing.T, frame []byte, k int) {
		if k < 0 || k > len(frame) {
			k = len(frame)
		}
		view, cut, ok := earlyFetchView(frame[:k], len(frame))
		if !ok {
			return
		}
		rb := view.Topics[len(view.Topics)-1].Partitions[len(view.Topics[len(view.Topics)-1].Partitions)-1].RecordBatches
		if cut <= 0 || len(rb) != cut {
			t.Fatalf("cut %d, records %d", cut, len(rb))
		}
	})
}
