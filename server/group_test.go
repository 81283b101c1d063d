package server

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groupBrokerSettings make group tests quick: a short initial rebalance
// delay, short sessions allowed, few offsets partitions.
var groupBrokerSettings = []string{
	"group.initial.rebalance.delay.ms=50",
	"group.min.session.timeout.ms=500",
	"offsets.topic.num.partitions=4",
}

func startGroupServer(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	return startServer(t, dir, append(append([]string{}, groupBrokerSettings...), extra...)...)
}

// memberOpts are the franz-go group settings of these tests.
func memberOpts(addr, group, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(1500 * time.Millisecond),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryTimeout(10 * time.Second),
	}
}

// groupMember is a franz-go group consumer polling in the background; it
// tracks the partitions it owns and every record it got.
type groupMember struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	owned map[int32]bool
	recs  []*kgo.Record
	gens  []int32 // generation each record was polled in
	errs  []error
}

func startMember(t testing.TB, s *Server, name, group, topic string, extra ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{name: name, owned: map[int32]bool{}, done: make(chan struct{})}
	set := func(parts map[string][]int32, own bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, ps := range parts {
			for _, p := range ps {
				if own {
					m.owned[p] = true
				} else {
					delete(m.owned, p)
				}
			}
		}
	}
	opts := append(memberOpts(s.Addr().String(), group, topic),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { set(p, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { set(p, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { set(p, false) }),
	)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			_, before := cl.GroupMetadata()
			fs := cl.PollFetches(ctx)
			_, after := cl.GroupMetadata()
			gen := before
			if before != after {
				gen = -1 // a rebalance ran meanwhile: ambiguous
			}
			m.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				if ctx.Err() == nil {
					m.errs = append(m.errs, err)
				}
			})
			for _, r := range fs.Records() {
				m.recs = append(m.recs, r)
				m.gens = append(m.gens, gen)
			}
			m.mu.Unlock()
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close stops polling and closes the client (LeaveGroup).
func (m *groupMember) close() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

func (m *groupMember) ownedParts() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.owned {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *groupMember) records() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*kgo.Record(nil), m.recs...)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// waitSettled waits until group id is Stable and each member's client is
// in the group's current generation (no rebalance pending or running), and
// returns that generation.
func waitSettled(t testing.TB, s *Server, id string, ms ...*groupMember) int32 {
	t.Helper()
	var gen int32
	waitFor(t, 20*time.Second, "group "+id+" to settle", func() bool {
		g, st := groupGeneration(s, id)
		if st != groupStable {
			return false
		}
		for _, m := range ms {
			if _, mg := m.cl.GroupMetadata(); mg != g {
				return false
			}
		}
		gen = g
		return true
	})
	return gen
}

// lastOffsets is the highest offset m got per partition.
func (m *groupMember) lastOffsets() map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]int64{}
	for _, r := range m.recs {
		if o, ok := out[r.Partition]; !ok || r.Offset > o {
			out[r.Partition] = r.Offset
		}
	}
	return out
}

// caughtUp reports whether m got every partition in last up to its offset.
func (m *groupMember) caughtUp(last map[int32]int64) bool {
	got := m.lastOffsets()
	for p, o := range last {
		if got[p] < o {
			return false
		}
	}
	return true
}

func ownCount(ms ...*groupMember) func() string {
	return func() string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s=%v ", m.name, m.ownedParts())
		}
		return b.String()
	}
}

// TestGroupSplitLeaveAndVanish: two franz-go members split a 6-partition
// topic 3+3 (range and cooperative-sticky); when one leaves the other takes
// all 6; a third member run as a subprocess and SIGKILLed (no LeaveGroup)
// loses its partitions to the survivor after the session timeout.
func TestGroupSplitLeaveAndVanish(t *testing.T) {
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		t.Run(bal.name, func(t *testing.T) {
			s := startGroupServer(t, t.TempDir())
			createTopic(t, s, "split", 6)
			group := "g-" + bal.name
			a := startMember(t, s, "a", group, "split", kgo.Balancers(bal.b))
			b := startMember(t, s, "b", group, "split", kgo.Balancers(bal.b))
			show := ownCount(a, b)
			waitFor(t, 20*time.Second, "a 3+3 split", func() bool {
				pa, pb := a.ownedParts(), b.ownedParts()
				return len(pa) == 3 && len(pb) == 3 && disjoint(pa, pb)
			})
			t.Logf("split: %s", show())
			b.close()
			waitFor(t, 20*time.Second, "a to own all 6 after b left", func() bool { return len(a.ownedParts()) == 6 })

			child := startChildMember(t, s, group, "split", bal.name)
			waitFor(t, 20*time.Second, "a to give 3 partitions to the child", func() bool { return len(a.ownedParts()) == 3 })
			killed := time.Now()
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()
			waitFor(t, 20*time.Second, "a to own all 6 after the child vanished", func() bool { return len(a.ownedParts()) == 6 })
			took := time.Since(killed)
			t.Logf("rebalance after SIGKILL took %v (session timeout 1.5s)", took)
			if took < 1200*time.Millisecond {
				t.Fatalf("partitions moved %v after the kill, before the 1.5s session timeout could expire", took)
			}
		})
	}
}

func disjoint(a, b []int32) bool {
	seen := map[int32]bool{}
	for _, p := range a {
		seen[p] = true
	}
	for _, p := range b {
		if seen[p] {
			return false
		}
	}
	return true
}

// startChildMember re-executes the test binary as a group member
// (TestGroupChildMember) and waits until it reports an assignment.
func startChildMember(t *testing.T, s *Server, group, topic, balancer string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestGroupChildMember$", "-test.v")
	cmd.Env = append(os.Environ(), "STRATA_GROUP_CHILD="+strings.Join([]string{s.Addr().String(), group, topic, balancer}, ","))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	assigned := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "CHILD ASSIGNED") {
				once.Do(func() { close(assigned) })
			}
		}
	}()
	select {
	case <-assigned:
	case <-time.After(20 * time.Second):
		t.Fatal("child member got no assignment")
	}
	return cmd
}

// TestGroupChildMember is the subprocess of startChildMember; it does
// nothing in a normal run.
func TestGroupChildMember(t *testing.T) {
	env := os.Getenv("STRATA_GROUP_CHILD")
	if env == "" {
		t.Skip("run as a subprocess by TestGroupSplitLeaveAndVanish")
	}
	f := strings.Split(env, ",")
	bal := kgo.GroupBalancer(kgo.RangeBalancer())
	if f[3] == "cooperative-sticky" {
		bal = kgo.CooperativeStickyBalancer()
	}
	opts := append(memberOpts(f[0], f[1], f[2]), kgo.Balancers(bal),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) {
			fmt.Printf("CHILD ASSIGNED %v\n", p)
		}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx)
	}
}
