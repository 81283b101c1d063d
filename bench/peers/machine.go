package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// describeMachine names the CPU (/proc/cpuinfo), the kernel (uname -srm), the
// memory and the filesystem holding dir (df -T).
func describeMachine(dir string) []string {
	var out []string
	model, cpus := "unknown", 0
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, ok := strings.Cut(s.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				model = strings.TrimSpace(v)
			case "processor":
				cpus++
			}
		}
		f.Close()
	}
	out = append(out, fmt.Sprintf("CPU: %s, %d logical CPUs (GOMAXPROCS %d)", model, cpus, runtime.GOMAXPROCS(0)))
	if b, err := exec.Command("uname", "-srm").Output(); err == nil {
		out = append(out, "Kernel: "+strings.TrimSpace(string(b)))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		out = append(out, "Memory: "+strings.Join(strings.Fields(line)[1:], " "))
	}
	if b, err := exec.Command("df", "-T", dir).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if f := strings.Fields(lines[len(lines)-1]); len(f) >= 7 {
			out = append(out, fmt.Sprintf("Filesystem: %s on %s (%s, mounted at %s), benchmark directory %s", f[1], f[0], humanKB(f[2]), f[6], dir))
		}
	}
	out = append(out, "Go: "+runtime.Version())
	return out
}

func humanKB(s string) string {
	var kb float64
	if _, err := fmt.Sscan(s, &kb); err != nil {
		return s
	}
	return fmt.Sprintf("%.0f GB", kb*1024/1e9)
}
