package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// The model test's remaining operations (model_test.go has the driver).

// createTopic creates a topic and adds it, empty, to the reference.
func (m *model) createTopic(name string, parts int, configs map[string]string) {
	m.logOp("create %s partitions %d configs %v", name, parts, configs)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(parts), 1
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := m.request(m.raw[0], req)
	if err != nil {
		m.fail("create %s: %v", name, err)
	}
	if ec := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; ec != 0 {
		m.fail("create %s: %v", name, kerr.ErrorForCode(ec))
	}
	mt := &modelTopic{name: name, forced: -1}
	if v, ok := configs["max.message.bytes"]; ok {
		mt.maxBytes, _ = strconv.Atoi(v)
	}
	if v, ok := configs["segment.bytes"]; ok {
		mt.segBytes, _ = strconv.Atoi(v)
	}
	if v, ok := configs["compression.type"]; ok && v != "producer" {
		mt.forced = compressionCodecs[v]
	}
	for range parts {
		mt.parts = append(mt.parts, &modelPart{})
	}
	m.topics[name] = mt
}

// opChurn creates the churn topic (random partitions and configs) or
// deletes it; a deleted topic's partitions answer UNKNOWN_TOPIC_OR_PARTITION
// and a re-created one starts empty.
func (m *model) opChurn() {
	if m.topics[modelChurn] == nil {
		configs := map[string]string{}
		switch m.rng.Intn(4) {
		case 0:
			configs["compression.type"] = []string{"uncompressed", "gzip", "snappy", "lz4", "zstd"}[m.rng.Intn(5)]
		case 1:
			configs["max.message.bytes"] = strconv.Itoa(500 + m.rng.Intn(3000))
		}
		if m.rng.Intn(2) == 0 {
			configs["segment.bytes"] = strconv.Itoa(4096 + m.rng.Intn(20000))
		}
		m.createTopic(modelChurn, 1+m.rng.Intn(3), configs)
		return
	}
	m.logOp("delete topic %s", modelChurn)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	req.TopicNames = []string{modelChurn}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(modelChurn)
	req.Topics = append(req.Topics, rt)
	resp, err := m.request(m.raw[0], req)
	if err != nil {
		m.fail("delete %s: %v", modelChurn, err)
	}
	if ec := resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; ec != 0 {
		m.fail("delete %s: %v", modelChurn, kerr.ErrorForCode(ec))
	}
	delete(m.topics, modelChurn)
}

