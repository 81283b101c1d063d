// Package zkproc starts a standalone ZooKeeper the one way strata does it:
// Debian's zookeeper package (Java's QuorumPeerMain), listening on
// 127.0.0.1, with its zoo.cfg, data/ and logs/ in one directory, ready when
// it answers ruok with imok and srvr with its mode (imok alone comes before
// it serves requests). The tests' internal/zktest, scripts/zk.sh (`make
// cluster`) and `strata bench cluster` run the same zoo.cfg and java
// command line (TestZKScript checks the script against ZooCfg).
//
// The server's tickTime is 500 ms with minSessionTimeout 1 s, so short
// session timeouts work (expiry within timeout + one tick); Kafka's 18 s
// default still fits under maxSessionTimeout (60 s).
package zkproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Where Debian's package puts things (real-components.md).
const (
	ZooKeeperJar = "/usr/share/java/zookeeper.jar"
	SLF4JJar     = "/usr/share/java/slf4j-simple.jar"
	ConfDir      = "/etc/zookeeper/conf"
	mainClass    = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// ErrNotInstalled: java or Debian's ZooKeeper jar is missing.
var ErrNotInstalled = errors.New("zkproc: ZooKeeper not installed")

// Available returns the java binary, or why ZooKeeper cannot run here.
func Available() (string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not found (apt-get install -y zookeeper brings it)", ErrNotInstalled)
	}
	if _, err := os.Stat(ZooKeeperJar); err != nil {
		return "", fmt.Errorf("%w: %s not found (apt-get install -y zookeeper)", ErrNotInstalled, ZooKeeperJar)
	}
	return java, nil
}

// ZooCfg is the zoo.cfg every strata test, `scripts/zk.sh` and `strata
// bench cluster` use.
func ZooCfg(dataDir string, port int) string {
	return fmt.Sprintf(`tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,conf,envi,cons,dump
forceSync=no
preAllocSize=1024
`, dataDir, port)
}

// JavaArgs is the java command line after "java" (small heap, quick start,
// no perf data files in /tmp).
func JavaArgs(logDir, cfg string) []string {
	return []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dzookeeper.log.dir=" + logDir,
		"-cp", strings.Join([]string{ConfDir, ZooKeeperJar, SLF4JJar}, ":"),
		mainClass, cfg}
}

// FourLetter sends a four-letter command (ruok, srvr, mntr, ...) and
// returns the answer.
func FourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(bufio.NewReader(c))
	return strings.TrimSpace(b.String()), err
}

// Ready reports whether the server at addr serves requests: ruok answers
// imok as soon as the process listens, srvr its mode once it serves.
func Ready(addr string) bool {
	if ok, _ := FourLetter(addr, "ruok"); ok != "imok" {
		return false
	}
	out, _ := FourLetter(addr, "srvr")
	return strings.Contains(out, "Mode: ")
}

// Process is a ZooKeeper started by Start: a child process that dies with
// its parent (Pdeathsig).
type Process struct {
	Port int
	Dir  string // zoo.cfg, data/, logs/ (logs/zk.out holds its output)

	mu  sync.Mutex
	cmd *exec.Cmd
	ex  chan struct{} // closed when cmd exits
}

// Addr is host:port for zookeeper.connect.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

// Start runs a ZooKeeper with its files in dir on 127.0.0.1:port (0: a
// free port, tried up to three times when another process takes it first)
// and returns once it serves requests, or fails after timeout with the end
// of its log.
func Start(dir string, port int, timeout time.Duration) (*Process, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		p := &Process{Dir: dir, Port: port}
		if port == 0 {
			free, err := FreePort()
			if err != nil {
				return nil, err
			}
			p.Port = free
		}
		if last = p.start(timeout); last == nil {
			return p, nil
		}
		if port != 0 || !strings.Contains(last.Error(), "Address already in use") {
			break
		}
	}
	return nil, last
}

func (p *Process) start(timeout time.Duration) error {
	java, err := Available()
	if err != nil {
		return err
	}
	data, logs := filepath.Join(p.Dir, "data"), filepath.Join(p.Dir, "logs")
	for _, d := range []string{data, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cfg := filepath.Join(p.Dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(ZooCfg(data, p.Port)), 0o644); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(logs, "zk.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(java, JavaArgs(logs, cfg)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("zkproc: starting java: %w", err)
	}
	ex := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(ex)
	}()
	p.mu.Lock()
	p.cmd, p.ex = cmd, ex
	p.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for !Ready(p.Addr()) {
		select {
		case <-ex:
			p.mu.Lock()
			p.cmd = nil
			p.mu.Unlock()
			return fmt.Errorf("zkproc: ZooKeeper exited at start; %s", p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("zkproc: ZooKeeper did not serve within %v; %s", timeout, p.LogTail())
		}
	}
	return nil
}

// Restart starts the stopped server again on its port and data (its
// sessions and znodes come back from the data dir, as ZooKeeper's do).
func (p *Process) Restart(timeout time.Duration) error {
	if p.Running() {
		return errors.New("zkproc: restart: already running")
	}
	return p.start(timeout)
}

// Running reports whether the server process is up.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Kill stops the server with SIGKILL, as a crash, and waits for it; a no-op
// when it is not running.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, ex := p.cmd, p.ex
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-ex
}

// Stop ends the server (SIGTERM, then SIGKILL after 5 s) and waits for it;
// a no-op when it is not running.
func (p *Process) Stop() {
	p.mu.Lock()
	cmd, ex := p.cmd, p.ex
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ex:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-ex
	}
}

// LogTail is the end of the server's output, for error messages.
func (p *Process) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "logs", "zk.out"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "last lines of zk.out:\n" + strings.Join(lines, "\n")
}

// FreePort is a port on 127.0.0.1 nothing listens on now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
