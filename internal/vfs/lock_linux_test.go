package vfs_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/internal/vfs"
)

// TestLockChild is the child process of the lock tests: it takes the lock named
// by the environment, says so, and holds it until its stdin closes.
func TestLockChild(t *testing.T) {
	dir, mode := os.Getenv("STRATA_LOCK_DIR"), os.Getenv("STRATA_LOCK_MODE")
	if dir == "" {
		t.Skip("helper process for the lock tests")
	}
	switch mode {
	case "ofd":
		if _, err := vfs.LockDir(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	case "posix": // what Java's FileChannel.tryLock does
		f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK})
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// lockChild starts a child holding dir's lock; closing the returned function's
// result releases it.
func lockChild(t *testing.T, dir, mode string) (pid int, release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$")
	cmd.Env = append(os.Environ(), "STRATA_LOCK_DIR="+dir, "STRATA_LOCK_MODE="+mode)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("child: %q %v", line, err)
	}
	return cmd.Process.Pid, func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
}

func TestLockDirOtherProcess(t *testing.T) {
	for _, mode := range []string{"ofd", "posix"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			pid, release := lockChild(t, dir, mode)
			_, err := vfs.LockDir(dir)
			if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), dir) {
				release()
				t.Fatalf("LockDir while a child holds it: %v", err)
			}
			want := "held by another process"
			if mode == "posix" {
				want = fmt.Sprintf("held by process %d", pid)
			}
			if !strings.HasSuffix(err.Error(), want) {
				t.Errorf("error %q does not end in %q", err, want)
			}
			release()
			unlock, err := vfs.LockDir(dir)
			must(t, err)
			must(t, unlock())
			must(t, unlock()) // idempotent
		})
	}
}

func TestLockDirSameProcess(t *testing.T) {
	dir := t.TempDir()
	unlock, err := vfs.LockDir(dir)
	must(t, err)
	if _, err := vfs.LockDir(dir); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second LockDir in the same process: %v", err)
	}
	// A child cannot take it either.
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$")
	cmd.Env = append(os.Environ(), "STRATA_LOCK_DIR="+dir, "STRATA_LOCK_MODE=ofd")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err == nil || !strings.Contains(string(out), "directory is locked") {
		t.Fatalf("child took a held lock: %q %v", out, err)
	}
	must(t, unlock())
	unlock2, err := vfs.LockDir(dir)
	must(t, err)
	must(t, unlock2())
	if _, err := vfs.LockDir(filepath.Join(dir, "missing")); err == nil || errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("LockDir of a missing dir: %v", err)
	}
}

// TestDirLocked: the probe sees a lock held in this process and in another
// (OFD and POSIX, as Java takes it), creates no .lock, and takes nothing.
func TestDirLocked(t *testing.T) {
	dir := t.TempDir()
	if locked, err := vfs.DirLocked(dir); err != nil || locked {
		t.Fatalf("no .lock: %v %v", locked, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the probe created .lock: %v", err)
	}
	unlock, err := vfs.LockDir(dir)
	must(t, err)
	if locked, err := vfs.DirLocked(dir); err != nil || !locked {
		t.Fatalf("held in this process: %v %v", locked, err)
	}
	// Probing does not disturb the holder.
	if _, err := vfs.LockDir(dir); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("lock lost after a probe: %v", err)
	}
	must(t, unlock())
	if locked, err := vfs.DirLocked(dir); err != nil || locked {
		t.Fatalf("released: %v %v", locked, err)
	}
	for _, mode := range []string{"ofd", "posix"} {
		_, release := lockChild(t, dir, mode)
		locked, err := vfs.DirLocked(dir)
		release()
		if err != nil || !locked {
			t.Errorf("held by a child (%s): %v %v", mode, locked, err)
		}
	}
}
