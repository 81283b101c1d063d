package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/zktest"
)

// mountTmpfs mounts a tmpfs of size bytes on a new temp dir (unmounted at
// cleanup, before the dir is removed). Where mounting is not allowed (not
// root, no CAP_SYS_ADMIN) the test is skipped, except under CI=true where
// it fails.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount -t tmpfs %s: %v; CI=true requires it (run the tests as root)", dir, err)
		}
		t.Skipf("mount -t tmpfs %s: %v: the disk-full scenario needs a small tmpfs (root); under CI=true this fails", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	return dir
}

// fillUp writes a ballast file in dir leaving about leave bytes free.
func fillUp(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for n := free - leave; n > 0; n -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), n)]); err != nil {
			t.Fatalf("ballast: %v", err)
		}
	}
	return path
}

// scenarioDiskFull: broker 3 keeps its first log dir on a small tmpfs
// and its second on the ordinary disk, and leads nothing (it is last in
// every assignment). Once the producer fills the tmpfs, that log dir goes
// offline (Kafka's log dir failure model): broker 3 reports it to the
// controller (/log_dir_event_notification), which takes its replicas there
// out of their ISRs and lists them as offline replicas, while every
// partition keeps taking writes and the replica in the other dir stays in
// sync; nothing acknowledged is lost. Then the space is freed and broker 3
// restarts (SIGTERM, recovery), catches up and rejoins every ISR.
func scenarioDiskFull(t *testing.T, zs *zktest.Server) {
	small := mountTmpfs(t, 16<<20)
	other := t.TempDir()
	c := newCluster(t, zs, clusterOpts{dir: func(id int32) string {
		if id == 3 {
			return filepath.Join(small, "data") + "," + other
		}
		return ""
	}})
	f := c.broker(3)
	c.createTopic([][]int32{{1, 2, 3}, {2, 1, 3}, {1, 2, 3}})
	var onSmall, onOther []int32
	for p := int32(0); p < numParts; p++ {
		if _, err := os.Stat(filepath.Join(small, "data", fmt.Sprintf("%s-%d", topic, p))); err == nil {
			onSmall = append(onSmall, p)
		} else {
			onOther = append(onOther, p)
		}
	}
	if len(onSmall) == 0 {
		t.Fatalf("no partition of broker 3 in its tmpfs log dir")
	}
	l := startLoad(t, c, 2048)
	l.waitAcks("writes before the disk fills", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		c.waitFullISR("every ISR full before the disk fills")
		t0 := time.Now()
		ballast := fillUp(t, small, 256<<10)
		c.waitState(faultTimeout, fmt.Sprintf("broker 3 an offline replica, out of the ISR, of partitions %v (its full dir)", onSmall), func(st map[int32]partView) bool {
			for _, p := range onSmall {
				if slices.Contains(st[p].isr, 3) || !slices.Contains(st[p].offline, 3) {
					return false
				}
			}
			return true
		})
		out := time.Since(t0)
		if f.logCount("reported a log dir failure to the controller") == 0 {
			t.Errorf("broker 3 did not report its log dir failure to the controller")
		}
		l.waitAcks("writes go on with the disk full", l.ackCounts(), ackWindow)
		st := c.waitState(faultTimeout, fmt.Sprintf("broker 3 in sync for partitions %v (its other dir)", onOther), func(st map[int32]partView) bool {
			for _, p := range onOther {
				if !slices.Contains(st[p].isr, 3) {
					return false
				}
			}
			return true
		})
		for _, p := range onOther {
			if len(st[p].offline) > 0 {
				t.Errorf("partition %d (broker 3's healthy dir) lists offline replicas %v", p, st[p].offline)
			}
		}
		t.Logf("round %d: broker 3's tmpfs dir offline, its replicas of %v offline and out of their ISRs %v after the ballast; %v stay in sync",
			r, onSmall, out.Round(time.Millisecond), onOther)
		// Heal: free the space, restart the broker.
		if err := os.Remove(ballast); err != nil {
			t.Fatal(err)
		}
		// A broker stopping with an offline dir says so in its exit status
		// (server: the offline dir's close is reported in the error).
		if _, code := f.termExit(); code != 0 {
			t.Logf("broker 3 exited with status %d after SIGTERM (its log dir offline)", code)
		}
		if code, out := verify(f); code != 0 {
			t.Logf("strata verify of broker 3's log dirs after the disk filled up (before its restart): exit status %d\n%s", code, out)
		}
		f.start()
		c.waitFullISR("broker 3 back in every ISR after its restart")
		l.waitAcks("writes after the restart", l.ackCounts(), ackWindow)
	}
	c.finish(l)
}
