package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/security"
)

// UsersFile holds a single node's SCRAM credentials in the first log dir:
// {"version":1,"users":{"<user>":{"SCRAM-SHA-256":"salt=...,stored_key=...,
// server_key=...,iterations=N"}}}, each user's map the config of Kafka's
// /config/users/<user> znode.
const UsersFile = "strata-users.json"

// scramStore keeps SCRAM credentials where Kafka keeps them: ZooKeeper's
// /config/users/<user> in a cluster (read at each authentication, so a
// credential altered through any broker counts at once), UsersFile on a
// single node.
type scramStore struct {
	s *Server

	mu    sync.Mutex
	users map[string]map[string]string // single node: user -> mechanism -> credential text
}

type usersFileData struct {
	Version int                          `json:"version"`
	Users   map[string]map[string]string `json:"users"`
}

// newScramStore opens the store; on a single node an unreadable UsersFile
// stops the broker (ErrDataDir) rather than be overwritten by the next
// credential change.
func newScramStore(s *Server) (*scramStore, error) {
	st := &scramStore{s: s, users: map[string]map[string]string{}}
	if s.cl != nil {
		return st, nil
	}
	b, err := readFile(s.topics.fs, st.path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrDataDir, err)
	default:
		var d usersFileData
		if err := json.Unmarshal(b, &d); err != nil || d.Version != 1 {
			return nil, fmt.Errorf("%w: %s: not a version 1 users file (%v)", ErrDataDir, st.path(), err)
		}
		for u, cfg := range d.Users {
			for m, text := range cfg {
				if _, err := security.ParseScramCredential(text); err != nil {
					return nil, fmt.Errorf("%w: %s: user %q %s: %w", ErrDataDir, st.path(), u, m, err)
				}
			}
		}
		if d.Users != nil {
			st.users = d.Users
		}
	}
	return st, nil
}

func (st *scramStore) path() string { return filepath.Join(st.s.cfg.LogDirs[0], UsersFile) }

// zkUserName is Kafka's Sanitizer form of a user name in znode paths: URL
// encoding with spaces as %20.
func zkUserName(u string) string {
	return strings.NewReplacer("+", "%20", "~", "%7E").Replace(url.QueryEscape(u))
}

// userConfig is a user's stored config (mechanism -> credential text).
func (st *scramStore) userConfig(user string) (map[string]string, error) {
	if st.s.cl != nil {
		return st.s.cl.admin().EntityConfig(cluster.ConfigTypeUser, zkUserName(user))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]string{}
	for k, v := range st.users[user] {
		out[k] = v
	}
	return out, nil
}

// lookup is the SCRAM exchange's credential lookup.
func (st *scramStore) lookup(mech, user string) (security.ScramCredential, bool) {
	cfg, err := st.userConfig(user)
	if err != nil {
		st.s.log.Error("reading SCRAM credentials", "user", user, "error", err)
		return security.ScramCredential{}, false
	}
	text, ok := cfg[mech]
	if !ok {
		return security.ScramCredential{}, false
	}
	c, err := security.ParseScramCredential(text)
	if err != nil {
		st.s.log.Error("stored SCRAM credential does not parse", "user", user, "mechanism", mech, "error", err)
		return security.ScramCredential{}, false
	}
	return c, true
}

// alter applies one user's changes: set maps a mechanism to a credential,
// del lists mechanisms to drop. ok is false when a deletion names a
// credential that does not exist (nothing is changed then).
func (st *scramStore) alter(user string, set map[string]security.ScramCredential, del []string) (ok bool, err error) {
	if st.s.cl != nil {
		a := st.s.cl.admin()
		cfg, err := a.EntityConfig(cluster.ConfigTypeUser, zkUserName(user))
		if err != nil {
			return false, err
		}
		if !applyScram(cfg, set, del) {
			return false, nil
		}
		return true, a.ChangeEntityConfig(cluster.ConfigTypeUser, zkUserName(user), cfg)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	cfg := map[string]string{}
	for k, v := range st.users[user] {
		cfg[k] = v
	}
	if !applyScram(cfg, set, del) {
		return false, nil
	}
	next := make(map[string]map[string]string, len(st.users)+1)
	for u, c := range st.users {
		next[u] = c
	}
	if len(cfg) == 0 {
		delete(next, user)
	} else {
		next[user] = cfg
	}
	b, err := json.MarshalIndent(usersFileData{Version: 1, Users: next}, "", "  ")
	if err != nil {
		return false, err
	}
	if err := fsutil.WriteFileAtomic(st.s.topics.fs, st.path(), append(b, '\n')); err != nil {
		return false, err
	}
	st.users = next
	return true, nil
}

func applyScram(cfg map[string]string, set map[string]security.ScramCredential, del []string) bool {
	for _, m := range del {
		if _, ok := cfg[m]; !ok {
			return false
		}
		delete(cfg, m)
	}
	for m, c := range set {
		cfg[m] = c.String()
	}
	return true
}

// listUsers lists the users with SCRAM credentials (single node: the
// file's; cluster: /config/users' children).
func (st *scramStore) listUsers() ([]string, error) {
	if st.s.cl != nil {
		kids, _, err := st.s.cl.zk.Children(cluster.ConfigPath + "/" + cluster.ConfigTypeUser)
		if err != nil && !errors.Is(err, cluster.ErrNoNode) {
			return nil, err
		}
		var out []string
		for _, k := range kids {
			if u, err := url.QueryUnescape(k); err == nil {
				out = append(out, u)
			}
		}
		sort.Strings(out)
		return out, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, 0, len(st.users))
	for u := range st.users {
		out = append(out, u)
	}
	sort.Strings(out)
	return out, nil
}
