package index

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestSearchDistributions compares the warm-section + interpolation search with
// brute force over key distributions that defeat interpolation (steps, exponential
// growth, huge outliers), and checks it stays in range on unsorted garbage.
func TestSearchDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func(i, n int) int64{
		"linear":      func(i, n int) int64 { return int64(i) * 3 },
		"jitter":      func(i, n int) int64 { return int64(i)*100 + rng.Int64N(100) },
		"step":        func(i, n int) int64 { return int64(i) + int64(i/(n/2+1))*1_000_000_000 },
		"exponential": func(i, n int) int64 { return int64(math.Pow(2, 30*float64(i)/float64(n))) + int64(i) },
		"outlier": func(i, n int) int64 {
			return int64(i) + map[bool]int64{true: math.MaxInt32 - int64(n), false: 0}[i == n-1]
		},
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 3, 65, 1024, 1025, 1030, 5000, 20000} {
			keys := make([]int64, n)
			b32 := make([]byte, 8*n)
			b64 := make([]byte, 12*n)
			for i := range keys {
				keys[i] = gen(i, n)
				binary.BigEndian.PutUint32(b32[8*i+4:], uint32(keys[i]))
				binary.BigEndian.PutUint64(b64[12*i:], uint64(keys[i]))
			}
			probe := func(q int64) {
				want := sort.Search(n, func(i int) bool { return keys[i] > q }) - 1
				if got := floor32(b32, n, 8, 4, q); got != want {
					t.Fatalf("%s n=%d floor32(%d) = %d, want %d", name, n, q, got, want)
				}
				if got := floor64(b64, n, 12, 0, q); got != want {
					t.Fatalf("%s n=%d floor64(%d) = %d, want %d", name, n, q, got, want)
				}
				wantCeil := sort.Search(n, func(i int) bool { return keys[i] >= q })
				if wantCeil == n {
					wantCeil = -1
				}
				if got := ceil32(b32, n, 8, 4, q); got != wantCeil {
					t.Fatalf("%s n=%d ceil32(%d) = %d, want %d", name, n, q, got, wantCeil)
				}
			}
			for i := range keys {
				probe(keys[i] - 1)
				probe(keys[i])
				probe(keys[i] + 1)
			}
			probe(math.MinInt32)
			probe(math.MaxInt32)
		}
	}
	// Garbage: any answer in range, no panic.
	for range 200 {
		n := rng.IntN(3000)
		b := make([]byte, 12*n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		for range 50 {
			q := int64(rng.Uint64())
			if s := floor32(b, n, 12, 8, q); s < -1 || s >= n {
				t.Fatalf("floor32 out of range: %d", s)
			}
			if s := floor64(b, n, 12, 0, q); s < -1 || s >= n {
				t.Fatalf("floor64 out of range: %d", s)
			}
			if s := ceil32(b, n, 8, 4, q>>32); s < -1 || s >= n {
				t.Fatalf("ceil32 out of range: %d", s)
			}
		}
	}
}
