package cleaner

import "testing"

// TestExplicitZeros: with ExplicitZeros a zero min.cleanable.dirty.ratio,
// delete.retention.ms and log.cleaner.backoff.ms keep Kafka's meaning
// (clean whenever anything is dirty, drop tombstones at once, no backoff)
// instead of becoming the defaults; without it zero is still "default".
func TestExplicitZeros(t *testing.T) {
	lc := (&LogConfig{ExplicitZeros: true}).ensureDefaults()
	if lc.MinCleanableDirtyRatio != 0 || lc.DeleteRetentionMs != 0 || lc.CleanupPolicy != "delete" {
		t.Fatalf("explicit zeros: %+v", lc)
	}
	lc = (&LogConfig{}).ensureDefaults()
	if lc.MinCleanableDirtyRatio != DefaultMinCleanableDirtyRatio || lc.DeleteRetentionMs != DefaultDeleteRetentionMs {
		t.Fatalf("defaults: %+v", lc)
	}
	c, err := (&Config{ExplicitZeros: true}).ensureDefaults()
	if err != nil || c.BackoffMs != 0 || c.Threads != DefaultThreads {
		t.Fatalf("explicit zeros: %+v %v", c, err)
	}
	if c, err = (&Config{}).ensureDefaults(); err != nil || c.BackoffMs != DefaultBackoffMs {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}
