package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
)

// clusterMeta is what the log dirs' meta.properties say in cluster mode.
// Kafka's ZooKeeper mode writes version 0 with broker.id; a version 1 file
// (KRaft's, and strata's single node) has node.id instead. Both are read.
type clusterMeta struct {
	clusterID string   // "" when no dir has one
	brokerID  int32    // -1 when no dir has one
	missing   []string // log dirs without meta.properties
}

// readClusterMeta reads every log dir's meta.properties; the dirs must
// agree on the cluster id and the broker id (Kafka's
// InconsistentBrokerMetadataException otherwise).
func readClusterMeta(fsys vfs.FS, dirs []string) (clusterMeta, error) {
	m := clusterMeta{brokerID: -1}
	for _, dir := range dirs {
		p := filepath.Join(dir, MetaPropertiesFile)
		f, err := fsys.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			m.missing = append(m.missing, dir)
			continue
		}
		if err != nil {
			return m, fmt.Errorf("%w: %w", ErrDataDir, err)
		}
		kv, _, err := ParseProperties(f)
		f.Close()
		if err != nil {
			return m, fmt.Errorf("%w: %s: %w", ErrDataDir, p, err)
		}
		key := "broker.id"
		if kv["version"] == "1" {
			key = "node.id"
		}
		idText, ok := kv[key]
		if !ok {
			return m, fmt.Errorf("%w: %s is not a valid meta.properties (no %s=): repair it, or remove it and a new one is written", ErrDataDir, p, key)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return m, fmt.Errorf("%w: %s is not a valid meta.properties: %s %q is not a broker id", ErrDataDir, p, key, idText)
		}
		if m.brokerID >= 0 && int32(id) != m.brokerID {
			return m, fmt.Errorf("%w: %s holds %s %d, another log dir %d", ErrDataDir, p, key, id, m.brokerID)
		}
		m.brokerID = int32(id)
		cid := kv["cluster.id"]
		if cid != "" && m.clusterID != "" && cid != m.clusterID {
			return m, fmt.Errorf("%w: %s: cluster.id %q, another log dir %q", ErrInconsistentClusterID, p, cid, m.clusterID)
		}
		if cid != "" {
			m.clusterID = cid
		}
	}
	return m, nil
}

// checkClusterID refuses ZooKeeper's cluster id when the log dirs hold
// another one.
func (m *clusterMeta) checkClusterID(zkID string) error {
	if m.clusterID != "" && m.clusterID != zkID {
		return fmt.Errorf("%w: the cluster id in ZooKeeper (/cluster/id) is %s but meta.properties in the log dirs says %s: "+
			"these log dirs were written by another cluster (or by strata as a single node); point the broker at the right "+
			"zookeeper.connect, or at empty log dirs", ErrInconsistentClusterID, zkID, m.clusterID)
	}
	return nil
}

// writeClusterMeta writes meta.properties where it is missing, as Kafka's
// ZooKeeper mode does: version 0, broker.id, cluster.id.
func writeClusterMeta(fsys vfs.FS, dirs []string, clusterID string, brokerID int32) error {
	text := fmt.Sprintf("#\n# written by strata\nbroker.id=%d\nversion=0\ncluster.id=%s\n", brokerID, clusterID)
	for _, dir := range dirs {
		if err := fsutil.WriteFileAtomic(fsys, filepath.Join(dir, MetaPropertiesFile), []byte(text)); err != nil {
			return fmt.Errorf("%w: %w", ErrDataDir, err)
		}
	}
	return nil
}
