package server

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readCommitted returns the values a read_committed consumer must see in
// topic/partition, computed from the log itself: records of a transaction
// count once its COMMIT marker follows them, never after an ABORT, not
// while it is open; other records count at once.
func readCommitted(t *testing.T, s *Server, topic string, partition int32) (committed []string, open int) {
	t.Helper()
	p := s.topics.partition(topic, partition)
	type rec struct {
		offset int64
		value  string
	}
	var out []rec
	pending := map[int64][]rec{}
	err := readLogTxn(p, func(pid, offset int64, _, value []byte) error {
		if pid < 0 {
			out = append(out, rec{offset, string(value)})
		} else {
			pending[pid] = append(pending[pid], rec{offset, string(value)})
		}
		return nil
	}, func(pid int64, commit bool) error {
		if commit {
			out = append(out, pending[pid]...)
		}
		delete(pending, pid)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pending {
		open += len(v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].offset < out[j].offset })
	for _, r := range out {
		committed = append(committed, r.value)
	}
	return committed, open
}

// TestTxnExactlyOnceKilled: franz-go's GroupTransactSession copies "in" to
// "out" in a child process (TestTxnEOSChild) that is SIGKILLed at random
// points and restarted; once a last child consumed everything, "out" as a
// read_committed consumer sees it holds every input record exactly once.
func TestTxnExactlyOnceKilled(t *testing.T) {
	eosKilled(t, "TestTxnEOSChild", "STRATA_EOS_CHILD")
}

// eosKilled is the harness of the exactly-once tests: a broker with 400
// records in "in" (2 partitions), a consume-transform-produce child
// process (the test child, told the broker's address in $env) that copies
// them to "out" transactionally, SIGKILLed at random points five times and
// restarted; a last child (restarted whenever it exits) runs until
// everything is consumed and committed. "out" read as read_committed must
// hold every input record exactly once.
func eosKilled(t *testing.T, child, env string) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	// A child killed between its TxnOffsetCommit and its EndTxn leaves the
	// group's offsets pending: the next child's OffsetFetch (require_stable)
	// waits until that transaction is aborted. franz-go sends InitProducerId
	// (which would abort it at once) only at its first produce, so the wait
	// is the transaction timeout (the child's 5 s) plus this sweep interval.
	s := startServer(t, t.TempDir(), "group.min.session.timeout.ms=500", "group.initial.rebalance.delay.ms=0",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=250")
	createTopic(t, s, "in", 2)
	createTopic(t, s, "out", 2)
	ctx := testCtx(t)
	prod := newClient(t, s, kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	const n = 400
	for i := 0; i < n; i++ { // one record per batch: small fetches, many transactions
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("r%04d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("STRATA_EOS_SEED"); v != "" { // replays a failure's kill points
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)

	for kill := 0; kill < 5; kill++ {
		c := startEOSChild(t, s, child, env)
		// Kill after a random number of commits and a random delay: in the
		// middle of a transaction, between two, or while it commits.
		wait := rng.Intn(4)
		deadline := time.After(30 * time.Second)
		for i := 0; i < wait; i++ {
			select {
			case <-c.commits:
			case <-c.exited:
				t.Fatalf("child %d exited before it was killed (%v, seed %d); its output:\n%s", kill, c.cmd.ProcessState, seed, c.output())
			case <-deadline:
				t.Fatalf("child %d made no progress in 30 s (seed %d); its output:\n%s", kill, seed, c.output())
			}
		}
		time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
		c.kill()
	}
	// A last child runs until everything is consumed and committed.
	c := startEOSChild(t, s, child, env)
	defer func() { c.kill() }() // the last one started
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.exited: // gave up (a fenced or failed transaction): restart it
			t.Logf("last child exited: %v; restarting it; its output:\n%s", c.cmd.ProcessState, c.output())
			c = startEOSChild(t, s, child, env)
		default:
		}
		var got []string
		open := 0
		for p := int32(0); p < 2; p++ {
			c, o := readCommitted(t, s, "out", p)
			got = append(got, c...)
			open += o
		}
		if len(got) >= n && open == 0 {
			seen := map[string]int{}
			for _, v := range got {
				seen[v]++
			}
			for i := 0; i < n; i++ {
				if c := seen[fmt.Sprintf("r%04d", i)]; c != 1 {
					t.Fatalf("r%04d seen %d times by read_committed (seed %d)", i, c, seed)
				}
			}
			if len(got) != n {
				t.Fatalf("%d records, want %d (seed %d)", len(got), n, seed)
			}
			aborts, commits := 0, 0
			for p := int32(0); p < 2; p++ {
				ms, _ := logBatches(t, s, "out", p)
				for _, m := range ms {
					if m.commit {
						commits++
					} else {
						aborts++
					}
				}
			}
			t.Logf("out: %d commit and %d abort markers", commits, aborts)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("read_committed sees %d of %d records, %d still open (seed %d); the last child's output:\n%s", len(got), n, open, seed, c.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eosChild is a running test child: commits gets a value per transaction
// it committed (it prints "EOS COMMITTED"), exited is closed once the
// process has exited and been waited for, and its other output lines are
// kept (the last 200) for a failure's message.
type eosChild struct {
	cmd     *exec.Cmd
	commits chan struct{}
	exited  chan struct{}
	mu      sync.Mutex
	lines   []string
}

// startEOSChild starts the test child with the broker's address in $env.
func startEOSChild(t *testing.T, s *Server, child, env string) *eosChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+s.Addr().String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // one pipe, read below
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &eosChild{cmd: cmd, commits: make(chan struct{}, 1024), exited: make(chan struct{})}
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "EOS COMMITTED") {
				select {
				case c.commits <- struct{}{}:
				default:
				}
				continue
			}
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			if len(c.lines) > 200 {
				c.lines = c.lines[1:]
			}
			c.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	return c
}

// kill is SIGKILL; it returns once the process has been waited for.
func (c *eosChild) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// output is the child's output lines kept so far.
func (c *eosChild) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// TestTxnEOSChild is the consume-transform-produce process of
// TestTxnExactlyOnceKilled; it does nothing in a normal run.
func TestTxnEOSChild(t *testing.T) {
	addr := os.Getenv("STRATA_EOS_CHILD")
	if addr == "" {
		t.Skip("run as a subprocess by TestTxnExactlyOnceKilled")
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("eos-killed"),
		kgo.ConsumerGroup("eos-killed"), kgo.ConsumeTopics("in"), kgo.DefaultProduceTopic("out"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.SessionTimeout(600*time.Millisecond), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.FetchMaxWait(50*time.Millisecond), kgo.FetchMaxPartitionBytes(300), kgo.RetryTimeout(30*time.Second),
		kgo.TransactionTimeout(5*time.Second)) // see eosKilled: bounds a killed predecessor's pending offsets
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			fmt.Println("EOS END ERROR", err)
			continue
		}
		if committed {
			fmt.Println("EOS COMMITTED")
		}
	}
}
