package segment

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// TestConcurrentReaders: readers iterate from the log start to the end over and
// over while the writer appends, rolls and deletes segments. Every batch a reader
// sees has a valid CRC and offsets increase; a reader never blocks the writer.
func TestConcurrentReaders(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		l, err := Open(dir, &Options{FS: fsys, SegmentBytes: 4096, IndexIntervalBytes: 128, FileDeleteDelayMs: -1, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var stop atomic.Bool
		var wg sync.WaitGroup
		var reads atomic.Int64
		for r := 0; r < 3; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf []byte
				for !stop.Load() {
					off := l.LogStartOffset()
					for off < l.LogEndOffset() && !stop.Load() {
						reg, err := l.Read(off, 2000)
						if errors.Is(err, ErrOffsetOutOfRange) {
							break // deleted under us: start again from the new start
						}
						if err != nil {
							t.Error(err)
							return
						}
						buf, err = reg.ReadInto(buf)
						reg.Release()
						if err != nil {
							t.Error(err)
							return
						}
						next := off
						it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
						for it.Next() {
							h := it.Header()
							if h.LastOffset < next {
								t.Errorf("offset went backwards: %d after %d", h.LastOffset, next)
								return
							}
							next = h.LastOffset + 1
						}
						if err := it.Err(); err != nil && !errors.Is(err, record.ErrTruncated) {
							t.Error(err)
							return
						}
						if next == off {
							t.Errorf("no progress at %d", off)
							return
						}
						off = next
						reads.Add(1)
					}
				}
			}()
		}
		b := makeBatch(t, 0, 5, 1, record.CodecNone, 100)
		for i := 0; i < 2000; i++ {
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
			if i%300 == 299 {
				if _, err := l.DeletePrefix(len(l.Segments()) / 2); err != nil {
					t.Fatal(err)
				}
			}
		}
		stop.Store(true)
		wg.Wait()
		if reads.Load() == 0 {
			t.Fatal("readers read nothing")
		}
	})
}

// TestSnapshotReadsDeletedSegment: a reader that took a snapshot before segments
// were deleted still reads them (their files linger as .deleted until
// file.delete.delay.ms passes and the reader releases them).
func TestSnapshotReadsDeletedSegment(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		l, err := Open(dir, &Options{FS: fsys, SegmentBytes: 1024, FileDeleteDelayMs: 50, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		b := makeBatch(t, 0, 3, 1, record.CodecNone, 100)
		for i := 0; i < 20; i++ {
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		snap := l.Snapshot()
		held, err := snap.Read(0, 100) // a reader in the middle of a fetch
		if err != nil {
			t.Fatal(err)
		}
		n, err := l.DeletePrefix(len(snap.Segments) - 1)
		if err != nil || n == 0 {
			t.Fatalf("deleted %d: %v", n, err)
		}
		if _, err := l.Read(0, 100); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("new readers still see offset 0: %v", err)
		}
		names, _ := fsys.ReadDir(dir)
		deleted := 0
		for _, n := range names {
			if _, suf, ok := ParseFileName(n); ok && suf == LogSuffix+DeletedSuffix {
				deleted++
			}
		}
		if deleted == 0 {
			t.Fatalf("no .deleted files in %v", names)
		}
		// The old snapshot reads every deleted segment.
		for off := int64(0); off < snap.Segments[len(snap.Segments)-1].Base(); off += 3 {
			r, err := snap.Read(off, 100)
			if err != nil {
				t.Fatalf("snapshot read %d: %v", off, err)
			}
			buf, err := r.ReadInto(nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if err := record.Batch(buf).Validate(r.Pos); err != nil {
				t.Fatal(err)
			}
		}
		// Past the delay the files are removed (a loaded machine may fire
		// the timer late: wait for it, with a deadline)...
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			names, _ = fsys.ReadDir(dir)
			left := ""
			for _, n := range names {
				if _, suf, ok := ParseFileName(n); ok && hasTemp(suf, DeletedSuffix) {
					left = n
				}
			}
			if left == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still there after file.delete.delay.ms", left)
			}
		}
		buf, err := held.ReadInto(nil) // ...but the held region still reads
		held.Release()
		if err != nil || record.Batch(buf).Validate(0) != nil {
			t.Fatalf("held region unreadable after deletion: %v", err)
		}
	})
}

// TestReadStopsAtSnapshotEnd: a read never returns a batch at or past the
// snapshot's log end offset, even while the writer appends. The broker sends
// the high watermark it loads after the read; a batch beyond it would let a
// client fetch past the log end and get OFFSET_OUT_OF_RANGE (franz-go then
// reports lost records), which strata bench broker hit on a busy machine.
func TestReadStopsAtSnapshotEnd(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		l, err := Open(dir, &Options{FS: fsys, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var stop atomic.Bool
		var wg sync.WaitGroup
		var reads atomic.Int64
		for r := 0; r < 2; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf []byte
				for !stop.Load() {
					v := l.Snapshot()
					if v.End == 0 {
						continue
					}
					reg, err := v.Read(v.End-1, 1<<20)
					if err != nil {
						t.Error(err)
						return
					}
					buf, err = reg.ReadInto(buf)
					reg.Release()
					if err != nil {
						t.Error(err)
						return
					}
					it := record.NewIterator(buf, record.ScanOptions{})
					for it.Next() {
						if h := it.Header(); h.LastOffset >= v.End {
							t.Errorf("read at %d returned offsets up to %d, past the snapshot's end %d", v.End-1, h.LastOffset, v.End)
							return
						}
					}
					reads.Add(1)
				}
			}()
		}
		b := makeBatch(t, 0, 1, 1, record.CodecNone, 10)
		for i := 0; i < 50000 && !t.Failed(); i++ {
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		stop.Store(true)
		wg.Wait()
		if reads.Load() == 0 {
			t.Fatal("readers read nothing")
		}
	})
}

// TestFlushMessagesGroupCommit: with flush.messages=1, concurrent appenders
// share fdatasyncs (the fsync runs outside the writer's lock, so appends go on
// while it runs and the next one covers them all), and each Append returns
// only once its own records are durable.
func TestFlushMessagesGroupCommit(t *testing.T) {
	var syncs atomic.Int64
	fsys := vfs.Inject(vfs.OS, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, LogSuffix) {
			syncs.Add(1)
			time.Sleep(2 * time.Millisecond) // a slow disk: appends pile up
		}
		return nil
	}))
	l, err := Open(t.TempDir(), &Options{FS: fsys, FlushMessages: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const writers, each = 4, 40
	b := makeBatch(t, 0, 1, 1, record.CodecNone, 50)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				info, err := l.Append(bytes.Clone(b))
				if err != nil {
					errs <- err
					return
				}
				if got := l.FlushedOffset(); got <= info.LastOffset {
					errs <- fmt.Errorf("Append of offset %d returned with the log flushed only to %d", info.LastOffset, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := syncs.Load(); n >= writers*each*3/4 {
		t.Fatalf("%d fdatasyncs for %d appends by %d writers: no group commit", n, writers*each, writers)
	}
	t.Logf("%d fdatasyncs for %d appends", syncs.Load(), writers*each)
}
