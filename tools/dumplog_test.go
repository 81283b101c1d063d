package tools

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

var update = flag.Bool("update", false, "rewrite the fixtures and golden files under tools/testdata")

// run runs the CLI in-process and returns stdout, stderr and the exit status.
func run(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"strata"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

const seg0 = "00000000000000000000"

// fixture is one committed directory under testdata: its files by name.
type fixture struct {
	name  string
	files map[string][]byte
}

// buildFixtures makes the dumplog fixtures (see testdata/README.md). Only
// -update writes them; the tests read the committed bytes.
func buildFixtures(t *testing.T) []fixture {
	t.Helper()
	return []fixture{codecsFixture(t), legacyFixture(t), compactedFixture(t), controlFixture(t)}
}

// must returns b, panicking on an encoder error (fixture code only).
func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func ixEntryBytes(dst []byte, base, off int64, pos int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(off-base))
	return binary.BigEndian.AppendUint32(dst, uint32(pos))
}

func tixEntryBytes(dst []byte, base, ts, off int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint32(dst, uint32(off-base))
}

// codecsFixture: the batches franz-go's kgo producer sent, one per codec
// (record/testdata/kgo-*.bin), given consecutive base offsets and a leader
// epoch as a broker does on append (neither is covered by the CRC).
func codecsFixture(t *testing.T) fixture {
	var log []byte
	for i, c := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		b, err := os.ReadFile(filepath.Join("..", "record", "testdata", "kgo-"+c+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		batch := record.Batch(append([]byte(nil), b...))
		batch.SetBaseOffset(int64(8 * i))
		batch.SetLeaderEpoch(3)
		log = append(log, batch...)
	}
	return fixture{"codecs", map[string][]byte{seg0 + ".log": log, seg0 + ".index": nil, seg0 + ".timeindex": nil}}
}

// legacyFixture: v0 and v1 message sets, plain and in compressed wrappers.
func legacyFixture(t *testing.T) fixture {
	var log []byte
	m := func(off int64, magic int8, ts int64, k, v string) record.LegacyMessage {
		lm := record.LegacyMessage{Offset: off, Magic: magic, Timestamp: ts}
		if k != "" {
			lm.Key = []byte(k)
		}
		if v != "" {
			lm.Value = []byte(v)
		}
		return lm
	}
	log = record.AppendLegacyMessage(log, m(0, 0, -1, "", "v0 plain, null key"))
	log = record.AppendLegacyMessage(log, m(1, 0, -1, "k1", "v0 with key"))
	log = must(record.AppendLegacyWrapper(log, 0, record.CodecGzip, false, -1, []record.LegacyMessage{
		m(2, 0, -1, "a", "v0 gzip 1"), m(3, 0, -1, "b", "v0 gzip 2"), m(4, 0, -1, "c", "")}))
	log = record.AppendLegacyMessage(log, m(5, 1, 1600000000000, "k5", "v1 plain \x00\x01 bytes"))
	log = must(record.AppendLegacyWrapper(log, 1, record.CodecSnappy, false, 1600000000007, []record.LegacyMessage{
		m(6, 1, 1600000000006, "k6", "v1 snappy 1"), m(7, 1, 1600000000007, "k7", "v1 snappy 2")}))
	log = must(record.AppendLegacyWrapper(log, 1, record.CodecLZ4, true, 1600000000100, []record.LegacyMessage{
		m(8, 1, 1600000000008, "k8", "v1 lz4 log-append-time 1"), m(9, 1, 1600000000009, "k9", "v1 lz4 log-append-time 2")}))
	return fixture{"legacy", map[string][]byte{seg0 + ".log": log, seg0 + ".index": nil, seg0 + ".timeindex": nil}}
}

// compactedFixture: what the cleaner leaves: offset gaps inside and between
// batches, tombstones, an empty batch, a batch with a delete horizon, and
// index entries at batch starts.
func compactedFixture(t *testing.T) fixture {
	const ts = 1700000100000
	var log, ix, tix []byte
	rec := func(off int64, k string, v []byte) record.Record {
		return record.Record{Offset: off, Timestamp: ts + off, Key: []byte(k), Value: v}
	}
	opts := record.DefaultBatchOptions()
	opts.KeepOffsets = true
	opts.LeaderEpoch = 1
	// Offsets 0..5 with 1, 2 and 5 cleaned away; 3 is a tombstone.
	opts.LastOffsetDelta = 5
	log = must(record.AppendBatch(log, opts, []record.Record{rec(0, "k0", []byte("v0")), rec(3, "k3", nil), rec(4, "k\x00\xff", []byte("bin\x7f\x80"))}))
	// Offsets 6..11 (gzip) keeping 9 and a tombstone at 11.
	p2 := len(log)
	opts.BaseOffset, opts.Codec, opts.LastOffsetDelta = 6, record.CodecGzip, 5
	log = must(record.AppendBatch(log, opts, []record.Record{rec(9, "k9", []byte("v9")), rec(11, "k1", nil)}))
	ix = ixEntryBytes(ix, 0, 11, p2)
	tix = tixEntryBytes(tix, 0, ts+11, 11)
	// Offsets 12..14: every record cleaned away, the batch stays (empty).
	p3 := len(log)
	opts.BaseOffset, opts.Codec, opts.LastOffsetDelta = 12, record.CodecNone, 2
	log = must(record.AppendBatch(log, opts, nil))
	ix = ixEntryBytes(ix, 0, 14, p3)
	// Offsets 15..17 with a delete horizon: tombstone 15 kept until then.
	opts.BaseOffset, opts.LastOffsetDelta, opts.DeleteHorizon = 15, -1, ts+86400000
	log = must(record.AppendBatch(log, opts, []record.Record{rec(15, "k0", nil), rec(17, "k7", []byte("v17"))}))
	tix = tixEntryBytes(tix, 0, ts+17, 17)
	return fixture{"compacted", map[string][]byte{seg0 + ".log": log, seg0 + ".index": ix, seg0 + ".timeindex": tix}}
}

// controlFixture: a committed and an aborted transaction with their control
// batches, and a LogAppendTime batch.
func controlFixture(t *testing.T) fixture {
	const ts = 1700000200000
	var log, ix, tix []byte
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional, opts.LeaderEpoch = 7, 1, 0, true, 2
	recs := []record.Record{
		{Timestamp: ts, Key: []byte("order-1"), Value: []byte(`{"qty":1}`), Headers: []record.Header{{Key: "trace", Value: []byte("t1")}, {Key: "span", Value: nil}}},
		{Timestamp: ts + 1, Key: []byte("order-2"), Value: []byte(`{"qty":2}`)},
		{Timestamp: ts + 2, Key: nil, Value: []byte("no key")},
	}
	log = must(record.AppendBatch(log, opts, recs))
	p := len(log)
	copts := opts
	copts.BaseOffset, copts.BaseSequence = 3, -1
	log = must(record.AppendEndTxnBatch(log, copts, true, 5, ts+3))
	ix = ixEntryBytes(ix, 0, 3, p)
	tix = tixEntryBytes(tix, 0, ts+3, 3)
	opts.BaseOffset, opts.BaseSequence = 4, 3
	log = must(record.AppendBatch(log, opts, recs[:2]))
	copts.BaseOffset = 6
	log = must(record.AppendEndTxnBatch(log, copts, false, 5, ts+6))
	lopts := record.DefaultBatchOptions()
	lopts.BaseOffset, lopts.LogAppendTime, lopts.AppendTime, lopts.LeaderEpoch = 7, true, ts+100, 2
	p = len(log)
	log = must(record.AppendBatch(log, lopts, []record.Record{{Timestamp: ts + 50, Key: []byte("lat"), Value: []byte("log append time")}}))
	ix = ixEntryBytes(ix, 0, 7, p)
	tix = tixEntryBytes(tix, 0, ts+100, 7)
	// The aborted transaction (4..5, marker 6) in the aborted-transaction
	// index, as the log writes it: verify checks the two agree.
	txn := producer.AppendAbortedTxn(nil, producer.AbortedTxn{ProducerID: 7, FirstOffset: 4, LastOffset: 6, LastStableOffset: 7})
	return fixture{"control", map[string][]byte{seg0 + ".log": log, seg0 + ".index": ix, seg0 + ".timeindex": tix, seg0 + ".txnindex": txn}}
}

// goldenModes are the dumplog invocations compared against golden files.
var goldenModes = []struct {
	name string
	args []string
}{
	{"shallow", nil},
	{"deep", []string{"--deep-iteration", "--print-data"}},
	{"json", []string{"--deep-iteration", "--print-data", "--json"}},
	{"hex", []string{"--print-data-log", "--data-encoding", "hex"}},
}

func TestDumplogGolden(t *testing.T) {
	if *update {
		for _, f := range buildFixtures(t) {
			dir := filepath.Join("testdata", f.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for n, b := range f.files {
				if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, name := range []string{"codecs", "legacy", "compacted", "control"} {
		dir := filepath.Join("testdata", name)
		files := []string{filepath.Join(dir, seg0+".log"), filepath.Join(dir, seg0+".index"), filepath.Join(dir, seg0+".timeindex")}
		for _, m := range goldenModes {
			t.Run(name+"-"+m.name, func(t *testing.T) {
				stdout, stderr, code := run(t, append(append([]string{"dumplog"}, m.args...), files...)...)
				got := fmt.Sprintf("%s--- stderr\n%s--- exit %d\n", stdout, stderr, code)
				golden := filepath.Join("testdata", "golden", name+"-"+m.name+".txt")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create)", err)
				}
				if got != string(want) {
					t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", golden, got, want)
				}
				if code != ExitOK {
					t.Errorf("exit %d, want 0 for a healthy fixture", code)
				}
				if m.name == "json" {
					checkJSONLines(t, stdout)
				}
			})
		}
		t.Run(name+"-verify", func(t *testing.T) {
			stdout, stderr, code := run(t, "verify", dir)
			if code != ExitOK {
				t.Errorf("verify %s: exit %d\n%s%s", dir, code, stdout, stderr)
			}
		})
	}
}

// checkJSONLines parses every line as a JSON object with a known type and the
// fields the issue lists for it.
func checkJSONLines(t *testing.T, s string) {
	t.Helper()
	fields := map[string][]string{
		"batch": {"file", "baseOffset", "lastOffset", "count", "position", "size", "magic", "compresscodec", "crc", "isvalid",
			"timestampType", "maxTimestamp", "producerId", "producerEpoch", "baseSequence", "lastSequence",
			"partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs"},
		"record":           {"file", "offset", "timestamp", "timestampType", "keySize", "valueSize", "sequence", "headerKeys", "key", "payload"},
		"index_entry":      {"file", "offset", "position"},
		"time_index_entry": {"file", "timestamp", "offset"},
		"problem":          {"file", "position", "offset", "kind", "message"},
	}
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, line)
		}
		typ, _ := m["type"].(string)
		want, ok := fields[typ]
		if !ok {
			t.Fatalf("line %d: unknown type %q", i+1, typ)
		}
		for _, f := range want {
			if _, ok := m[f]; !ok {
				if typ == "record" && m["endTxnMarker"] != nil && (f == "key" || f == "payload") {
					continue // control records print their marker instead
				}
				t.Errorf("line %d (%s): no field %q", i+1, typ, f)
			}
		}
	}
}

