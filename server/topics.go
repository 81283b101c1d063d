package server

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// File names the broker keeps in a log directory (Kafka's, plus strata's
// topic table).
const (
	MetaPropertiesFile    = "meta.properties"
	PartitionMetadataFile = "partition.metadata"
	TopicsFile            = "strata-topics.json"
)

// topic is one topic's definition and open partitions.
type topic struct {
	name          string
	id            [16]byte
	configs       map[string]string
	parts         []*partition
	eff           atomic.Pointer[Config] // effective config: the broker's with the overrides (topicConfig)
	logAppendTime atomic.Bool            // message.timestamp.type=LogAppendTime
	compacted     atomic.Bool            // cleanup.policy includes compact
	produce       atomic.Pointer[produceSettings]
}

// partition is one open partition log.
type partition struct {
	topic string
	index int32
	dir   string
	log   PartitionLog
	// dd is the DataDir covering the log (checkpoints, shutdown), nil for a
	// log from a custom opener that is not a *segment.Log.
	dd *recovery.DataDir
}

// topicsFileData is the JSON kept in TopicsFile.
type topicsFileData struct {
	Version int             `json:"version"`
	Topics  []topicFileItem `json:"topics"`
}

type topicFileItem struct {
	Name       string            `json:"name"`
	TopicID    string            `json:"topic_id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// topicStore owns every topic: its definition, persisted in TopicsFile in the
// first log dir, and its open partition logs.
type topicStore struct {
	cfg       *Config
	open      LogOpener
	log       *slog.Logger
	fs        vfs.FS // everything the broker stores goes through it (Options.FS)
	clusterID string
	dirs      *logDirFailures // offline log dirs (datadirs.go)
	moves     *logDirMoves    // replica moves between log dirs (logdir_move.go)

	dataDirs []*recovery.DataDir // one per log dir, opened by recovery
	reports  []*recovery.Report  // what recovery did at start
	cleaner  *cleaner.Manager    // set by the server once logs are open

	mu     sync.RWMutex
	topics map[string]*topic
	closed bool
}

func newTopicStore(cfg *Config, open LogOpener, log *slog.Logger, fsys vfs.FS) *topicStore {
	return &topicStore{cfg: cfg, open: open, log: log, fs: fsys, topics: map[string]*topic{},
		dirs: newLogDirFailures(len(cfg.LogDirs)), moves: newLogDirMoves(cfg.AlterLogDirsIOMaxBytesPerSec)}
}

// load prepares every log dir (meta.properties), reads the topic table, runs
// recovery over every log dir and opens every partition.
func (ts *topicStore) load() error {
	for _, dir := range ts.cfg.LogDirs {
		if err := ts.makeLogDir(dir); err != nil {
			return fmt.Errorf("%w: %w", ErrDataDir, err)
		}
	}
	items, err := ts.readTopicsFile()
	if err != nil {
		return err
	}
	_, statErr := ts.fs.Stat(ts.topicsPath())
	haveTable := statErr == nil
	// Each topic's config is resolved once: a stored override that fails
	// its check is warned about and the broker's value used.
	effs := map[string]*topic{}
	for _, it := range items {
		t := &topic{name: it.Name, configs: it.Configs}
		if err := ts.applyTopicConfigs(t, lenient); err != nil {
			return fmt.Errorf("%w: topic %s: %w", ErrDataDir, t.name, err)
		}
		effs[it.Name] = t
	}
	if err := ts.openDataDirs(func(topic string) *segment.Options {
		c := ts.cfg
		if t := effs[topic]; t != nil {
			c = ts.effective(t)
		}
		o, err := segmentOptions(c, ts.log)
		if err != nil {
			return nil
		}
		return o
	}); err != nil {
		return err
	}
	id, err := ts.loadMetaProperties()
	if err != nil {
		return err
	}
	ts.clusterID = id
	for _, it := range items {
		uid, err := parseUUID(it.TopicID)
		if err != nil || validateTopicName(it.Name) != nil || it.Partitions < 1 {
			return fmt.Errorf("%w: %s: bad topic entry %q", ErrDataDir, ts.topicsPath(), it.Name)
		}
		t := effs[it.Name]
		t.id = uid
		if err := ts.openPartitions(t, it.Partitions); err != nil {
			return err
		}
		ts.topics[t.name] = t
	}
	ts.finishDeletions(haveTable)
	ts.resumeMoves()
	ts.log.Info("topics loaded", "topics", len(ts.topics), "file", ts.topicsPath())
	return nil
}

// readTopicsFile reads the topic table (none yet: no items).
func (ts *topicStore) readTopicsFile() ([]topicFileItem, error) {
	b, err := readFile(ts.fs, ts.topicsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	var d topicsFileData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDataDir, ts.topicsPath(), err)
	}
	if d.Version != 1 {
		return nil, fmt.Errorf("%w: %s: version %d, want 1", ErrDataDir, ts.topicsPath(), d.Version)
	}
	return d.Topics, nil
}

func (ts *topicStore) topicsPath() string { return filepath.Join(ts.cfg.LogDirs[0], TopicsFile) }

// loadMetaProperties reads or writes meta.properties in each log dir and
// returns the cluster id, generated once.
func (ts *topicStore) loadMetaProperties() (string, error) {
	clusterID := ""
	var missing []string
	for _, dir := range ts.cfg.LogDirs {
		p := filepath.Join(dir, MetaPropertiesFile)
		f, err := ts.fs.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, dir)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrDataDir, err)
		}
		kv, _, err := ParseProperties(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrDataDir, p, err)
		}
		nid, ok := kv["node.id"]
		if !ok {
			return "", fmt.Errorf("%w: %s is not a valid meta.properties (no node.id=; garbage or damaged): repair it, or remove it and a new one is written (with a new cluster.id)", ErrDataDir, p)
		}
		n, err := strconv.ParseInt(nid, 10, 32)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not a valid meta.properties: node.id %q is not a number", ErrDataDir, p, nid)
		}
		if int32(n) != ts.cfg.NodeID {
			return "", fmt.Errorf("%w: %s holds node.id %d, configured %d", ErrDataDir, p, n, ts.cfg.NodeID)
		}
		id := kv["cluster.id"]
		if id == "" || (clusterID != "" && id != clusterID) {
			return "", fmt.Errorf("%w: %s: cluster.id %q disagrees with %q", ErrDataDir, p, id, clusterID)
		}
		clusterID = id
	}
	if clusterID == "" {
		u := newUUID()
		clusterID = uuidString(u)
	}
	for _, dir := range missing {
		text := fmt.Sprintf("#\n# written by strata\nversion=1\ncluster.id=%s\nnode.id=%d\n", clusterID, ts.cfg.NodeID)
		if err := fsutil.WriteFileAtomic(ts.fs, filepath.Join(dir, MetaPropertiesFile), []byte(text)); err != nil {
			return "", fmt.Errorf("%w: %w", ErrDataDir, err)
		}
	}
	return clusterID, nil
}

// persist rewrites TopicsFile from ts.topics plus extra (not yet in the map).
// Callers hold ts.mu.
func (ts *topicStore) persist(extra ...*topic) error { return ts.persistWith(nil, nil, extra...) }

// persistWith is persist with partition counts and configs overridden per
// topic name (a change not yet applied in memory); a count of 0 leaves the
// topic out.
func (ts *topicStore) persistWith(counts map[string]int32, configs map[string]map[string]string, extra ...*topic) error {
	d := topicsFileData{Version: 1}
	add := func(t *topic, n int32) {
		if c, ok := counts[t.name]; ok {
			n = c
		}
		cf := t.configs
		if c, ok := configs[t.name]; ok {
			cf = c
		}
		if n > 0 {
			d.Topics = append(d.Topics, topicFileItem{Name: t.name, TopicID: uuidString(t.id), Partitions: n, Configs: cf})
		}
	}
	for _, t := range ts.topics {
		add(t, int32(len(t.parts)))
	}
	for _, t := range extra {
		add(t, int32(cap(t.parts)))
	}
	sort.Slice(d.Topics, func(i, j int) bool { return d.Topics[i].Name < d.Topics[j].Name })
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(ts.fs, ts.topicsPath(), append(b, '\n'))
}

// get returns the topic or nil.
func (ts *topicStore) get(name string) *topic {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.topics[name]
}

// partition returns the partition or nil.
func (ts *topicStore) partition(name string, p int32) *partition {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	t := ts.topics[name]
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return nil
	}
	return t.parts[p]
}

// parts returns t's partitions (CreatePartitions appends under ts.mu).
func (ts *topicStore) parts(t *topic) []*partition {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return t.parts[:len(t.parts):len(t.parts)]
}

// all returns every topic sorted by name.
func (ts *topicStore) all() []*topic {
	ts.mu.RLock()
	out := make([]*topic, 0, len(ts.topics))
	for _, t := range ts.topics {
		out = append(out, t)
	}
	ts.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// errTopicExists is returned by create for an existing topic.
var errTopicExists = errors.New("server: topic already exists")

// create defines a topic with n partitions and opens its logs. With
// validateOnly it only checks. An existing topic is errTopicExists (and the
// existing topic is returned).
func (ts *topicStore) create(name string, n int32, configs map[string]string, validateOnly bool) (*topic, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	if err := validateTopicConfigs(configs, nil); err != nil {
		return nil, err
	}
	t := &topic{name: strings.Clone(name), configs: configs, parts: make([]*partition, 0, n)}
	if err := ts.applyTopicConfigs(t, strictAll); err != nil {
		return nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, ErrClosed
	}
	if t := ts.topics[name]; t != nil {
		return t, errTopicExists
	}
	if validateOnly {
		return nil, nil
	}
	t.id = newUUID()
	if err := ts.persist(t); err != nil {
		return nil, err
	}
	if err := ts.openPartitions(t, n); err != nil {
		return nil, err
	}
	ts.topics[t.name] = t
	ts.log.Info("topic created", "topic", t.name, "partitions", n, "topic_id", uuidString(t.id))
	return t, nil
}

// openPartitions opens partitions 0..n-1 of t, creating missing directories
// in the log dir holding the fewest partitions.
func (ts *topicStore) openPartitions(t *topic, n int32) (err error) {
	start := int32(len(t.parts))
	defer func() {
		if err != nil { // leave nothing open behind a failure
			for _, p := range t.parts[start:] {
				ts.dropLog(p)
			}
			t.parts = t.parts[:start]
		}
	}()
	opts, err := segmentOptions(ts.effective(t), ts.log)
	if err != nil {
		return fmt.Errorf("%w: topic %s: %w", ErrDataDir, t.name, err)
	}
	for p := start; p < n; p++ {
		tp := recovery.TopicPartition{Topic: t.name, Partition: p}
		part := &partition{topic: t.name, index: p}
		if l, dd := ts.recoveredLog(tp); l != nil {
			part.log, part.dd, part.dir = newMovableLog(l, dd), dd, l.Dir()
		} else {
			dd := ts.dataDirOf(ts.dirForNew(tp))
			part.dir = dd.PartitionDir(tp)
			o := *opts
			o.FS, o.Health = ts.fs, dd.Health() // the log dir's filesystem and fate
			l, err := ts.open(part.dir, &o)
			if err != nil {
				return fmt.Errorf("%w: open %s: %w", ErrDataDir, part.dir, err)
			}
			part.log = l
			if sl, ok := l.(*segment.Log); ok {
				if err := dd.AddLog(tp, sl); err != nil {
					_ = l.Close()
					return fmt.Errorf("%w: %w", ErrDataDir, err)
				}
				part.dd = dd
				part.log = newMovableLog(sl, dd)
			}
		}
		t.parts = append(t.parts, part)
		ts.registerCleaner(t, part)
		pm := filepath.Join(part.dir, PartitionMetadataFile)
		if b, err := readFile(ts.fs, pm); err == nil {
			if id := partitionMetadataID(b); id != uuidString(t.id) {
				return fmt.Errorf("%w: %s holds topic id %q, the topic table says %s", ErrDataDir, pm, id, uuidString(t.id))
			}
		} else {
			text := "version: 0\ntopic_id: " + uuidString(t.id) + "\n"
			if err := fsutil.WriteFileAtomic(ts.fs, pm, []byte(text)); err != nil {
				return fmt.Errorf("%w: %w", ErrDataDir, err)
			}
		}
	}
	return nil
}

// dropLog unregisters and closes a partition's log (its files stay).
func (ts *topicStore) dropLog(p *partition) {
	if ts.cleaner != nil {
		ts.cleaner.Unregister(recovery.TopicPartition{Topic: p.topic, Partition: p.index})
	}
	if dd := p.dataDir(); dd != nil {
		dd.RemoveLog(recovery.TopicPartition{Topic: p.topic, Partition: p.index})
	}
	_ = p.log.Close()
}

// emptiestDir is the log dir with the fewest partition directories.
func (ts *topicStore) emptiestDir() string {
	best, bestN := ts.cfg.LogDirs[0], -1
	for _, d := range ts.cfg.LogDirs {
		n := len(subdirs(ts.fs, d))
		if bestN < 0 || n < bestN {
			best, bestN = d, n
		}
	}
	return best
}

// close stops the cleaner, then flushes and closes every log: logs in a
// DataDir through DataDir.Close (checkpoints, clean-shutdown marker, unlock),
// others directly.
func (ts *topicStore) close() error {
	ts.stopMoves() // before ts.mu: a swap in progress reads the topic
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil
	}
	ts.closed = true
	var errs []error
	if ts.cleaner != nil {
		if err := ts.cleaner.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range ts.topics {
		for _, p := range t.parts {
			if p.dataDir() != nil {
				continue
			}
			if err := p.log.Flush(); err != nil {
				errs = append(errs, err)
			}
			if err := p.log.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := ts.closeDataDirs(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateTopicName applies Kafka's rules: 1..249 of [a-zA-Z0-9._-], not "."
// or "..".
func validateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// newUUID is a random version-4 UUID whose string form does not start with
// '-' (Kafka's Uuid.randomUuid rule).
func newUUID() [16]byte {
	for {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			panic(err)
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if s := uuidString(u); s[0] != '-' {
			return u
		}
	}
}

// uuidString is Kafka's Uuid.toString: base64url without padding.
func uuidString(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("bad uuid %q", s)
	}
	copy(u[:], b)
	return u, nil
}

// partitionMetadataID returns the topic_id of a partition.metadata file.
func partitionMetadataID(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "topic_id" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
