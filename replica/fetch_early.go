package replica

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// earlyTail is how many bytes of a Fetch answer's last records, at most a
// sixteenth of them, a fetcher may leave unread by its next Fetch when it
// sends it early (earlyView): the trailing partial batch an answer to
// 1 MiB of replica.fetch.max.bytes ends with when batches are near
// Kafka's 1 MB batch limit, or whole batches the next Fetch brings again.
const earlyTail = 64 << 10

// earlyTailOf is earlyTail for n bytes of records.
func earlyTailOf(n int) int { return min(earlyTail, n/16) }

// earlyView follows a Fetch v12 answer as its frame (correlation id first,
// after the size prefix) arrives, for a fetcher that sends its next Fetch
// before the answer's end: update tells, from what has arrived, every
// field but the last partition's records and tagged fields, and those
// records as far as their whole batches' headers have arrived: cut bytes
// of them, the batches after which the next Fetch may start. The view's
// last record batches alias the frame and only their headers have
// arrived: the view is for FetchAhead, which reads no more of them, never
// for an append; the answer appended must be cut to the same bytes.
//
// ok is false until the answer's end is known that far: the last
// partition's first batch header and, unless what follows cut is known
// to hold no whole batch (a partial one or nothing), all but
// earlyTailOf its records. A malformed field is never ok: the whole
// answer's decoding reports it. The walk goes on from where the last
// update stopped; the frame is parsed for the view once.
type earlyView struct {
	found     bool // the last partition's records are located
	bad       bool
	bodyStart int // after the response header
	recLen    int // the last records' compact length
	recStart  int
	n         int  // their size
	p         int  // whole batches walked, from recStart
	final     bool // no whole batch after p
	view      *kmsg.FetchResponse
}

// update looks at frame, of size bytes, as far as it has arrived.
func (e *earlyView) update(frame []byte, size int) (view *kmsg.FetchResponse, cut int, ok bool) {
	if e.bad {
		return nil, 0, false
	}
	if !e.found && !e.locate(frame, size) {
		return nil, 0, false
	}
	have := min(len(frame)-e.recStart, e.n)
	for !e.final {
		if e.n-e.p < record.LogOverhead { // nothing more, or less than a batch's offset and size
			e.final = true
			break
		}
		if have < e.p+record.LogOverhead {
			break
		}
		total := record.LogOverhead + int(int32(binary.BigEndian.Uint32(frame[e.recStart+e.p+8:])))
		if total < record.BatchHeaderSize {
			e.bad = true
			return nil, 0, false
		}
		if e.p+total > e.n {
			e.final = true // a partial batch ends the answer
			break
		}
		if have < e.p+record.BatchHeaderSize {
			break
		}
		e.p += total
	}
	if e.p == 0 || (!e.final && e.n-e.p > earlyTailOf(e.n)) {
		return nil, 0, false
	}
	if e.view == nil && !e.parse(frame) {
		e.bad = true
		return nil, 0, false
	}
	t := &e.view.Topics[len(e.view.Topics)-1]
	t.Partitions[len(t.Partitions)-1].RecordBatches = frame[e.recStart : e.recStart+e.p]
	return e.view, e.p, true
}

// locate walks the answer's fields up to the last partition's records,
// once every field before them has arrived.
func (e *earlyView) locate(frame []byte, size int) bool {
	w := wireWalk{b: frame, p: 4}
	w.skipTags() // the response header's
	bodyStart := w.p
	w.skip(4 + 2 + 4) // throttle, error, session
	topics := w.count()
	for t := 0; t < topics && !w.bad; t++ {
		w.skip(w.count()) // name
		parts := w.count()
		for p := 0; p < parts && !w.bad; p++ {
			w.skip(4 + 2 + 8 + 8 + 8) // partition, error, high watermark, last stable, log start
			aborted := w.count()
			for i := 0; i < aborted && !w.bad; i++ {
				w.skip(8 + 8)
				w.skipTags()
			}
			w.skip(4) // preferred read replica
			recLen := w.p
			n := w.count()
			if w.bad {
				return false // not arrived yet, or malformed: the decoding will say
			}
			if t == topics-1 && p == parts-1 {
				if n <= 0 || w.p+n > size {
					e.bad = true // no records to send ahead of, or malformed
					return false
				}
				e.found, e.bodyStart, e.recLen, e.recStart, e.n = true, bodyStart, recLen, w.p, n
				return true
			}
			w.skip(n)
			w.skipTags()
		}
		w.skipTags()
	}
	if !w.bad {
		e.bad = true // no partition: nothing to fetch ahead of
	}
	return false
}

// parse decodes every field before the last records, with those records
// empty and no tagged fields after them.
func (e *earlyView) parse(frame []byte) bool {
	synth := make([]byte, 0, e.recLen-e.bodyStart+4)
	synth = append(synth, frame[e.bodyStart:e.recLen]...)
	synth = append(synth, 1, 0, 0, 0) // empty records; partition, topic, response tags
	view := kmsg.NewPtrFetchResponse()
	view.Version = 12
	if view.ReadFrom(synth) != nil || len(view.Topics) == 0 || len(view.Topics[len(view.Topics)-1].Partitions) == 0 {
		return false
	}
	e.view = view
	return true
}

// wireWalk reads the flexible-version fields of a partly arrived frame;
// bad is set once a field runs past what has arrived or is malformed.
type wireWalk struct {
	b   []byte
	p   int
	bad bool
}

func (w *wireWalk) skip(n int) {
	if w.bad || n < 0 || w.p+n > len(w.b) {
		w.bad = true
		return
	}
	w.p += n
}

func (w *wireWalk) uvarint() int {
	if w.bad || w.p >= len(w.b) {
		w.bad = true
		return 0
	}
	v, n := binary.Uvarint(w.b[w.p:])
	if n <= 0 || v > 1<<31 {
		w.bad = true
		return 0
	}
	w.p += n
	return int(v)
}

// count is a compact array's or string's length (null: 0).
func (w *wireWalk) count() int {
	return max(w.uvarint()-1, 0)
}

func (w *wireWalk) skipTags() {
	for range w.uvarint() {
		w.uvarint()
		w.skip(w.uvarint())
		if w.bad {
			return
		}
	}
}
