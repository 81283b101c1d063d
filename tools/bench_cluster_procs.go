package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/internal/zkproc"
)

// benchBroker is a strata broker in a child process of strata bench
// cluster: `strata broker --override ...` of this very binary, with its data
// and log in a directory of its own. It dies with the bench (Pdeathsig).
type benchBroker struct {
	id       int32 // 0: a single node
	addr     string
	dataDir  string
	logPath  string
	opts     benchBrokerOpts
	ov       []string
	cmd      *exec.Cmd
	done     chan struct{}
	restarts int
}

// benchBrokerOpts are a started broker's command-line options.
type benchBrokerOpts struct {
	profile  string // --cpuprofile prefix, "" for none
	logLevel string // --log-level, "" for warn
}

// benchCPUTicks is the kernel's clock tick for /proc/PID/stat (USER_HZ,
// 100 on every Linux this runs on).
const benchCPUTicks = 100

// newBenchBroker prepares a broker in dir listening on a free loopback
// port; start runs it.
func newBenchBroker(dir string, id int32, ov []string, opts benchBrokerOpts) (*benchBroker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	b := &benchBroker{id: id, addr: addr, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "broker.log"), opts: opts}
	b.ov = append([]string{"listeners=PLAINTEXT://" + addr, "log.dirs=" + b.dataDir, "strata.metrics.listener=127.0.0.1:0"}, ov...)
	return b, nil
}

// name is how messages call the broker.
func (b *benchBroker) name() string {
	if b.id == 0 {
		return "single-node broker"
	}
	return fmt.Sprintf("broker %d", b.id)
}

// start runs the broker and waits until it accepts connections.
func (b *benchBroker) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"broker", "--log-level", cmp.Or(b.opts.logLevel, "warn")}
	for _, o := range b.ov {
		args = append(args, "--override", o)
	}
	if b.opts.profile != "" {
		args = append(args, "--cpuprofile", fmt.Sprintf("%s.%s.%d.pprof", b.opts.profile, strings.ReplaceAll(b.name(), " ", "-"), b.restarts))
	}
	if err := os.MkdirAll(filepath.Dir(b.logPath), 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); lf.Close(); close(done) }()
	b.cmd, b.done = cmd, done
	b.restarts++
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			b.cmd = nil
			return fmt.Errorf("%s exited at start; %s", b.name(), b.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.kill()
			return fmt.Errorf("%s not listening on %s after 60 s; %s", b.name(), b.addr, b.logTail())
		}
	}
}

// running reports whether the process is up.
func (b *benchBroker) running() bool { return b.cmd != nil }

// kill is kill -9; it returns once the process is gone.
func (b *benchBroker) kill() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	b.cmd = nil
}

// term sends SIGTERM (a controlled shutdown in a cluster) and waits for the
// exit, killing the process after timeout.
func (b *benchBroker) term(timeout time.Duration) error {
	if b.cmd == nil {
		return nil
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
		b.cmd = nil
		return nil
	case <-time.After(timeout):
		b.kill()
		return fmt.Errorf("%s did not stop within %v of SIGTERM: killed", b.name(), timeout)
	}
}

// cpu is the process's user and system CPU time so far (0 when it is not
// running).
func (b *benchBroker) cpu() time.Duration {
	if b.cmd == nil {
		return 0
	}
	return pidCPU(b.cmd.Process.Pid)
}

// pidCPU reads utime + stime of a process from /proc/PID/stat.
func pidCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count fields after ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / benchCPUTicks
}

