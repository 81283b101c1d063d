package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// The model test's produce step (model_test.go has the driver).

// genRecords makes n random records: null, empty and short keys, null,
// empty, small and (rarely) large values, a few headers, timestamps near
// the wall clock, mostly increasing.
func (m *model) genRecords(n int, big bool) []modelRec {
	recs := make([]modelRec, n)
	keys := []string{"a", "b", "user-1", "user-2", "k"}
	for i := range recs {
		r := &recs[i]
		switch x := m.rng.Intn(10); {
		case x < 3:
		case x < 4:
			r.key = []byte{}
		default:
			r.key = []byte(keys[m.rng.Intn(len(keys))] + strconv.Itoa(m.rng.Intn(50)))
		}
		size := m.rng.Intn(200)
		if big && m.rng.Intn(30) == 0 {
			size = 2000 + m.rng.Intn(6000)
		}
		switch x := m.rng.Intn(20); {
		case x == 0:
		case x == 1:
			r.value = []byte{}
		default:
			r.value = make([]byte, size)
			if m.rng.Intn(2) == 0 {
				m.rng.Read(r.value)
			} else {
				copy(r.value, strings.Repeat(fmt.Sprintf("value %d ", i), size/8+1))
			}
		}
		for h := range m.rng.Intn(4) {
			hd := record.Header{Key: fmt.Sprintf("h%d", h)}
			if m.rng.Intn(4) > 0 {
				hd.Value = []byte(strconv.Itoa(m.rng.Intn(1000)))
			}
			r.headers = append(r.headers, hd)
		}
		m.clock += int64(m.rng.Intn(5))
		r.ts = m.clock
		if m.rng.Intn(10) == 0 {
			r.ts -= int64(m.rng.Intn(50)) // a few out of order
		}
	}
	return recs
}

func buildBatch(recs []modelRec, c record.Codec) ([]byte, error) {
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Timestamp: r.ts, Key: r.key, Value: r.value, Headers: r.headers}
	}
	o := record.DefaultBatchOptions()
	o.Codec = c
	return record.AppendBatch(nil, o, rs)
}

// modelProduce is one concurrent client's work in a produce step.
type modelProduce struct {
	kgo   *kgo.Client // franz-go producer, or nil for a raw request
	raw   *kgo.Client
	acks  int16
	parts []modelPartProduce
	fetch *fetched // a fetch instead of a produce
	desc  string
}

type modelPartProduce struct {
	topic string
	part  int32
	recs  []modelRec
	batch []byte
	want  int16
}

// opProduce runs 1-4 concurrent clients, each producing to 1-3 partitions
// (a raw request with one batch per partition, in a random codec, or a
// franz-go producer); with fetches set some clients fetch instead, from
// offsets the reference already holds, and their answers are checked once
// the produces are in the reference.
func (m *model) opProduce(fetches bool) map[string]int64 {
	n := 1 + m.rng.Intn(4)
	work := make([]*modelProduce, n)
	pre := map[string]int64{} // partitions produced to: their end before
	for i := range work {
		w := &modelProduce{raw: m.raw[i]}
		work[i] = w
		if fetches && i > 0 && m.rng.Intn(2) == 0 {
			topic, part := m.livePartition()
			if topic == "" {
				continue
			}
			p := m.topics[topic].parts[part]
			f := &fetched{topic: topic, part: part, offset: p.start + m.rng.Int63n(p.end()-p.start+1)}
			w.fetch = f
			w.desc = fmt.Sprintf("fetch %s/%d@%d", topic, part, f.offset)
			continue
		}
		useKgo := m.rng.Intn(4) == 0
		version := int16(9)
		if !useKgo && m.rng.Intn(6) == 0 {
			w.raw, version = m.old, modelOldProduce
		}
		w.acks = int16(1)
		if m.rng.Intn(2) == 0 {
			w.acks = -1
		}
		seen := map[string]bool{}
		var descs []string
		for range 1 + m.rng.Intn(3) {
			topic, part := m.livePartition()
			if topic == "" || (useKgo && topic != "m0" && topic != "m1") {
				topic, part = "m0", int32(m.rng.Intn(3))
			}
			key := fmt.Sprintf("%s/%d", topic, part)
			if seen[key] {
				continue
			}
			seen[key] = true
			pre[key] = m.topics[topic].parts[part].end()
			size := 1 + m.rng.Intn(40)
			if m.rng.Intn(10) == 0 {
				size = 100 + m.rng.Intn(150)
			}
			pp := modelPartProduce{topic: topic, part: part, recs: m.genRecords(size, !useKgo)}
			if useKgo {
				descs = append(descs, fmt.Sprintf("%s:%d recs", key, size))
			} else {
				c := modelCodecs[m.rng.Intn(len(modelCodecs))]
				b, err := buildBatch(pp.recs, c)
				if err != nil {
					m.fail("building a batch: %v", err)
				}
				pp.batch = b
				if pp.want, err = m.topics[topic].produceCode(b, version); err != nil {
					m.fail("recompressing a batch: %v", err)
				}
				descs = append(descs, fmt.Sprintf("%s:%d recs %v %dB", key, size, c, len(b)))
			}
			w.parts = append(w.parts, pp)
		}
		if useKgo {
			ci := m.rng.Intn(len(m.prod))
			w.kgo = m.prod[ci]
			w.desc = fmt.Sprintf("kgo[%v acks %d] %s", modelCodecs[ci], map[bool]int{true: -1, false: 1}[ci%2 == 1], strings.Join(descs, ", "))
		} else {
			w.desc = fmt.Sprintf("raw v%d acks %d %s", version, w.acks, strings.Join(descs, ", "))
		}
	}
	var descs []string
	for _, w := range work {
		if w.desc != "" {
			descs = append(descs, "{"+w.desc+"}")
		}
	}
	m.logOp("concurrent %s", strings.Join(descs, " "))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []placed
		errs  []string
	)
	for _, w := range work {
		if w.desc == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := m.runProduce(w)
			mu.Lock()
			defer mu.Unlock()
			acked = append(acked, got...)
			if err != nil {
				errs = append(errs, err.Error())
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		m.fail("produce step: %s", strings.Join(errs, "; "))
	}
	if err := m.apply(acked); err != nil {
		m.fail("produce step: %v", err)
	}
	for _, w := range work {
		if f := w.fetch; f != nil {
			p := m.topics[f.topic].parts[f.part]
			f.hwMin, f.hwMax, f.wantStart = p.end(), p.end(), p.start
			if pe, ok := pre[fmt.Sprintf("%s/%d", f.topic, f.part)]; ok {
				f.hwMin = pe // a produce to it ran concurrently
			}
			if _, err := m.check(f); err != nil {
				m.fail("concurrent %v", err)
			}
		}
	}
	return pre
}

