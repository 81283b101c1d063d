package replica

import (
	"errors"
	"slices"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
)

func newCache(t *testing.T) *EpochCache {
	t.Helper()
	m := vfs.NewMem()
	if err := m.MkdirAll("/p", 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := OpenEpochCache(m, "/p")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func assign(t *testing.T, c *EpochCache, pairs ...int64) {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if _, err := c.Assign(int32(pairs[i]), pairs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

func wantEntries(t *testing.T, c *EpochCache, pairs ...int64) {
	t.Helper()
	var want []EpochEntry
	for i := 0; i < len(pairs); i += 2 {
		want = append(want, EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	if got := c.Entries(); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	// The file always says what memory says.
	onDisk, err := checkpoint.ReadEpochs(c.fs, c.path)
	if err != nil && len(want) > 0 {
		t.Fatal(err)
	}
	if len(want) > 0 && !slices.Equal(onDisk, want) {
		t.Fatalf("file holds %v, memory %v", onDisk, want)
	}
}

func wantEnd(t *testing.T, c *EpochCache, epoch int32, leo int64, we int32, wo int64) {
	t.Helper()
	if e, o := c.EndOffsetFor(epoch, leo); e != we || o != wo {
		t.Fatalf("EndOffsetFor(%d) with LEO %d = (%d, %d), want (%d, %d)", epoch, leo, e, o, we, wo)
	}
}

// The cases of Kafka 2.8's LeaderEpochFileCacheTest, one per subtest.
func TestEpochCacheKafkaCases(t *testing.T) {
	u, uo := UndefinedEpoch, UndefinedEpochOffset
	cases := map[string]func(t *testing.T, c *EpochCache){
		"AddEpochAndMessageOffset": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 10)
			wantEntries(t, c, 2, 10)
			wantEnd(t, c, 2, 11, 2, 11)
		},
		"LatestEpochGivesLogEnd": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 11, 2, 12)
			wantEnd(t, c, 2, 14, 2, 14)
		},
		"UndefinedEpochRequested": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 11, 3, 12)
			wantEnd(t, c, u, 100, u, uo)
		},
		"SameEpochLaterOffsetIgnored": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 9, 2, 10)
			wantEntries(t, c, 2, 9)
		},
		"NewEpochSameOffsetReplaces": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 9, 3, 9)
			wantEntries(t, c, 3, 9)
		},
		"EmptyCacheIsUndefined": func(t *testing.T, c *EpochCache) {
			wantEnd(t, c, 0, 73, u, uo)
			wantEnd(t, c, u, 73, u, uo)
			wantEnd(t, c, 7, 73, u, uo)
			if _, ok := c.Latest(); ok {
				t.Fatal("empty cache has a latest entry")
			}
		},
		"BelowFirstEpochGivesFirstStart": func(t *testing.T, c *EpochCache) {
			assign(t, c, 5, 11, 6, 12, 7, 13)
			wantEnd(t, c, 4, 20, 4, 11)
		},
		"SameEpochEarlierOffsetTruncates": func(t *testing.T, c *EpochCache) {
			assign(t, c, 5, 11, 6, 12, 7, 13, 7, 12)
			wantEnd(t, c, 5, 20, 5, 12)
			wantEnd(t, c, 6, 20, 5, 12)
		},
		"PreviousEpochEndsAtNextStart": func(t *testing.T, c *EpochCache) {
			assign(t, c, 1, 11, 1, 12, 2, 13, 2, 14, 3, 15, 3, 16)
			wantEnd(t, c, 2, 17, 2, 15)
		},
		"MissingEpochGivesFloor": func(t *testing.T, c *EpochCache) {
			assign(t, c, 0, 10, 2, 13, 4, 17)
			wantEnd(t, c, 1, 20, 0, 13)
			wantEnd(t, c, 2, 20, 2, 17)
			wantEnd(t, c, 3, 20, 2, 17)
		},
		"AboveLatestIsUndefined": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 100)
			wantEnd(t, c, 3, 100, u, uo)
		},
		"LowerEpochTruncatesLaterEpochs": func(t *testing.T, c *EpochCache) {
			assign(t, c, 1, 5, 2, 6, 1, 7)
			wantEntries(t, c, 1, 7)
			wantEnd(t, c, 1, 8, 1, 8)
			wantEnd(t, c, 2, 8, u, uo)
		},
		"LaterEpochEarlierOffsetWins": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 5)
			wantEntries(t, c, 3, 5)
		},
		"LeaderChangesManyTimes": func(t *testing.T, c *EpochCache) {
			assign(t, c, 0, 0, 1, 0)
			wantEnd(t, c, 1, 0, 1, 0)
			wantEnd(t, c, 0, 0, 0, 0)
			wantEnd(t, c, 1, 5, 1, 5)
			assign(t, c, 2, 5)
			wantEnd(t, c, 2, 10, 2, 10)
			wantEnd(t, c, 1, 10, 1, 5)
			wantEnd(t, c, 0, 10, 0, 0)
		},
		"FollowerReceivesManyMessages": func(t *testing.T, c *EpochCache) {
			assign(t, c, 0, 0, 0, 1, 0, 2, 1, 3, 1, 4, 1, 5, 2, 6, 2, 7, 2, 8)
			wantEntries(t, c, 0, 0, 1, 3, 2, 6)
			wantEnd(t, c, 2, 9, 2, 9)
			wantEnd(t, c, 0, 9, 0, 3)
			wantEnd(t, c, 1, 9, 1, 6)
		},
		"TruncateFromEndOnBoundary": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.TruncateFromEnd(8); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 2, 6)
		},
		"TruncateFromEndBetween": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.TruncateFromEnd(9); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 2, 6, 3, 8)
		},
		"TruncateFromEndUndefinedDoesNothing": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.TruncateFromEnd(UndefinedEpochOffset); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 2, 6, 3, 8, 4, 11)
		},
		"TruncateFromStartOnBoundary": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.TruncateFromStart(8); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 3, 8, 4, 11)
		},
		"TruncateFromStartBetween": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.TruncateFromStart(9); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 3, 9, 4, 11)
		},
		"TruncateFromStartBetween2": func(t *testing.T, c *EpochCache) {
			assign(t, c, 0, 0, 1, 7, 2, 10)
			if err := c.TruncateFromStart(5); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 0, 5, 1, 7, 2, 10)
		},
		"TruncateFromStartTooEarly": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			for _, o := range []int64{1, 6, UndefinedEpochOffset} {
				if err := c.TruncateFromStart(o); err != nil {
					t.Fatal(err)
				}
				wantEntries(t, c, 2, 6, 3, 8, 4, 11)
			}
		},
		"TruncateFromStartKeepsLatest": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.TruncateFromStart(11); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 4, 11)
			if err := c.TruncateFromStart(15); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c, 4, 15)
		},
		"Clear": func(t *testing.T, c *EpochCache) {
			assign(t, c, 2, 6, 3, 8, 4, 11)
			if err := c.Clear(); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c)
			if got, err := checkpoint.ReadEpochs(c.fs, c.path); err != nil || len(got) != 0 {
				t.Fatalf("file after clear: %v %v", got, err)
			}
		},
		"EmptyTruncationsDoNothing": func(t *testing.T, c *EpochCache) {
			if err := c.TruncateFromStart(7); err != nil {
				t.Fatal(err)
			}
			if err := c.TruncateFromEnd(7); err != nil {
				t.Fatal(err)
			}
			wantEntries(t, c)
		},
		"NegativeRefused": func(t *testing.T, c *EpochCache) {
			for _, p := range [][2]int64{{-1, 0}, {0, -1}} {
				if _, err := c.Assign(int32(p[0]), p[1]); !errors.Is(err, ErrInvalidRequest) {
					t.Fatalf("Assign(%d, %d): %v", p[0], p[1], err)
				}
			}
			wantEntries(t, c)
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) { f(t, newCache(t)) })
	}
}