func (b *benchBroker) logTail() string {
	data, _ := os.ReadFile(b.logPath)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return "last lines of " + b.logPath + ":\n" + strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// partitionBytes is the size of a partition's .log files in the broker's
// data dir: its log end in bytes (-1 when the directory is not there yet).
func (b *benchBroker) partitionBytes(topic string, p int32) int64 {
	dir := filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// benchCluster is what strata bench cluster started: ZooKeeper and the
// brokers in child processes, under dir.
type benchCluster struct {
	dir     string
	zk      *zkproc.Process
	brokers []*benchBroker
}

// startBenchCluster starts ZooKeeper and n brokers (ids 1..n) with the
// overrides ov, and waits until every broker is registered and one is the
// controller.
func startBenchCluster(dir string, n int, ov []string, opts benchBrokerOpts) (*benchCluster, error) {
	c := &benchCluster{dir: dir}
	zk, err := zkproc.Start(filepath.Join(dir, "zookeeper"), 0, 60*time.Second)
	if err != nil {
		return nil, err
	}
	c.zk = zk
	for id := int32(1); id <= int32(n); id++ {
		bov := append([]string{"zookeeper.connect=" + zk.Addr(), "broker.id=" + strconv.Itoa(int(id))}, ov...)
		b, err := newBenchBroker(filepath.Join(dir, fmt.Sprintf("broker-%d", id)), id, bov, opts)
		if err != nil {
			c.stop(false)
			return nil, err
		}
		c.brokers = append(c.brokers, b)
		if err := b.start(); err != nil {
			c.stop(false)
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = waitUntil(ctx, "every broker registered and a controller elected", func() bool {
		md, err := c.metadata(ctx, "")
		return err == nil && len(md.Brokers) == n && md.ControllerID > 0
	})
	if err != nil {
		c.stop(false)
		return nil, err
	}
	return c, nil
}

// addrs are the live brokers' addresses.
func (c *benchCluster) addrs() []string {
	var out []string
	for _, b := range c.brokers {
		if b.running() {
			out = append(out, b.addr)
		}
	}
	return out
}

// broker is the broker with id.
func (c *benchCluster) broker(id int32) *benchBroker {
	for _, b := range c.brokers {
		if b.id == id {
			return b
		}
	}
	return nil
}

// cpu is the brokers' CPU time so far (live processes only).
func (c *benchCluster) cpu() time.Duration {
	var d time.Duration
	for _, b := range c.brokers {
		d += b.cpu()
	}
	return d
}

// stop ends the brokers, all at once, then ZooKeeper: with SIGTERM when
// graceful (they write their CPU profiles and close their logs cleanly;
// the last ones cannot move their leaderships, so their controlled
// shutdowns give up only after controlled.shutdown.max.retries), else with
// SIGKILL.
func (c *benchCluster) stop(graceful bool) {
	var wg sync.WaitGroup
	for _, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !graceful {
				b.kill()
			} else if err := b.term(2 * time.Minute); err != nil {
				fmt.Fprintln(os.Stderr, "strata bench cluster:", err)
			}
		}()
	}
	wg.Wait()
	if c.zk != nil {
		c.zk.Stop()
	}
}

// metadata asks the live brokers, one after another until one answers,
// for topic's metadata (every topic's when topic is "").
func (c *benchCluster) metadata(ctx context.Context, topic string) (*kmsg.MetadataResponse, error) {
	return metadataFrom(ctx, c.addrs(), topic)
}

// metadataFrom asks the brokers at addrs, one after another until one
// answers.
func metadataFrom(ctx context.Context, addrs []string, topic string) (*kmsg.MetadataResponse, error) {
	var last error = errors.New("no broker to ask")
	for _, a := range addrs {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := kwire.Dial(rctx, a, kwire.Options{ClientID: "strata-bench-cluster"})
		if err != nil {
			cancel()
			last = err
			continue
		}
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 9
		if topic != "" {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := conn.Request(rctx, req)
		conn.Close()
		cancel()
		if err == nil {
			return resp.(*kmsg.MetadataResponse), nil
		}
		last = err
	}
	return nil, fmt.Errorf("metadata: %w", last)
}

// partitionState is partition 0 of topic as the metadata says: leader
// (-1: none) and ISR.
func partitionState(md *kmsg.MetadataResponse, topic string) (int32, []int32) {
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == 0 {
				return p.Leader, p.ISR
			}
		}
	}
	return -1, nil
}

// waitInSync waits until partition 0 of topic has a leader and every
// replica in want is in its ISR.
func (c *benchCluster) waitInSync(ctx context.Context, topic string, want ...int32) error {
	return waitUntil(ctx, fmt.Sprintf("%s: brokers %v in the ISR", topic, want), func() bool {
		md, err := c.metadata(ctx, topic)
		if err != nil {
			return false
		}
		leader, isr := partitionState(md, topic)
		if leader < 0 {
			return false
		}
		for _, id := range want {
			if !slices.Contains(isr, id) {
				return false
			}
		}
		return true
	})
}

// waitUntil polls cond every 10 ms until it holds or ctx ends.
func waitUntil(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
