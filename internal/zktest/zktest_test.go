package zktest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/zkproc"
)

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	if out, err := FourLetter(s.Addr(), "srvr"); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr: %q %v", out, err)
	}
	s.Stop()
	if s.Running() {
		t.Fatal("running after Stop")
	}
	if _, err := FourLetter(s.Addr(), "ruok"); err == nil {
		t.Fatal("a stopped ZooKeeper answers")
	}
	s.Restart()
	if out, _ := FourLetter(s.Addr(), "ruok"); out != "imok" {
		t.Fatalf("after restart ruok = %q", out)
	}
}

// TestZKScript runs scripts/zk.sh start/stop and checks it writes the same
// zoo.cfg as the tests (so `make cluster` and the tests run one ZooKeeper).
func TestZKScript(t *testing.T) {
	if _, err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	port, err := zkproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join("..", "..", "scripts", "zk.sh")
	run := func(args ...string) string {
		out, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("zk.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("start", dir, strconv.Itoa(port))
	t.Cleanup(func() { _, _ = exec.Command("bash", script, "stop", dir).CombinedOutput() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if out, _ := FourLetter(addr, "ruok"); out != "imok" {
		t.Fatalf("ruok after zk.sh start: %q", out)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if want := ZooCfg(filepath.Join(dir, "data"), port); string(cfg) != want {
		t.Fatalf("zk.sh's zoo.cfg:\n%s\ninternal/zktest's:\n%s", cfg, want)
	}
	run("start", dir, strconv.Itoa(port)) // already running: fine
	run("stop", dir)
	if _, err := FourLetter(addr, "ruok"); err == nil {
		t.Fatal("ZooKeeper answers after zk.sh stop")
	}
}