// TestDumplogJSONValues checks a few JSON values exactly: unsigned CRC, null
// key and payload, delete horizon, the control marker.
func TestDumplogJSONValues(t *testing.T) {
	stdout, _, code := run(t, "dumplog", "--deep-iteration", "--print-data", "--json",
		filepath.Join("testdata", "compacted", seg0+".log"), filepath.Join("testdata", "control", seg0+".log"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var batches, records []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		switch m["type"] {
		case "batch":
			batches = append(batches, m)
		case "record":
			records = append(records, m)
		}
	}
	crcOK := false
	for _, b := range batches {
		if c := b["crc"].(float64); c < 0 {
			t.Errorf("negative crc %v", c)
		} else if c >= 1<<31 {
			crcOK = true
		}
	}
	_ = crcOK // an unsigned CRC above 2^31 is likely but not certain in small fixtures
	if b := batches[3]; b["deleteHorizonMs"] != float64(1700000100000+86400000) {
		t.Errorf("delete horizon: %v", b["deleteHorizonMs"])
	}
	if b := batches[0]; b["deleteHorizonMs"] != nil || b["lastOffset"] != float64(5) || b["count"] != float64(3) {
		t.Errorf("first compacted batch: %v", b)
	}
	// compacted: 0, 3 (tombstone), 4, 9, 11 (tombstone), 15 (tombstone), 17
	if r := records[1]; r["offset"] != float64(3) || r["payload"] != nil || r["valueSize"] != float64(-1) {
		t.Errorf("tombstone record: %v", r)
	}
	if r := records[2]; r["key"] != `k\x00\xff` || r["payload"] != `bin\x7f\x80` {
		t.Errorf("escaped text: key %q payload %q", r["key"], r["payload"])
	}
	var commit map[string]any
	for _, r := range records {
		if r["endTxnMarker"] == "COMMIT" {
			commit = r
		}
	}
	if commit == nil || commit["coordinatorEpoch"] != float64(5) || commit["offset"] != float64(3) {
		t.Errorf("commit marker: %v", commit)
	}
}

// TestDumplogFlagsAfterFile: flags placed after the file behave as before it,
// for every dumplog flag that changes the output.
func TestDumplogFlagsAfterFile(t *testing.T) {
	f := filepath.Join("testdata", "control", seg0+".log")
	for _, flags := range [][]string{
		{"--deep-iteration"},
		{"--print-data-log"},
		{"--json", "--deep-iteration"},
		{"--data-encoding", "base64", "--print-data"},
		{"--offsets", "3:5", "--deep-iteration"},
		{"--max-bytes", "200"},
	} {
		before, _, c1 := run(t, append(append([]string{"dumplog"}, flags...), f)...)
		after, _, c2 := run(t, append([]string{"dumplog", f}, flags...)...)
		plain, _, _ := run(t, "dumplog", f)
		if before != after || c1 != c2 {
			t.Errorf("%v: output differs when the flags follow the file", flags)
		}
		if before == plain {
			t.Errorf("%v: the flags changed nothing", flags)
		}
	}
}

func TestDumplogOffsetsAndMaxBytes(t *testing.T) {
	f := filepath.Join("testdata", "compacted", seg0+".log")
	stdout, _, code := run(t, "dumplog", "--deep-iteration", "--offsets", "4:15", f)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var offs []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "| offset: ") {
			offs = append(offs, strings.Fields(l)[2])
		}
	}
	if got := strings.Join(offs, ","); got != "4,9,11" {
		t.Errorf("--offsets 4:15 printed records %s, want 4,9,11", got)
	}
	stdout, _, code = run(t, "dumplog", "--max-bytes", "100", f)
	if code != 0 || strings.Count(stdout, "baseOffset:") != 1 || strings.Contains(stdout, "invalid bytes") {
		t.Errorf("--max-bytes 100: exit %d\n%s", code, stdout)
	}
	for _, bad := range []string{"5", "5:5", "x:9", "9:3"} {
		if _, _, code := run(t, "dumplog", "--offsets", bad, f); code != ExitUsage {
			t.Errorf("--offsets %s: exit %d, want 2", bad, code)
		}
	}
}