// opProduceUnknown produces to a partition that does not exist (beyond a
// live topic's count, or of the deleted churn topic).
func (m *model) opProduceUnknown() {
	topic, _ := m.livePartition()
	part := int32(0)
	if mt := m.topics[topic]; mt != nil && m.rng.Intn(2) == 0 {
		part = int32(len(mt.parts) + m.rng.Intn(3))
	} else if m.topics[modelChurn] == nil {
		topic = modelChurn
	} else {
		topic, part = "m0", -1
	}
	m.logOp("produce to missing %s/%d", topic, part)
	b, err := buildBatch(m.genRecords(2, false), record.CodecNone)
	if err != nil {
		m.fail("%v", err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := m.request(m.raw[1], req)
	if err != nil {
		m.fail("produce to %s/%d: %v", topic, part, err)
	}
	if ec := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != kerr.UnknownTopicOrPartition.Code {
		m.fail("produce to missing %s/%d: %v, want UNKNOWN_TOPIC_OR_PARTITION", topic, part, kerr.ErrorForCode(ec))
	}
}

// opListByTime asks for the first offset at or after a timestamp: the
// reference's answer is the first record from the log start on whose
// timestamp is at least it (-1 when none).
func (m *model) opListByTime() {
	topic, part := m.livePartition()
	if topic == "" {
		return
	}
	p := m.topics[topic].parts[part]
	target := m.clock - int64(m.rng.Intn(4000)) + 20
	if p.end() > p.start && m.rng.Intn(2) == 0 {
		target = p.recs[p.start+m.rng.Int63n(p.end()-p.start)].ts + int64(m.rng.Intn(3)) - 1
	}
	wantOff, wantTs := int64(-1), int64(-1)
	for o := p.start; o < p.end(); o++ {
		if p.recs[o].ts >= target {
			wantOff, wantTs = o, p.recs[o].ts
			break
		}
	}
	m.logOp("list offsets %s/%d at time %d", topic, part, target)
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = part, target, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := m.request(m.raw[2], req)
	if err != nil {
		m.fail("list offsets: %v", err)
	}
	got := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.Offset != wantOff || got.Timestamp != wantTs {
		m.fail("list offsets %s/%d at time %d: offset %d timestamp %d error %v, want offset %d timestamp %d",
			topic, part, target, got.Offset, got.Timestamp, kerr.ErrorForCode(got.ErrorCode), wantOff, wantTs)
	}
}

// opDeleteRecords moves a partition's log start: to an offset inside the
// log, to the end (-1), below the start (no change) or beyond the end
// (OFFSET_OUT_OF_RANGE).
func (m *model) opDeleteRecords() map[string]int64 {
	topic, part := m.livePartition()
	if topic == "" {
		return nil
	}
	p := m.topics[topic].parts[part]
	var off int64
	switch x := m.rng.Intn(10); {
	case x < 6:
		off = p.start + m.rng.Int63n(p.end()-p.start+1)
	case x < 7:
		off = -1
	case x < 8:
		off = m.rng.Int63n(p.start + 1)
	default:
		off = p.end() + 1 + m.rng.Int63n(5)
	}
	m.logOp("delete records %s/%d before %d", topic, part, off)
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = part, off
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := m.request(m.raw[3], req)
	if err != nil {
		m.fail("delete records: %v", err)
	}
	got := resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	wantCode, newStart := int16(0), p.start
	switch {
	case off == -1:
		newStart = p.end()
	case off > p.end():
		wantCode = kerr.OffsetOutOfRange.Code
	case off > p.start:
		newStart = off
	}
	if got.ErrorCode != wantCode || (wantCode == 0 && got.LowWatermark != newStart) {
		m.fail("delete records %s/%d before %d: low watermark %d error %v, want %d %v", topic, part, off, got.LowWatermark,
			kerr.ErrorForCode(got.ErrorCode), newStart, kerr.ErrorForCode(wantCode))
	}
	p.start = newStart
	return map[string]int64{fmt.Sprintf("%s/%d", topic, part): p.start}
}

// restart stops the broker and starts a new one: cleanly on the same dir,
// or on a copy of the dir taken while the old one runs (see TestModel).
func (m *model) restart(clean bool) {
	m.stopClients()
	if clean {
		m.logOp("clean restart")
		if err := m.s.Close(); err != nil {
			m.fail("close: %v", err)
		}
	} else {
		dst := filepath.Join(m.t.TempDir(), "copy")
		if err := copyTree(m.dir, dst); err != nil {
			m.fail("copying the data dir: %v", err)
		}
		torn := ""
		if m.rng.Intn(2) == 0 {
			torn = m.tearTail(dst)
		}
		m.logOp("unclean restart on a copy of the running broker's dir%s", torn)
		if err := m.s.Close(); err != nil {
			m.fail("close: %v", err)
		}
		m.dir = dst
	}
	m.start()
	if rep := m.s.topics.reports[0]; rep.CleanShutdown != clean {
		m.fail("restart: recovery saw clean shutdown %v, want %v", rep.CleanShutdown, clean)
	}
}

// tearTail appends a few random bytes, a write cut short, to the newest
// segment of a random live partition in the copy at dir.
func (m *model) tearTail(dir string) string {
	topic, part := m.livePartition()
	if topic == "" {
		return ""
	}
	segs, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, part), "*.log"))
	if len(segs) == 0 {
		return ""
	}
	sort.Strings(segs)
	junk := make([]byte, 1+m.rng.Intn(80))
	m.rng.Read(junk)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		m.fail("tearing %s: %v", segs[len(segs)-1], err)
	}
	defer f.Close()
	if _, err := f.Write(junk); err != nil {
		m.fail("tearing: %v", err)
	}
	return fmt.Sprintf(", %d torn bytes after %s", len(junk), filepath.Base(segs[len(segs)-1]))
}

// copyTree copies the regular files under src to dst; files that vanish
// meanwhile (background deletions) are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
