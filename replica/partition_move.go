package replica

import (
	"path/filepath"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/segment"
)

// SwapLog replaces the partition's log by a copy of it in another log dir
// of the broker (AlterReplicaLogDirs: Kafka's future log taking the current
// one's place). It holds the role lock exclusively, so no leader or
// follower append, truncation or fetch serving runs meanwhile. First the
// leader-epoch checkpoint is written into futureDir (the copy's directory);
// then swap is given the current log and returns the log replacing it,
// holding the same batches (it copies the last ones and renames the copy to
// its final name) with futureDir's files. An error from either leaves the
// partition on its current log. The replaced log is swap's to close.
func (p *Partition) SwapLog(futureDir string, swap func(cur *segment.Log) (*segment.Log, error)) error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	cur, entries := p.log, p.epochs.Entries()
	p.mu.Unlock()
	if err := cur.Err(); err != nil {
		return err
	}
	staged := &EpochCache{fs: p.fs, path: filepath.Join(futureDir, checkpoint.LeaderEpochFile), entries: entries}
	if err := staged.flush(); err != nil {
		return err
	}
	nl, err := swap(cur)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.log = nl
	p.epochs = &EpochCache{fs: p.fs, path: filepath.Join(nl.Dir(), checkpoint.LeaderEpochFile), entries: entries}
	p.wake()
	p.mu.Unlock()
	p.logger.Info("log moved to another log dir", "from", cur.Dir(), "to", nl.Dir())
	return nil
}
