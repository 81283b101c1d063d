package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatConsume reads topic from the beginning to the end (-e) with kcat and
// returns its "offset key" lines; the test fails if kcat does not exit 0.
func kcatConsume(t *testing.T, addr, topic string) []string {
	t.Helper()
	bin, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not installed and CI=true (scripts/deps.sh installs it)")
		}
		t.Skip("kcat not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q",
		"-f", "%o %k\n", "-X", "socket.timeout.ms=10000")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || ctx.Err() != nil {
		t.Fatalf("kcat -C -e %s: %v\nstderr: %s\nstdout: %s", topic, err, errb.String(), out.String())
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(out.String()), " ", "="))
}

// franzConsume reads topic from the start with franz-go until it has want
// records, failing on any fetch error.
func franzConsume(t *testing.T, addr, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go: %d of %d records of %s before the deadline", len(got), want, topic)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("franz-go fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// TestCompactedLogConsumable: strata compact on keyless lz4 data, and on keyed
// lz4 data, leaves empty batches that kcat (librdkafka) and franz-go consume
// through the broker to the end; records appended after them are read. Before,
// the kept empty batch stayed lz4-compressed (72 bytes, count 0) and kcat
// aborted (rdbuf.c: rd_slice_init_full: Assertion 'r == 0' failed).
func TestCompactedLogConsumable(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct{ dir, keys string }{{"keyless-0", "0"}, {"keyed-0", "7"}} {
		if _, stderr, code := run(t, "bench", "log", "--dir", filepath.Join(root, p.dir), "--codec", "lz4", "--records", "3000",
			"--batch-records", "100", "--record-size", "30", "--keys", p.keys, "--segment-bytes", "20000", "--keep", "--runs", "1"); code != 0 {
			t.Fatalf("bench log: exit %d: %s", code, stderr)
		}
	}
	write(t, filepath.Join(root, topicsFile), []byte(`{"version":1,"topics":[
 {"name":"keyless","topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":1,"configs":{"cleanup.policy":"compact"}},
 {"name":"keyed","topic_id":"AAAAAAAAAAAAAAAAAAAAAg","partitions":1,"configs":{"cleanup.policy":"compact"}}]}`))
	if stdout, stderr, code := run(t, "compact", root); code != ExitOK {
		t.Fatalf("compact: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, d := range []string{"keyless-0", "keyed-0"} {
		files, _ := filepath.Glob(filepath.Join(root, d, "*.log"))
		stdout, _, code := run(t, append([]string{"dumplog"}, files...)...)
		if code != ExitOK {
			t.Fatalf("dumplog %s: exit %d", d, code)
		}
		for _, l := range strings.Split(stdout, "\n") {
			if strings.Contains(l, " count: 0 ") && (!strings.Contains(l, "compresscodec: none") || !strings.Contains(l, " size: 61 ")) {
				t.Errorf("%s: empty batch not written as Kafka's bare header: %s", d, l)
			}
		}
	}

	s := startBroker(t, root)
	addr := s.Addr().String()
	if got := kcatConsume(t, addr, "keyless"); len(got) != 0 {
		t.Errorf("kcat read %d records of the compacted keyless topic: %v", len(got), got)
	}
	got := kcatConsume(t, addr, "keyed")
	keys := map[string]bool{}
	for i, g := range got {
		off, k, _ := strings.Cut(g, "=")
		keys[k] = true
		if off != fmt.Sprint(2993+i) {
			t.Errorf("kcat record %d at offset %s, want %d", i, off, 2993+i)
		}
	}
	if len(got) != 7 || len(keys) != 7 {
		t.Errorf("kcat read %v from the compacted keyed topic, want the 7 keys' last records", got)
	}
	if recs := franzConsume(t, addr, "keyed", 7); recs[0].Offset != 2993 || recs[6].Offset != 2999 {
		t.Errorf("franz-go read offsets %d..%d, want 2993..2999", recs[0].Offset, recs[len(recs)-1].Offset)
	}

	// A record written after the compacted data is read past the empty batches.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "keyless", Key: []byte("k"), Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := kcatConsume(t, addr, "keyless"); fmt.Sprint(got) != "[3000=k]" {
		t.Errorf("kcat after a new record: %v, want [3000=k]", got)
	}
	if recs := franzConsume(t, addr, "keyless", 1); recs[0].Offset != 3000 || string(recs[0].Value) != "after" {
		t.Errorf("franz-go after a new record: offset %d %q", recs[0].Offset, recs[0].Value)
	}
}