func TestEpochCachePersists(t *testing.T) {
	m := vfs.NewMem()
	c, err := OpenEpochCache(m, "/")
	if err != nil {
		t.Fatal(err)
	}
	assign(t, c, 2, 6, 5, 9)
	back, err := OpenEpochCache(m, "/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Entries(), c.Entries()) {
		t.Fatalf("reloaded %v, wrote %v", back.Entries(), c.Entries())
	}
	// A file edited by hand with entries out of order loads sanitised, as
	// Kafka's reload through assign does.
	if err := checkpoint.WriteEpochs(m, c.Path(), []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 10}, {Epoch: 2, StartOffset: 20}, {Epoch: -1, StartOffset: 30}}); err != nil {
		t.Fatal(err)
	}
	back, err = OpenEpochCache(m, "/")
	if err != nil {
		t.Fatal(err)
	}
	if want := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 20}}; !slices.Equal(back.Entries(), want) {
		t.Fatalf("sanitised %v, want %v", back.Entries(), want)
	}
	// Malformed: an empty cache and an error saying so, not a failure to start.
	f, _ := m.Create(c.Path())
	f.Write([]byte("0\n2\n1 0\n"))
	f.Close()
	back, err = OpenEpochCache(m, "/")
	if !errors.Is(err, checkpoint.ErrMalformed) || back == nil || len(back.Entries()) != 0 {
		t.Fatalf("malformed file: %v, %v", back, err)
	}
}

