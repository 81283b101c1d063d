package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// Kafka's ZooKeeper client defaults.
const (
	DefaultZKSessionTimeout = 18 * time.Second // zookeeper.session.timeout.ms (Kafka 2.5+, KIP-537)
	defaultZKPort           = "2181"
)

// ZKConfig configures the production ZooKeeper client (DialZK).
type ZKConfig struct {
	// Connect is zookeeper.connect: host:port[,host:port...][/chroot]. A
	// missing port is 2181.
	Connect string
	// SessionTimeout is zookeeper.session.timeout.ms (default 18 s).
	SessionTimeout time.Duration
	// ConnectionTimeout is zookeeper.connection.timeout.ms: how long DialZK
	// waits for the first session (default: SessionTimeout).
	ConnectionTimeout time.Duration
	// Logger gets session changes at info/warn and the client library's
	// own messages at debug; nil is slog.Default().
	Logger *slog.Logger
	// Dial, when set, opens the TCP connections (tests put a proxy between
	// the client and ZooKeeper with it).
	Dial func(network, address string, timeout time.Duration) (net.Conn, error)
}

func (c *ZKConfig) withDefaults() ZKConfig {
	d := *c
	if d.SessionTimeout <= 0 {
		d.SessionTimeout = DefaultZKSessionTimeout
	}
	if d.ConnectionTimeout <= 0 {
		d.ConnectionTimeout = d.SessionTimeout
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return d
}

// ParseZKConnect splits zookeeper.connect into servers (host:port, 2181 when
// the port is missing) and the chroot ("" for none; "/" alone is none). The
// chroot follows the last server, as in ZooKeeper's connect string.
func ParseZKConnect(connect string) (servers []string, chroot string, err error) {
	s := strings.TrimSpace(connect)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		} else if err := CheckPath(chroot); err != nil {
			return nil, "", fmt.Errorf("%w: %q: chroot: %v", ErrBadConnect, connect, err)
		}
	}
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		if hp == "" {
			return nil, "", fmt.Errorf("%w: %q: empty server", ErrBadConnect, connect)
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			if strings.Count(hp, ":") > 1 && !strings.HasPrefix(hp, "[") {
				return nil, "", fmt.Errorf("%w: %q: put IPv6 hosts in brackets", ErrBadConnect, connect)
			}
			host, port = strings.Trim(hp, "[]"), defaultZKPort
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || host == "" {
			return nil, "", fmt.Errorf("%w: %q: bad server %q", ErrBadConnect, connect, hp)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	return servers, chroot, nil
}

// CheckPath checks an absolute znode path as ZooKeeper does: a leading
// '/', no empty, "." or ".." component, no trailing '/', no NUL, control
// or private-use characters and nothing beyond U+FFEF (Java sees those as
// surrogates).
func CheckPath(p string) error {
	if p == "/" {
		return nil
	}
	if p == "" || p[0] != '/' {
		return fmt.Errorf("path %q is not absolute", p)
	}
	for _, c := range strings.Split(p[1:], "/") {
		switch c {
		case "":
			return fmt.Errorf("path %q has an empty component", p)
		case ".", "..":
			return fmt.Errorf("path %q has a relative component", p)
		}
		for _, r := range c {
			if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				return fmt.Errorf("path %q has a bad character %U", p, r)
			}
		}
	}
	return nil
}
