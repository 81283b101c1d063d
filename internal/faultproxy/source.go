package faultproxy

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PeerPID returns the id of the local process holding the other end of c, a
// TCP connection over loopback (one the proxy accepted): the socket whose
// local address is c's remote one and whose remote address is c's local one,
// looked up in /proc/net/tcp and tcp6 (Linux), then the process that has that
// socket among its open files in /proc/<pid>/fd. Processes whose fds cannot
// be read (another user's) are skipped. A peer that closed its end before the
// lookup is ErrNoPeer.
func PeerPID(c net.Conn) (int, error) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("%w: not a TCP connection", ErrNoPeer)
	}
	inode, err := socketInode(ra, la)
	if err != nil {
		return 0, err
	}
	return inodeOwner(inode)
}

// socketInode finds the inode of the socket bound at local and connected to
// remote in /proc/net/tcp{,6}.
func socketInode(local, remote *net.TCPAddr) (string, error) {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		want := [2]string{procAddr(local, f), procAddr(remote, f)}
		if want[0] == "" || want[1] == "" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) >= 10 && fs[1] == want[0] && fs[2] == want[1] && fs[9] != "0" {
				fh.Close()
				return fs[9], nil
			}
		}
		fh.Close()
	}
	return "", fmt.Errorf("%w: no socket %s -> %s", ErrNoPeer, local, remote)
}

// procAddr is a's form in the /proc/net file f: the address as the kernel's
// 32-bit words in hex, each in host (little-endian) order, then the port in
// hex; "" when a does not fit the file (IPv6 in tcp).
func procAddr(a *net.TCPAddr, f string) string {
	ip := a.IP
	if strings.HasSuffix(f, "6") {
		ip = ip.To16()
	} else {
		ip = ip.To4()
	}
	if ip == nil {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(ip); i += 4 {
		fmt.Fprintf(&b, "%02X%02X%02X%02X", ip[i+3], ip[i+2], ip[i+1], ip[i])
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String()
}

// inodeOwner finds the process with socket:[inode] among its open files.
func inodeOwner(inode string) (int, error) {
	want := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoPeer, err)
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && l == want {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: no process holds socket inode %s", ErrNoPeer, inode)
}