// runProduce does one client's work, returning the acknowledged batches.
func (m *model) runProduce(w *modelProduce) ([]placed, error) {
	if f := w.fetch; f != nil {
		got, err := m.fetchOnce(m.raw[0], f.topic, f.part, f.offset, 1<<20)
		if err != nil {
			return nil, err
		}
		got.hwMin, got.hwMax = f.hwMin, f.hwMax
		*f = got
		return nil, nil
	}
	if w.kgo != nil {
		var recs []*kgo.Record
		of := map[*kgo.Record]placed{}
		for _, pp := range w.parts {
			for _, r := range pp.recs {
				kr := &kgo.Record{Topic: pp.topic, Partition: pp.part, Key: r.key, Value: r.value, Timestamp: time.UnixMilli(r.ts)}
				for _, h := range r.headers {
					kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				recs = append(recs, kr)
				of[kr] = placed{topic: pp.topic, part: pp.part, recs: []modelRec{r}}
			}
		}
		res := w.kgo.ProduceSync(m.ctx, recs...)
		if err := res.FirstErr(); err != nil {
			return nil, fmt.Errorf("kgo produce: %w", err)
		}
		var out []placed // results come in completion order, not input order
		for _, r := range res {
			pl, ok := of[r.Record]
			if !ok {
				return nil, fmt.Errorf("kgo produce: result for a record not sent")
			}
			pl.base = r.Record.Offset
			out = append(out, pl)
		}
		return out, nil
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = w.acks, 5000
	for _, pp := range w.parts {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = pp.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = pp.part, pp.batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := m.request(w.raw, req)
	if err != nil {
		return nil, fmt.Errorf("produce request: %w", err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != len(w.parts) {
		return nil, fmt.Errorf("produce: %d topics answered, %d sent", len(pr.Topics), len(w.parts))
	}
	var out []placed
	for i, pp := range w.parts {
		rt := pr.Topics[i]
		if rt.Topic != pp.topic || len(rt.Partitions) != 1 || rt.Partitions[0].Partition != pp.part {
			return nil, fmt.Errorf("produce: answer %d is for %s %+v, sent %s/%d", i, rt.Topic, rt.Partitions, pp.topic, pp.part)
		}
		sp := rt.Partitions[0]
		if sp.ErrorCode != pp.want {
			return nil, fmt.Errorf("produce %s/%d: error %v, want %v", pp.topic, pp.part, kerr.ErrorForCode(sp.ErrorCode), kerr.ErrorForCode(pp.want))
		}
		if sp.ErrorCode == 0 {
			out = append(out, placed{topic: pp.topic, part: pp.part, base: sp.BaseOffset, recs: pp.recs})
		}
	}
	return out, nil
}