// TestEpochCacheWriteFails: a failed checkpoint write leaves Assign's cache as
// it was (the append it precedes does not happen), while a truncation keeps
// following the log.
func TestEpochCacheWriteFails(t *testing.T) {
	m := vfs.NewMem()
	fail := &toggleFail{}
	c, err := OpenEpochCache(vfs.Inject(m, fail), "/")
	if err != nil {
		t.Fatal(err)
	}
	assign(t, c, 1, 0, 2, 10)
	fail.on = true
	if _, err := c.Assign(3, 20); !errors.Is(err, ErrStorage) || !vfs.IsInjected(err) {
		t.Fatalf("Assign with failing fs: %v", err)
	}
	if want := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 10}}; !slices.Equal(c.Entries(), want) {
		t.Fatalf("after failed assign: %v", c.Entries())
	}
	if err := c.TruncateFromEnd(10); !errors.Is(err, ErrStorage) {
		t.Fatalf("TruncateFromEnd with failing fs: %v", err)
	}
	if want := []EpochEntry{{Epoch: 1, StartOffset: 0}}; !slices.Equal(c.Entries(), want) {
		t.Fatalf("after failed truncation: %v", c.Entries())
	}
}

type toggleFail struct{ on bool }

func (f *toggleFail) MaybeError(op vfs.Op) error {
	if f.on && op.Kind.Mutating() {
		return vfs.ErrInjected
	}
	return nil
}

// TestEpochCacheCrash: a power loss at every write point of every kind of
// change leaves a checkpoint that loads as the state before or after it.
func TestEpochCacheCrash(t *testing.T) {
	base := []EpochEntry{{Epoch: 2, StartOffset: 6}, {Epoch: 3, StartOffset: 8}, {Epoch: 4, StartOffset: 11}}
	changes := map[string]func(c *EpochCache) error{
		"assign":            func(c *EpochCache) error { _, err := c.Assign(7, 20); return err },
		"assign-conflict":   func(c *EpochCache) error { _, err := c.Assign(3, 9); return err },
		"truncate-end":      func(c *EpochCache) error { return c.TruncateFromEnd(9) },
		"truncate-start":    func(c *EpochCache) error { return c.TruncateFromStart(9) },
		"clear":             func(c *EpochCache) error { return c.Clear() },
		"assign-into-empty": func(c *EpochCache) error { _, err := c.Assign(0, 0); return err },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			setup := func() *vfs.MemFS {
				m := vfs.NewMem()
				if name != "assign-into-empty" {
					if err := checkpoint.WriteEpochs(m, "/"+checkpoint.LeaderEpochFile, base); err != nil {
						t.Fatal(err)
					}
				}
				return m
			}
			run := func(fsys vfs.FS) ([]EpochEntry, []EpochEntry, error) {
				c, err := OpenEpochCache(fsys, "/")
				if err != nil {
					return nil, nil, err
				}
				before := c.Entries()
				err = change(c)
				return before, c.Entries(), err
			}
			counter := vfs.NewCounter(vfs.MutatingOps...)
			before, after, err := run(vfs.Inject(setup(), counter))
			if err != nil {
				t.Fatal(err)
			}
			if counter.Count() == 0 {
				t.Fatal("the change wrote nothing")
			}
			states := 0
			for k := 0; k <= counter.Count(); k++ {
				m := setup()
				_, _, _ = run(vfs.Inject(m, vfs.CrashAt(k, vfs.MutatingOps...)))
				for desc, s := range m.AllCrashStates(vfs.CrashOptions{}) {
					states++
					c, err := OpenEpochCache(s, "/")
					if err != nil {
						t.Fatalf("k=%d %s: %v", k, desc, err)
					}
					if got := c.Entries(); !slices.Equal(got, before) && !slices.Equal(got, after) {
						t.Fatalf("k=%d %s: loaded %v, want %v or %v", k, desc, got, before, after)
					}
				}
			}
			t.Logf("%d crash points, %d states", counter.Count()+1, states)
		})
	}
}
