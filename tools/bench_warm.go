package tools

import (
	"os"
	"path/filepath"
)

// warmPages writes size bytes to a scratch file in dir and removes it, so
// that the next write of that much in dir (a timed append, the plain
// write it is compared with, a follower catching up in bench cluster) gets
// page-cache or tmpfs pages the machine has already faulted in. A VM that
// faults fresh memory in slowly (the hypervisor backs a guest page at its
// first touch, and takes back what the guest frees) otherwise charges that
// to whichever side first writes into memory never used before: before
// this, bench log's plain-write limit on /dev/shm met fresh memory and the
// append after it reused the pages the limit had freed, so the limit read
// 570-690 MB/s beside dd's 4.3 GB/s. Each timed side is preceded by the
// same warm-up; nothing is fsynced (the dirty pages go with the file).
func warmPages(dir string, size int64) error {
	path := filepath.Join(dir, ".warm-pages")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	defer f.Close()
	buf := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return f.Close()
}
