package index

import (
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestConcurrentLookups: one writer appends (and trims, then keeps appending,
// which grows the file back) while several readers look up without locks. Every
// answer must be an entry that was appended (entry i is (base+2i+1, 100i)) or the
// miss, and lookups must never go backwards in what they see.
func TestConcurrentLookups(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 20000
		base := int64(1 << 33)
		ix := mustOffset(t, fs, join(dir, "a.index"), base, 8*n, true)
		tx := mustTime(t, fs, join(dir, "a.timeindex"), base, 12*(n+1), true)
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan string, 16)
		fail := func(s string) {
			select {
			case errs <- s:
			default:
			}
		}
		for r := range 3 {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 1))
				seen := -1
				for !done.Load() {
					target := base + rng.Int64N(2*n+2)
					off, pos := ix.Lookup(target)
					if off == base && pos == 0 {
						// miss (or nothing published yet below target)
					} else {
						i := (off - base - 1) / 2
						if (off-base)%2 != 1 || pos != int32(100*i) || off > target {
							fail("offset lookup returned an entry never appended")
							return
						}
					}
					if p := rng.Int32N(100 * n); true {
						if off, pos, ok := ix.LookupPosition(p); ok && (pos < p || int64(pos) != 100*((off-base-1)/2)) {
							fail("position lookup returned an entry never appended")
							return
						}
					}
					ts, toff := tx.Lookup(rng.Int64N(2 * n))
					if ts != NoTimestamp && (ts%2 != 0 || toff != base+ts/2) {
						fail("time lookup returned an entry never appended")
						return
					}
					e := ix.Entries()
					if e < seen {
						fail("entry count went backwards")
						return
					}
					seen = e
					if e > 0 {
						if o, p, err := ix.Entry(e - 1); err != nil || o != base+2*int64(e-1)+1 || p != int32(100*(e-1)) {
							fail("last published entry incomplete")
							return
						}
					}
				}
			}(uint64(r))
		}
		for i := range n {
			if err := ix.Append(base+2*int64(i)+1, int32(100*i)); err != nil {
				t.Error(err)
				break
			}
			if err := tx.Append(2*int64(i), base+int64(i)); err != nil {
				t.Error(err)
				break
			}
			if i%4096 == 4095 {
				if err := ix.Trim(); err != nil {
					t.Error(err)
				}
				if err := tx.Trim(); err != nil {
					t.Error(err)
				}
			}
		}
		if err := ix.Trim(); err != nil {
			t.Error(err)
		}
		if err := tx.AppendFinal(2*n, base+n); err != nil {
			t.Error(err)
		}
		done.Store(true)
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if ix.Entries() != n || tx.Entries() != n+1 {
			t.Fatalf("entries %d / %d", ix.Entries(), tx.Entries())
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestZeroAllocs: Lookup, LookupPosition and Append do not allocate, on either
// backend (the fallback's in-memory copy grows geometrically, so its amortized
// count rounds to zero too). MemFS itself allocates per WriteAt (it logs unsynced
// writes for crash simulation), so the fallback is measured with WriteAt discarded.
func TestZeroAllocs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		if fs != vfs.OS {
			fs = discardWritesFS{fs}
		}
		ix := mustOffset(t, fs, join(dir, "z.index"), 0, 8*100000, true)
		tx := mustTime(t, fs, join(dir, "z.timeindex"), 0, 12*100000, true)
		next := int64(0)
		if a := testing.AllocsPerRun(5000, func() {
			next++
			if err := ix.Append(next, int32(next*10)); err != nil {
				t.Fatal(err)
			}
			if err := tx.Append(next, next); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Fatalf("Append: %v allocs/op", a)
		}
		q := int64(0)
		if a := testing.AllocsPerRun(5000, func() {
			q = (q + 7919) % (next + 10)
			ix.Lookup(q)
			ix.LookupPosition(int32(q * 10))
			tx.Lookup(q)
		}); a != 0 {
			t.Fatalf("Lookup: %v allocs/op", a)
		}
		_ = ix.Close()
		_ = tx.Close()
	})
}

type discardWritesFS struct{ vfs.FS }

func (d discardWritesFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return discardWritesFile{f}, nil
}

type discardWritesFile struct{ vfs.File }

func (discardWritesFile) WriteAt(p []byte, off int64) (int, error) { return len(p), nil }
