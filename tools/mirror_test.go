package tools

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceOrders writes n records to topic: keys k0..k(keys-1), two headers,
// timestamps in 2020 one millisecond apart. Key kj goes to partition
// j%partitions (not murmur2's choice), so only a mirror that repartitions by
// key lands them where the target's partitioner would.
func produceOrders(t *testing.T, addr, topic string, n, keys int, partitions int32) []*kgo.Record {
	t.Helper()
	return produceRange(t, addr, topic, 0, n, keys, partitions)
}

// produceRange is produceOrders of records from..to-1.
func produceRange(t *testing.T, addr, topic string, from, to, keys int, partitions int32) []*kgo.Record {
	t.Helper()
	cl := testClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{
			Topic: topic, Partition: int32(i%keys) % partitions,
			Key:       fmt.Appendf(nil, "k%d", i%keys),
			Value:     fmt.Appendf(nil, "%s-%d", topic, i),
			Headers:   []kgo.RecordHeader{{Key: "seq", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// byPartition groups records' texts by partition, in offset order.
func byPartition(recs []*kgo.Record) map[int32][]string {
	out := map[int32][]string{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], recordText(r))
	}
	return out
}

// byKey groups records' texts by key, in (partition, offset) order.
func byKey(recs []*kgo.Record) map[string][]string {
	out := map[string][]string{}
	for _, r := range recs {
		out[string(r.Key)] = append(out[string(r.Key)], recordText(r))
	}
	return out
}

// TestMirrorCopiesExactly mirrors 3000 records with keys, headers and
// timestamps from one broker to another and compares them: with
// --preserve-partitions each target partition is its source partition record
// for record; by default each key lands on murmur2(key)'s partition with its
// records in source order. A topic outside the whitelist and the internal
// offsets topic are not mirrored; the group commits every offset.
func TestMirrorCopiesExactly(t *testing.T) {
	for _, preserve := range []bool{true, false} {
		t.Run(fmt.Sprintf("preserve=%v", preserve), func(t *testing.T) {
			src, dst := mirrorBroker(t), mirrorBroker(t)
			createTopic(t, src, "orders", 3)
			createTopic(t, src, "audit", 1)
			sent := produceOrders(t, src, "orders", 3000, 50, 3)
			produceOrders(t, src, "audit", 10, 2, 1)

			opts := testMirrorOptions(t, src, dst, "orders,payments")
			opts.preserve = preserve
			r := startMirror(t, opts)
			waitFor(t, 60*time.Second, "the group to commit every offset of orders",
				func() bool { return groupCaughtUp(t, src, opts.group, "orders") }, r.stderr.String)
			if err := r.stop(t); err != nil {
				t.Fatalf("mirror: %v\n%s", err, r.stderr.String())
			}
			if got := r.m.mirrored.Load(); got != 3000 {
				t.Errorf("mirrored %d records, want 3000", got)
			}

			got := readAll(t, dst, "orders")
			if len(got) != len(sent) {
				t.Fatalf("target holds %d records of orders, want %d", len(got), len(sent))
			}
			srcRecs := readAll(t, src, "orders")
			if preserve {
				want, have := byPartition(srcRecs), byPartition(got)
				for p := range int32(3) {
					if !slices.Equal(want[p], have[p]) {
						t.Errorf("partition %d differs: %d records on the source, %d on the target; first source %q, first target %q",
							p, len(want[p]), len(have[p]), first(want[p]), first(have[p]))
					}
				}
			} else {
				want, have := byKey(sortedBySeq(srcRecs)), byKey(got)
				for k, w := range want {
					if !slices.Equal(w, have[k]) {
						t.Errorf("key %s: %d records on the target, want %d in source order", k, len(have[k]), len(w))
					}
				}
				part := kgo.StickyKeyPartitioner(nil).ForTopic("orders")
				for _, rec := range got {
					if want := int32(part.Partition(rec, 3)); rec.Partition != want {
						t.Fatalf("key %s on target partition %d, want %d (murmur2)", rec.Key, rec.Partition, want)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			topics, err := kadm.NewClient(testClient(t, dst)).ListTopicsWithInternal(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if names := topics.Names(); !slices.Equal(names, []string{"orders"}) {
				t.Errorf("target topics %v, want only orders", names)
			}
			if n := len(topics["orders"].Partitions); n != 3 {
				t.Errorf("target orders has %d partitions, want the source's 3", n)
			}
		})
	}
}

// sortedBySeq orders records by their "seq" header (produce order).
func sortedBySeq(recs []*kgo.Record) []*kgo.Record {
	out := slices.Clone(recs)
	seq := func(r *kgo.Record) int {
		var n int
		fmt.Sscanf(string(r.Headers[0].Value), "%d", &n)
		return n
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int { return seq(a) - seq(b) })
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestMirrorPicksUpNewTopics: a topic created on the source while the
// mirror runs is created on the target (with its partition count) and
// mirrored; one that does not match the blacklist's complement is not.
func TestMirrorPicksUpNewTopics(t *testing.T) {
	src, dst := mirrorBroker(t), mirrorBroker(t)
	createTopic(t, src, "first", 1)
	produceOrders(t, src, "first", 100, 5, 1)
	opts := testMirrorOptions(t, src, dst, "x")
	re, err := mirrorTopicFilter("blacklist", "private.*")
	if err != nil {
		t.Fatal(err)
	}
	opts.include, opts.exclude = nil, re
	r := startMirror(t, opts)
	waitFor(t, 60*time.Second, "first mirrored", func() bool { return groupCaughtUp(t, src, opts.group, "first") }, r.stderr.String)

	createTopic(t, src, "later", 4)
	createTopic(t, src, "private-notes", 1)
	sent := produceOrders(t, src, "later", 400, 10, 4)
	produceOrders(t, src, "private-notes", 10, 1, 1)
	waitFor(t, 60*time.Second, "later mirrored", func() bool {
		return endOffsets(t, dst, "later") == 400 && groupCaughtUp(t, src, opts.group, "later")
	}, r.stderr.String)
	if err := r.stop(t); err != nil {
		t.Fatalf("mirror: %v\n%s", err, r.stderr.String())
	}
	got := readAll(t, dst, "later")
	want, have := byKey(sortedBySeq(sent)), byKey(got)
	for k, w := range want {
		if !slices.Equal(w, have[k]) {
			t.Errorf("key %s of the new topic: %d records on the target, want %d in order", k, len(have[k]), len(w))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(testClient(t, dst)).ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); !slices.Equal(names, []string{"first", "later"}) {
		t.Errorf("target topics %v, want first and later", names)
	}
	if n := len(topics["later"].Partitions); n != 4 {
		t.Errorf("target later has %d partitions, want 4", n)
	}
}

// TestMirrorBadInput: each bad command line is refused before anything
// starts, with exit 2 and a message naming the problem; the target broker
// gets no topic and the source no group.
func TestMirrorBadInput(t *testing.T) {
	src, dst := mirrorBroker(t), mirrorBroker(t)
	createTopic(t, src, "orders", 1)
	dir := t.TempDir()
	acks1 := filepath.Join(dir, "acks1.properties")
	if err := os.WriteFile(acks1, []byte("bootstrap.servers="+dst+"\nacks=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badReset := filepath.Join(dir, "reset.properties")
	if err := os.WriteFile(badReset, []byte("bootstrap.servers="+src+"\nauto.offset.reset=smallest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"mirror", "--source-bootstrap", src, "--target-bootstrap", dst, "--group", "bad"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"whitelist does not compile", append(slices.Clone(base), "--whitelist", "orders("), "--whitelist \"orders(\" is not a valid regular expression"},
		{"blacklist does not compile", append(slices.Clone(base), "--blacklist", "[a-"), "--blacklist \"[a-\" is not a valid regular expression"},
		{"both lists", append(slices.Clone(base), "--whitelist", "orders", "--blacklist", "x"), "not both"},
		{"no list", slices.Clone(base), "give --whitelist REGEX or --blacklist REGEX"},
		{"no source", []string{"mirror", "--target-bootstrap", dst, "--whitelist", "orders"}, "no source"},
		{"no target", []string{"mirror", "--source-bootstrap", src, "--whitelist", "orders"}, "no target"},
		{"acks=1", []string{"mirror", "--source-bootstrap", src, "--producer.config", acks1, "--whitelist", "orders"}, "acks=1"},
		{"bad offset reset", []string{"mirror", "--consumer.config", badReset, "--target-bootstrap", dst, "--whitelist", "orders"}, "auto.offset.reset=\"smallest\""},
		{"missing file", []string{"mirror", "--consumer.config", filepath.Join(dir, "nope"), "--target-bootstrap", dst, "--whitelist", "orders"}, "no such file"},
		{"zero streams", append(slices.Clone(base), "--whitelist", "orders", "--num.streams", "0"), "--num.streams must be at least 1"},
	}
	for _, c := range cases {
		stdout, stderr, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, want %d with %q\n%s%s", c.name, code, ExitUsage, c.want, stdout, stderr)
		}
	}
	if n := endOffsets(t, dst, "orders"); n != 0 {
		t.Errorf("target has %d records", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(testClient(t, dst)).ListTopics(ctx)
	if err != nil || len(topics) != 0 {
		t.Errorf("target topics after refused runs: %v %v", topics.Names(), err)
	}
	groups, err := kadm.NewClient(testClient(t, src)).ListGroups(ctx)
	if err != nil || len(groups) != 0 {
		t.Errorf("source groups after refused runs: %v %v", groups.Groups(), err)
	}
}

// TestMirrorPreserveTooFewPartitions: under --preserve-partitions a target
// topic with fewer partitions than the source cannot take the records; the
// mirror says so and exits 1 at once, having committed nothing.
func TestMirrorPreserveTooFewPartitions(t *testing.T) {
	src, dst := mirrorBroker(t), mirrorBroker(t)
	createTopic(t, src, "orders", 3)
	createTopic(t, dst, "orders", 1)
	produceOrders(t, src, "orders", 30, 3, 3)
	stdout, stderr, code := run(t, "mirror", "--source-bootstrap", src, "--target-bootstrap", dst,
		"--whitelist", "orders", "--preserve-partitions", "--group", "few", "--quiet")
	want := "topic orders has 3 partitions on the source but 1 on the target"
	if code != ExitProblems || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, want %d with %q\n%s%s", code, ExitProblems, want, stdout, stderr)
	}
	if n := endOffsets(t, dst, "orders"); n != 0 {
		t.Errorf("target holds %d records", n)
	}
	if n := committedTotal(t, src, "few"); n != 0 {
		t.Errorf("group committed %d offsets", n)
	}
}

// TestMirrorTargetRefuses: a record the target refuses for good (larger than
// its message.max.bytes) stops the mirror with exit 1 and the target's
// error; no offset at or past that record is committed, so nothing the
// target does not hold is marked done.
func TestMirrorTargetRefuses(t *testing.T) {
	src, dst := mirrorBroker(t), mirrorBroker(t, "message.max.bytes=2000")
	createTopic(t, src, "blobs", 1)
	cl := testClient(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 11 {
		v := fmt.Appendf(nil, "small-%d", i)
		if i == 5 {
			v = make([]byte, 10000) // random: no codec shrinks it under the limit
			rand.Read(v)
		}
		recs = append(recs, &kgo.Record{Topic: "blobs", Key: fmt.Appendf(nil, "k%d", i), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		stdout, stderr string
		code           int
	}
	res := make(chan result, 1)
	go func() {
		stdout, stderr, code := run(t, "mirror", "--source-bootstrap", src, "--target-bootstrap", dst,
			"--whitelist", "blobs", "--group", "refused", "--quiet")
		res <- result{stdout, stderr, code}
	}()
	var stdout, stderr string
	var code int
	select {
	case r := <-res:
		stdout, stderr, code = r.stdout, r.stderr, r.code
	case <-time.After(90 * time.Second):
		t.Fatal("the mirror did not stop on a record the target refuses")
	}
	if code != ExitProblems || !strings.Contains(stderr, "the target refused a record") || !strings.Contains(stderr, "MESSAGE_TOO_LARGE") {
		t.Fatalf("exit %d, want %d with the target's MESSAGE_TOO_LARGE\n%s%s", code, ExitProblems, stdout, stderr)
	}
	held := endOffsets(t, dst, "blobs")
	if c := committedTotal(t, src, "refused"); c > 5 || c > held {
		t.Errorf("committed offset %d: past the refused record (5) or past what the target holds (%d)", c, held)
	}
}