// TestDumplogDamaged: an invalid batch and trailing bytes print isvalid: false
// and Kafka's "Found N invalid bytes" line, and exit 1.
func TestDumplogDamaged(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "control", seg0+".log"))
	if err != nil {
		t.Fatal(err)
	}
	b = append([]byte(nil), b...)
	b[100] ^= 0xff // inside the first batch's records
	b = append(b, 1, 2, 3, 4, 5, 6, 7)
	p := filepath.Join(t.TempDir(), seg0+".log")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, code := run(t, "dumplog", "--deep-iteration", p)
	if code != ExitProblems {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stdout, "isvalid: false") || !strings.Contains(stdout, "Found 7 invalid bytes at the end of "+p) {
		t.Errorf("output:\n%s", stdout)
	}
	stdout, _, _ = run(t, "dumplog", "--json", p)
	if !strings.Contains(stdout, `"kind":"crc_mismatch"`) || !strings.Contains(stdout, `"kind":"torn_entry"`) {
		t.Errorf("json output:\n%s", stdout)
	}
}

func TestDumplogIndexModes(t *testing.T) {
	ix := filepath.Join("testdata", "compacted", seg0+".index")
	tix := filepath.Join("testdata", "compacted", seg0+".timeindex")
	stdout, stderr, code := run(t, "dumplog", "--verify-index-only", ix, tix)
	if code != 0 || strings.Contains(stdout, "PROBLEM") {
		t.Errorf("verify-index-only on a good index: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, code = run(t, "dumplog", "--verify-index-only", filepath.Join("testdata", "compacted", seg0+".log"))
	if code != 0 || strings.Count(stdout, "every entry matches") != 2 {
		t.Errorf("verify-index-only of a .log checks its two indexes: exit %d\n%s", code, stdout)
	}
	stdout, _, code = run(t, "dumplog", "--index-sanity-check", ix, tix)
	if code != 0 || strings.Count(stdout, "passed sanity check") != 2 {
		t.Errorf("index-sanity-check: exit %d\n%s", code, stdout)
	}
	// An entry whose position is inside a batch.
	dir := t.TempDir()
	for _, n := range []string{".log", ".timeindex"} {
		copyFile(t, filepath.Join("testdata", "compacted", seg0+n), filepath.Join(dir, seg0+n))
	}
	if err := os.WriteFile(filepath.Join(dir, seg0+".index"), ixEntryBytes(nil, 0, 9, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, code = run(t, "dumplog", "--verify-index-only", "--json", filepath.Join(dir, seg0+".index"))
	if code != ExitProblems || !strings.Contains(stdout, `"kind":"index_position"`) {
		t.Errorf("bad index: exit %d\n%s", code, stdout)
	}
	// A sanity check failure: last offset below the base.
	bad := filepath.Join(dir, "00000000000000000100.index")
	if err := os.WriteFile(bad, ixEntryBytes(nil, 100, 50, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code := run(t, "dumplog", "--index-sanity-check", bad); code != ExitProblems {
		t.Errorf("sanity check of a bad index: exit %d, want 1", code)
	}
}

func TestDumplogOtherFiles(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "recovery-point-offset-checkpoint")
	os.WriteFile(ckpt, []byte("0\n2\nfoo 1 99\nfoo 0 1234\n"), 0o644)
	epochs := filepath.Join(dir, "leader-epoch-checkpoint")
	os.WriteFile(epochs, []byte("0\n2\n0 0\n3 120\n"), 0o644)
	txn := filepath.Join(dir, seg0+".txnindex")
	var tb []byte
	tb = binary.BigEndian.AppendUint16(tb, 0)
	for _, v := range []int64{7, 4, 6, 7} {
		tb = binary.BigEndian.AppendUint64(tb, uint64(v))
	}
	os.WriteFile(txn, tb, 0o644)
	snap := filepath.Join(dir, "00000000000000000008.snapshot")
	var sb []byte
	sb = binary.BigEndian.AppendUint16(sb, 1)
	sb = append(sb, 0, 0, 0, 0)
	sb = binary.BigEndian.AppendUint32(sb, 1)
	sb = binary.BigEndian.AppendUint64(sb, 7)                          // producer id
	sb = binary.BigEndian.AppendUint16(sb, 1)                          // epoch
	sb = binary.BigEndian.AppendUint32(sb, 4)                          // last sequence
	sb = binary.BigEndian.AppendUint64(sb, 5)                          // last offset
	sb = binary.BigEndian.AppendUint32(sb, 1)                          // offset delta
	sb = binary.BigEndian.AppendUint64(sb, 1700000200001)              // timestamp
	sb = binary.BigEndian.AppendUint32(sb, 5)                          // coordinator epoch
	sb = binary.BigEndian.AppendUint64(sb, uint64(0xffffffffffffffff)) // no open txn
	binary.BigEndian.PutUint32(sb[2:], record.CRC32C(sb[6:]))
	os.WriteFile(snap, sb, 0o644)
	notes := filepath.Join(dir, "notes.txt") // exists, but no file dumplog knows
	os.WriteFile(notes, []byte("hello\n"), 0o644)
	stdout, stderr, code := run(t, "dumplog", "--files", ckpt+","+epochs, txn, snap, notes)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"topic: foo partition: 0 offset: 1234\ntopic: foo partition: 1 offset: 99\n",
		"epoch: 0 startOffset: 0\nepoch: 3 startOffset: 120\n",
		"version: 0 producerId: 7 firstOffset: 4 lastOffset: 6 lastStableOffset: 7\n",
		"producerId: 7 producerEpoch: 1 coordinatorEpoch: 5 currentTxnFirstOffset: -1 lastTimestamp: 1700000200001 firstSequence: 3 lastSequence: 4 lastOffset: 5 offsetDelta: 1 timestamp: 1700000200001\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("missing %q in\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "Ignoring unknown file") {
		t.Errorf("stderr: %s", stderr)
	}
	stdout, _, _ = run(t, "dumplog", "--json", ckpt, epochs)
	checkJSONLinesTypes(t, stdout, "checkpoint_entry")
	sb[len(sb)-1] ^= 1
	os.WriteFile(snap, sb, 0o644)
	if _, _, code := run(t, "dumplog", snap); code != ExitProblems {
		t.Errorf("snapshot with a bad CRC: exit %d, want 1", code)
	}
}

func checkJSONLinesTypes(t *testing.T, s, typ string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["type"] != typ {
			t.Errorf("line %q: %v", line, err)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "tab\tnl\n\x01", "héllo ☃", "bad \xff utf8", "\u2028"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q -> %s: %v", s, got, err)
			continue
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Errorf("%q -> %s -> %q", s, got, back)
		}
	}
}

// TestDumplogOffsetsDecoder: __consumer_offsets records encoded by franz-go's
// kmsg (an encoder that is not ours) decode to Kafka-shaped JSON.
func TestDumplogOffsetsDecoder(t *testing.T) {
	ck := kmsg.OffsetCommitKey{Version: 1, Group: "g1", Topic: "orders", Partition: 3}
	cv := kmsg.NewOffsetCommitValue()
	cv.Version, cv.Offset, cv.LeaderEpoch, cv.Metadata, cv.CommitTimestamp = 3, 42, 5, "meta", 1700000400000
	gk := kmsg.GroupMetadataKey{Version: 2, Group: "g1"}
	gv := kmsg.NewGroupMetadataValue()
	proto, leader := "range", "m-1"
	gv.Version, gv.ProtocolType, gv.Generation, gv.Protocol, gv.Leader, gv.CurrentStateTimestamp = 3, "consumer", 7, &proto, &leader, 1700000400001
	gv.Members = []kmsg.GroupMetadataValueMember{{MemberID: "m-1", ClientID: "c", ClientHost: "/10.0.0.1", RebalanceTimeoutMillis: 300000, SessionTimeoutMillis: 45000, Subscription: []byte{1}, Assignment: []byte{2}}}
	recs := []record.Record{
		{Timestamp: 1700000400000, Key: ck.AppendTo(nil), Value: cv.AppendTo(nil)},
		{Timestamp: 1700000400001, Key: gk.AppendTo(nil), Value: gv.AppendTo(nil)},
		{Timestamp: 1700000400002, Key: ck.AppendTo(nil), Value: nil},
		{Timestamp: 1700000400003, Key: []byte{0, 9, 'x'}, Value: []byte("raw")},
	}
	p := filepath.Join(t.TempDir(), seg0+".log")
	write(t, p, must(record.AppendBatch(nil, record.DefaultBatchOptions(), recs)))
	stdout, _, code := run(t, "dumplog", "--offsets-decoder", "--json", p)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), stdout)
	}
	type rec struct {
		Key, Payload json.RawMessage
	}
	var got []rec
	for _, l := range lines[1:] {
		var r rec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got = append(got, r)
	}
	want := []rec{
		{json.RawMessage(`{"type":"1","data":{"group":"g1","topic":"orders","partition":3}}`),
			json.RawMessage(`{"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"meta","commitTimestamp":1700000400000}}`)},
		{json.RawMessage(`{"type":"2","data":{"group":"g1"}}`),
			json.RawMessage(`{"version":"3","data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m-1","currentStateTimestamp":1700000400001,"members":[{"memberId":"m-1","groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":"AQ==","assignment":"Ag=="}]}}`)},
		{json.RawMessage(`{"type":"1","data":{"group":"g1","topic":"orders","partition":3}}`), json.RawMessage(`null`)},
		{json.RawMessage(`"\\x00\\x09x"`), json.RawMessage(`"raw"`)},
	}
	for i := range want {
		if string(got[i].Key) != string(want[i].Key) || string(got[i].Payload) != string(want[i].Payload) {
			t.Errorf("record %d:\n got  %s %s\n want %s %s", i, got[i].Key, got[i].Payload, want[i].Key, want[i].Payload)
		}
	}
	stdout, _, _ = run(t, "dumplog", p, "--offsets-decoder")
	if !strings.Contains(stdout, ` key: {"type":"1","data":{"group":"g1","topic":"orders","partition":3}} payload: {"version":"3",`) {
		t.Errorf("human output:\n%s", stdout)
	}
}

// TestDumplogMissingPath: a path that does not exist is an I/O error (exit
// 2, named on stderr), not an unknown file to ignore; so is a directory.
func TestDumplogMissingPath(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, "nonexistent"), filepath.Join(dir, "gone.log"), dir} {
		stdout, stderr, code := run(t, "dumplog", p)
		if code != ExitUsage {
			t.Errorf("dumplog %s: exit %d, want %d\n%s%s", p, code, ExitUsage, stdout, stderr)
		}
		if strings.Contains(stderr, "Ignoring") || !strings.Contains(stderr, p) {
			t.Errorf("dumplog %s: stderr %q", p, stderr)
		}
	}
}
