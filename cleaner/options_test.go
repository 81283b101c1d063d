package cleaner

import "testing"

// TestExplicitZeros: with ExplicitZeros a zero log.cleaner.backoff.ms
// keeps Kafka's meaning (no sleep between passes) instead of becoming the
// default; without it zero is still "default". (A LogConfig's zeros are
// always Kafka's: TestDeleteRetentionZeroManager.)
func TestExplicitZeros(t *testing.T) {
	c, err := (&Config{ExplicitZeros: true}).ensureDefaults()
	if err != nil || c.BackoffMs != 0 || c.Threads != DefaultThreads {
		t.Fatalf("explicit zeros: %+v %v", c, err)
	}
	if c, err = (&Config{}).ensureDefaults(); err != nil || c.BackoffMs != DefaultBackoffMs {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}
