package faults

import (
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
	"testing"
	"time"

	"github.com/stratalog/strata/internal/faultproxy"
	"github.com/stratalog/strata/tools"
)

const (
	envBroker = "STRATA_FAULTS_BROKER" // the broker's --override values, one per line
	envLog    = "STRATA_FAULTS_LOG"    // the file the broker logs to
)

// TestHelperBroker is not a test: with STRATA_FAULTS_BROKER set it is
// `strata broker --override ...` (tools.Main) in a child process of a
// fault test, logging to STRATA_FAULTS_LOG, until SIGTERM (controlled
// shutdown, then exit) or SIGKILL.
func TestHelperBroker(t *testing.T) {
	spec := os.Getenv(envBroker)
	if spec == "" {
		t.Skip("helper process only")
	}
	lf, err := os.OpenFile(os.Getenv(envLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"strata", "broker", "--log-level", "info"}
	for _, kv := range strings.Split(spec, "\n") {
		args = append(args, "--override", kv)
	}
	code := tools.Main(args, lf, lf)
	fmt.Fprintf(lf, "faults: strata broker exited with status %d\n", code)
	lf.Close()
	os.Exit(code)
}

// brokerState is what the test did to a broker's process last.
type brokerState int

const (
	down    brokerState = iota // not started, exited, killed
	running                    // started (or continued)
	paused                     // SIGSTOP
)

// broker is one broker of a fault test's cluster, run in a child process.
type broker struct {
	c       *cluster
	id      int32
	dir     string // log.dirs (comma-separated)
	ib      *faultproxy.Proxy
	zk      *faultproxy.Proxy // its zookeeper.connect
	logPath string
	extra   []string

	mu       sync.Mutex
	client   string // CLIENT listener: clients dial it directly
	internal string // INTERNAL listener, bound here; advertised at ib's address
	state    brokerState
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd exited
	bindErrs int           // "address already in use" lines logged before the last launch
	listened int           // lines logging the client listener bound, before the last launch
}

// dirs are the broker's log dirs.
func (b *broker) dirs() []string { return strings.Split(b.dir, ",") }

// label is the faultproxy label of the connections this broker's process
// opens.
func (b *broker) label() string { return fmt.Sprintf("broker-%d", b.id) }

// handedOut are the ports freeAddr gave in this process: the kernel may
// give a port just closed again, and two brokers of one test must not
// both be told to bind it (seen once: broker 2 failed to bind broker 1's
// client port and the test dialled broker 1 for it).
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: map[string]bool{}}

// freeAddr reserves a loopback port (closed again: the broker binds it),
// never one it gave before in this process.
func freeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.ports[addr] {
			handedOut.ports[addr] = true
			return addr
		}
	}
}

// newBroker lays out broker id: its ports, its proxies, its overrides.
func (c *cluster) newBroker(id int32, dir string, extra ...string) *broker {
	t := c.t
	b := &broker{c: c, id: id, dir: dir, client: freeAddr(t), internal: freeAddr(t), extra: extra,
		logPath: filepath.Join(c.base, fmt.Sprintf("broker-%d.log", id))}
	var err error
	if b.ib, err = faultproxy.NewSourced(b.internal, c.sourceOf); err != nil {
		t.Fatal(err)
	}
	if b.zk, err = faultproxy.New(c.zs.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.ib.Close(); b.zk.Close() })
	t.Cleanup(func() {
		b.kill()
		if t.Failed() {
			b.logTail(60)
		}
		if keep := os.Getenv("STRATA_FAULTS_LOGDIR"); keep != "" {
			if data, err := os.ReadFile(b.logPath); err == nil {
				name := strings.ReplaceAll(t.Name(), "/", "_") + fmt.Sprintf("-broker-%d.log", id)
				_ = os.WriteFile(filepath.Join(keep, name), data, 0o644)
			}
		}
	})
	return b
}

// clientAddr is the broker's client listener.
func (b *broker) clientAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.client
}

// overrides are the broker's --override values (mu held).
func (b *broker) overrides() []string {
	c := b.c
	return append([]string{
		"broker.id=" + strconv.Itoa(int(b.id)),
		"log.dirs=" + b.dir,
		"listeners=CLIENT://" + b.client + ",INTERNAL://" + b.internal,
		"strata.metrics.listener=127.0.0.1:0",
		"advertised.listeners=CLIENT://" + b.client + ",INTERNAL://" + b.ib.Addr(),
		"listener.security.protocol.map=CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"inter.broker.listener.name=INTERNAL",
		"zookeeper.connect=" + b.zk.Addr() + c.chroot,
		"zookeeper.session.timeout.ms=" + strconv.Itoa(sessionTimeoutMs),
		"zookeeper.connection.timeout.ms=30000",
		"replica.lag.time.max.ms=" + strconv.Itoa(lagTimeMaxMs),
		"replica.fetch.wait.max.ms=200",
		"controlled.shutdown.retry.backoff.ms=200",
		"auto.create.topics.enable=false",
		"min.insync.replicas=2",
		"unclean.leader.election.enable=false",
		"log.segment.bytes=1048576",
		"group.initial.rebalance.delay.ms=0",
	}, b.extra...)
}

// newPorts gives the broker other listener ports, after another process
// took one of its own between the reservation and the bind (the machine
// is shared); the INTERNAL proxy follows.
func (b *broker) newPorts() {
	t := b.c.t
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.client
	b.client, b.internal = freeAddr(t), freeAddr(t)
	b.ib.SetTarget(b.internal)
	t.Logf("broker %d: a listener port was taken; client listener %s now %s", b.id, old, b.client)
}

