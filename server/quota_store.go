package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/fsutil"
)

// QuotasFile holds a single node's client quotas in the first log dir:
// {"version":1,"entities":{"users/alice/clients/c1":{"producer_byte_rate":
// "1048576"}}}, each entity's path and config those of Kafka's
// /config/<path> znode. (A single node keeps its SCRAM credentials apart,
// in UsersFile; in a cluster both share /config/users/<user>.)
const QuotasFile = "strata-quotas.json"

// quotaStore keeps client quotas where Kafka keeps them: ZooKeeper's
// /config/users and /config/clients in a cluster (loaded at start, then
// each entity again when a /config/changes notification names it, so an
// alteration through any broker counts on every broker), QuotasFile on a
// single node. The quotaManager enforces what it holds.
type quotaStore struct {
	s *Server
	q *quotaManager

	mu   sync.Mutex                   // serializes alterations
	file map[string]map[string]string // single node: entity path -> config
}

type quotasFileData struct {
	Version  int                          `json:"version"`
	Entities map[string]map[string]string `json:"entities"`
}

func newQuotaStore(s *Server) *quotaStore {
	return &quotaStore{s: s, q: newQuotaManager(s.cfg.QuotaWindowSizeSeconds, s.cfg.QuotaWindowNum), file: map[string]map[string]string{}}
}

// load reads the stored quotas: ZooKeeper's in a cluster, QuotasFile on a
// single node (unreadable: ErrDataDir, the broker does not start rather
// than overwrite it).
func (st *quotaStore) load() error {
	s := st.s
	if s.cl != nil {
		return st.loadZK()
	}
	b, err := readFile(s.topics.fs, st.path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	var d quotasFileData
	if err := json.Unmarshal(b, &d); err != nil || d.Version != 1 {
		return fmt.Errorf("%w: %s: not a version 1 quotas file (%v)", ErrDataDir, st.path(), err)
	}
	all := map[quotaEntity]map[string]float64{}
	for p, cfg := range d.Entities {
		e, err := parseQuotaEntityPath(p)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrDataDir, st.path(), err)
		}
		q, err := quotaValues(cfg)
		if err != nil {
			return fmt.Errorf("%w: %s: %s: %w", ErrDataDir, st.path(), p, err)
		}
		all[e] = q
		st.file[p] = cfg
	}
	st.q.replaceAll(all)
	return nil
}

func (st *quotaStore) path() string { return filepath.Join(st.s.cfg.LogDirs[0], QuotasFile) }

// parseQuotaEntityPath reads users/U, users/U/clients/C or clients/C
// (sanitized names, <default> for a default).
func parseQuotaEntityPath(p string) (quotaEntity, error) {
	parts := strings.Split(p, "/")
	var e quotaEntity
	name := func(s string) (string, error) {
		if s == quotaDefault {
			return s, nil
		}
		n, err := url.QueryUnescape(s)
		if err != nil || s == "" {
			return "", fmt.Errorf("%w: entity path %q: bad name %q", ErrQuota, p, s)
		}
		return n, nil
	}
	var err error
	switch {
	case len(parts) == 2 && parts[0] == cluster.ConfigTypeUser:
		e.hasUser = true
		e.user, err = name(parts[1])
	case len(parts) == 2 && parts[0] == cluster.ConfigTypeClient:
		e.hasClient = true
		e.client, err = name(parts[1])
	case len(parts) == 4 && parts[0] == cluster.ConfigTypeUser && parts[2] == cluster.ConfigTypeClient:
		e.hasUser, e.hasClient = true, true
		if e.user, err = name(parts[1]); err == nil {
			e.client, err = name(parts[3])
		}
	default:
		err = fmt.Errorf("%w: %q is not a quota entity path", ErrQuota, p)
	}
	return e, err
}

// quotaValues picks the quota keys out of an entity's stored config (a
// user's may hold SCRAM credentials too); a quota value that is not a
// number is an error.
func quotaValues(cfg map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	for k, v := range cfg {
		if !isQuotaKey(k) {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: %s=%q is not a number", ErrQuota, k, v)
		}
		out[k] = f
	}
	return out, nil
}

