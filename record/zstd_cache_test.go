package record

import "testing"

// TestZstdEncoderCacheBounded: topic configs may ask for any zstd level in
// [-131072, 22]; the encoders are cached by the encoder level those map to,
// so asking for many levels keeps at most four encoders.
func TestZstdEncoderCacheBounded(t *testing.T) {
	for level := -200; level <= 22; level++ {
		if _, err := zstdEncoder(level); err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
	}
	zstdMu.Lock()
	n := len(zstdEncoders)
	zstdMu.Unlock()
	if n > 4 {
		t.Fatalf("%d zstd encoders cached after 223 levels, want at most 4", n)
	}
}