// logTail logs the last n lines of the broker's log.
func (b *broker) logTail(n int) {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	b.c.t.Logf("broker %d log (last %d of %d lines):\n%s", b.id, min(n, len(lines)), len(lines),
		strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// launch starts the broker's process (without waiting for it).
func (b *broker) launch() {
	t := b.c.t
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != down {
		t.Fatalf("broker %d started twice", b.id)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBroker$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), envBroker+"="+strings.Join(b.overrides(), "\n"), envLog+"="+b.logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.c.setPID(cmd.Process.Pid, b.id)
	b.bindErrs = b.logCount(bindInUse)
	b.listened = b.logCount(listeningOn(b.client))
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.cmd, b.done, b.state = cmd, done, running
}

// bindInUse is what the broker logs when a listener port is taken.
const bindInUse = "bind: address already in use"

// listeningOn is what the broker logs once its listener on addr is bound.
func listeningOn(addr string) string { return "msg=listening address=" + addr + " " }

// waitListening waits until the broker accepts connections on its client
// listener (it binds its listeners after joining the cluster); false when
// it exited at start because a listener port was taken.
func (b *broker) waitListening() bool {
	t := b.c.t
	t.Helper()
	b.mu.Lock()
	done, addr, before, listened := b.done, b.client, b.bindErrs, b.listened
	b.mu.Unlock()
	taken := false
	waitFor(t, startTimeout, fmt.Sprintf("broker %d listening", b.id), func() (bool, string) {
		select {
		case <-done:
			b.mu.Lock()
			b.state = down
			b.mu.Unlock()
			if b.logCount(bindInUse) > before {
				taken = true
				return true, ""
			}
			b.logTail(30)
			t.Fatalf("broker %d exited at start", b.id)
		default:
		}
		// Its own log says it bound addr: a connection alone could reach
		// another process that took the port.
		if b.logCount(listeningOn(addr)) <= listened {
			return false, "no listening line for " + addr + " in its log yet"
		}
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		nc.Close()
		return true, ""
	})
	return !taken
}

// start waits until the broker's previous registration is gone (a broker
// killed with SIGKILL holds /brokers/ids/N until its session expires, and
// a broker whose id is registered by another session refuses to start, as
// Kafka's does), then launches it and waits until it listens.
func (b *broker) start() {
	t := b.c.t
	t.Helper()
	b.c.waitFor(faultTimeout, fmt.Sprintf("broker %d's previous registration gone", b.id), func() (bool, string) {
		ids, err := b.c.registered()
		return err == nil && !slices.Contains(ids, b.id), fmt.Sprintf("registered %v %v", ids, err)
	})
	b.launchListening()
}

// launchListening launches the broker and waits until it listens, with
// new ports when another process took one (three tries).
func (b *broker) launchListening() {
	t := b.c.t
	t.Helper()
	for try := 0; ; try++ {
		b.launch()
		if b.waitListening() {
			return
		}
		if try == 2 {
			t.Fatalf("broker %d: listener ports taken three times", b.id)
		}
		b.newPorts()
	}
}

// kill is SIGKILL; it waits for the process to be gone.
func (b *broker) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == down {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	b.state = down
}

// term is SIGTERM (controlled shutdown) and waits for the exit, which
// must be clean (status 0); it returns how long the broker took to stop.
func (b *broker) term() time.Duration {
	b.c.t.Helper()
	took, code := b.termExit()
	if code != 0 {
		b.c.t.Errorf("broker %d exited with status %d after SIGTERM", b.id, code)
	}
	return took
}

// termExit is term without judging the exit status, which it returns.
func (b *broker) termExit() (time.Duration, int) {
	t := b.c.t
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == down {
		return 0, 0
	}
	if b.state == paused {
		_ = b.cmd.Process.Signal(syscall.SIGCONT)
	}
	start := time.Now()
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(stopTimeout):
		t.Fatalf("broker %d did not stop within %v of SIGTERM", b.id, stopTimeout)
	}
	b.state = down
	return time.Since(start), b.cmd.ProcessState.ExitCode()
}

// pause is SIGSTOP; cont is SIGCONT.
func (b *broker) pause() { b.signal(syscall.SIGSTOP, running, paused) }
func (b *broker) cont()  { b.signal(syscall.SIGCONT, paused, running) }

func (b *broker) signal(sig syscall.Signal, from, to brokerState) {
	t := b.c.t
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != from {
		t.Fatalf("broker %d: %v in state %d", b.id, sig, b.state)
	}
	if err := b.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("broker %d: %v: %v", b.id, sig, err)
	}
	b.state = to
}

// is reports whether the broker's process is in state s.
func (b *broker) is(s brokerState) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == s
}

// truncations counts the truncations the broker logged (the replica
// package's "truncating", "truncating below the high watermark" and
// "leader's log ends below ours: truncating to it").
func (b *broker) truncations() int {
	return b.logCount("msg=truncating") + b.logCount(`msg="truncating below`) + b.logCount("truncating to it")
}

// logCount counts the lines of the broker's log holding every one of subs.
func (b *broker) logCount(subs ...string) int {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return 0
	}
	n := 0
lines:
	for _, l := range strings.Split(string(data), "\n") {
		for _, s := range subs {
			if !strings.Contains(l, s) {
				continue lines
			}
		}
		n++
	}
	return n
}
