package vfs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// logProgress is what a log workload has promised so far: records fsynced per
// segment, and whether the old segment's deletion has begun.
type logProgress struct {
	acked        map[string]int
	deleteBegun  bool
	records      int
	segmentNames []string
}

const recLen = 8

func record(i int) string { return fmt.Sprintf("rec%04d\n", i) }

// logWorkload appends records to segments the way a partition log does: create a
// segment and fsync the directory, append with an index entry per record, fsync
// every 6 records, roll once, then delete the old segment via ".deleted".
func logWorkload(fsys vfs.FS, p *logProgress) error {
	*p = logProgress{acked: map[string]int{}}
	if err := fsys.MkdirAll("/p", 0o755); err != nil {
		return err
	}
	if err := fsys.SyncDir("/"); err != nil {
		return err
	}
	var log, idx vfs.File
	open := func(base int) error {
		var err error
		name := fmt.Sprintf("/p/%04d", base)
		if log, err = fsys.Create(name + ".log"); err != nil {
			return err
		}
		if idx, err = fsys.Create(name + ".index"); err != nil {
			return err
		}
		p.segmentNames = append(p.segmentNames, name+".log")
		return fsys.SyncDir("/p")
	}
	if err := open(0); err != nil {
		return err
	}
	base, n := 0, 0
	for i := range 24 {
		if i == 12 {
			log.Close()
			idx.Close()
			if err := open(12); err != nil {
				return err
			}
			base, n = 12, 0
		}
		if _, err := log.Write([]byte(record(i))); err != nil {
			return err
		}
		if _, err := idx.WriteAt([]byte{byte(i), 0, 0, byte(n * recLen)}, int64(n*4)); err != nil {
			return err
		}
		n++
		p.records = i + 1
		if i%6 == 5 {
			if err := log.Sync(); err != nil {
				return err
			}
			if err := idx.Sync(); err != nil {
				return err
			}
			p.acked[fmt.Sprintf("/p/%04d.log", base)] = n
		}
	}
	log.Close()
	idx.Close()
	p.deleteBegun = true
	if err := fsys.Rename("/p/0000.log", "/p/0000.log.deleted"); err != nil {
		return err
	}
	if err := fsys.SyncDir("/p"); err != nil {
		return err
	}
	if err := fsys.Remove("/p/0000.log.deleted"); err != nil {
		return err
	}
	return fsys.SyncDir("/p")
}

// TestCrashHarness is the crash loop other packages run: count the workload's
// mutating ops, then for every k crash at op k and check every post-crash state.
// It shows the enumeration is cheap enough for well over 10,000 states.
func TestCrashHarness(t *testing.T) {
	var p logProgress
	counter := vfs.NewCounter(vfs.MutatingOps...)
	must(t, logWorkload(vfs.Inject(vfs.NewMem(), counter), &p))
	n := counter.Count()

	start := time.Now()
	total := 0
	for k := 0; k <= n; k++ {
		m := vfs.NewMem()
		crash := vfs.CrashAt(k, vfs.MutatingOps...)
		err := logWorkload(vfs.Inject(m, crash), &p)
		if k < n && !vfs.IsInjected(err) || k == n && err != nil {
			t.Fatalf("k=%d: workload error %v", k, err)
		}
		for desc, c := range m.AllCrashStates(vfs.CrashOptions{TornPoints: 16}) {
			total++
			for _, seg := range p.segmentNames {
				data, ok := fileOr(t, c, seg)
				if !ok && p.deleteBegun && seg == "/p/0000.log" {
					continue
				}
				acked := p.acked[seg]
				if !ok && acked == 0 {
					continue
				}
				if !ok {
					t.Fatalf("k=%d %s: segment %s with %d acked records is gone", k, desc, seg, acked)
				}
				// The acked records are there, in order, and are followed by at most
				// unacked records and a torn or garbage tail.
				first := 0
				if seg != "/p/0000.log" {
					first = 12
				}
				valid := 0
				for valid*recLen+recLen <= len(data) && data[valid*recLen:(valid+1)*recLen] == record(first+valid) {
					valid++
				}
				if valid < acked {
					t.Fatalf("k=%d %s: %s has %d valid records, %d were acked: %q", k, desc, seg, valid, acked, data)
				}
				if tail := data[valid*recLen:]; strings.Contains(tail, "rec") && !strings.HasPrefix(record(first+valid), tail) {
					t.Fatalf("k=%d %s: %s has records after a gap: %q", k, desc, seg, data)
				}
			}
		}
	}
	t.Logf("%d crash points, %d crash states in %v", n+1, total, time.Since(start))
	if total < 10000 {
		t.Fatalf("only %d states", total)
	}
}