// formatQuota writes a value as Kafka stores it: a LONG key as a whole
// number, a DOUBLE with its fraction.
func formatQuota(k string, v float64) string {
	if quotaKeyIsLong(k) {
		return strconv.FormatInt(int64(v), 10)
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// loadZK reads every quota entity below /config/users and /config/clients.
func (st *quotaStore) loadZK() error {
	zk := st.s.cl.zk
	all := map[quotaEntity]map[string]float64{}
	kids := func(p string) ([]string, error) {
		k, _, err := zk.Children(p)
		if errors.Is(err, cluster.ErrNoNode) {
			return nil, nil
		}
		return k, err
	}
	add := func(p string) error {
		e, err := parseQuotaEntityPath(p)
		if err != nil {
			st.s.log.Warn("skipping a malformed quota entity znode", "path", p, "error", err)
			return nil
		}
		cfg, err := st.readZK(p)
		if err != nil {
			return err
		}
		if q, err := quotaValues(cfg); err != nil {
			st.s.log.Error("skipping an unreadable quota config", "path", p, "error", err)
		} else if len(q) > 0 {
			all[e] = q
		}
		return nil
	}
	users, err := kids(cluster.ConfigPath + "/" + cluster.ConfigTypeUser)
	if err != nil {
		return fmt.Errorf("%w: loading quotas: %w", ErrCluster, err)
	}
	for _, u := range users {
		up := cluster.ConfigTypeUser + "/" + u
		if err := add(up); err != nil {
			return fmt.Errorf("%w: loading quotas: %w", ErrCluster, err)
		}
		cs, err := kids(cluster.ConfigPath + "/" + up + "/" + cluster.ConfigTypeClient)
		if err != nil {
			return fmt.Errorf("%w: loading quotas: %w", ErrCluster, err)
		}
		for _, c := range cs {
			if err := add(up + "/" + cluster.ConfigTypeClient + "/" + c); err != nil {
				return fmt.Errorf("%w: loading quotas: %w", ErrCluster, err)
			}
		}
	}
	clients, err := kids(cluster.ConfigPath + "/" + cluster.ConfigTypeClient)
	if err != nil {
		return fmt.Errorf("%w: loading quotas: %w", ErrCluster, err)
	}
	for _, c := range clients {
		if err := add(cluster.ConfigTypeClient + "/" + c); err != nil {
			return fmt.Errorf("%w: loading quotas: %w", ErrCluster, err)
		}
	}
	st.q.replaceAll(all)
	return nil
}

// readZK reads /config/<p>: empty when absent or when the znode is a bare
// parent (Kafka creates /config/users/U with no data for U's clients).
func (st *quotaStore) readZK(p string) (map[string]string, error) {
	full := cluster.ConfigPath + "/" + p
	data, _, err := st.s.cl.zk.Get(full)
	if errors.Is(err, cluster.ErrNoNode) || (err == nil && len(data) == 0) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return cluster.DecodeEntityConfig(full, data)
}

// entitiesChanged is the cluster's config notification hook: each named
// user or client entity is read again.
func (st *quotaStore) entitiesChanged(paths []string) {
	for _, p := range paths {
		if !strings.HasPrefix(p, cluster.ConfigTypeUser+"/") && !strings.HasPrefix(p, cluster.ConfigTypeClient+"/") {
			continue
		}
		e, err := parseQuotaEntityPath(p)
		if err != nil {
			st.s.log.Warn("config change names no quota entity", "entity", p, "error", err)
			continue
		}
		cfg, err := st.readZK(p)
		if err != nil {
			st.s.log.Error("reading a changed quota config", "entity", p, "error", err)
			continue
		}
		q, err := quotaValues(cfg)
		if err != nil {
			st.s.log.Error("changed quota config does not parse, keeping the old one", "entity", p, "error", err)
			continue
		}
		st.q.setEntity(e, q)
		st.s.log.Info("client quotas changed", "entity", p, "quotas", q)
	}
}

// alter applies one entity's changes (set: key -> value; remove: keys),
// keeping the entity's other keys (a user's SCRAM credentials).
func (st *quotaStore) alter(e quotaEntity, set map[string]float64, remove []string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	p := e.path()
	var cfg map[string]string
	if st.s.cl != nil {
		var err error
		if cfg, err = st.readZK(p); err != nil {
			return err
		}
	} else {
		cfg = map[string]string{}
		for k, v := range st.file[p] {
			cfg[k] = v
		}
	}
	for _, k := range remove {
		delete(cfg, k)
	}
	for k, v := range set {
		cfg[k] = formatQuota(k, v)
	}
	q, err := quotaValues(cfg)
	if err != nil {
		return err
	}
	if st.s.cl != nil {
		if err := st.writeZK(e, p, cfg); err != nil {
			return err
		}
	} else if err := st.writeFile(p, cfg); err != nil {
		return err
	}
	st.q.setEntity(e, q)
	return nil
}

// writeZK writes /config/<p> and its notification; a nested entity's
// parents are created first, empty, as Kafka's createRecursive leaves them.
func (st *quotaStore) writeZK(e quotaEntity, p string, cfg map[string]string) error {
	zk := st.s.cl.zk
	if e.hasUser && e.hasClient {
		up := cluster.ConfigPath + "/" + cluster.ConfigTypeUser + "/" + sanitizeEntityName(e.user)
		for _, parent := range []string{up, up + "/" + cluster.ConfigTypeClient} {
			if _, err := zk.Create(parent, nil, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
				return err
			}
		}
	}
	typ, name, _ := strings.Cut(p, "/")
	return st.s.cl.admin().ChangeEntityConfig(typ, name, cfg)
}

func (st *quotaStore) writeFile(p string, cfg map[string]string) error {
	next := make(map[string]map[string]string, len(st.file)+1)
	for k, v := range st.file {
		next[k] = v
	}
	if len(cfg) == 0 {
		delete(next, p)
	} else {
		next[p] = cfg
	}
	b, err := json.MarshalIndent(quotasFileData{Version: 1, Entities: next}, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(st.s.topics.fs, st.path(), append(b, '\n')); err != nil {
		return err
	}
	st.file = next
	return nil
}
