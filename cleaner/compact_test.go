package cleaner

import (
	"bytes"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// compactFixture writes 30 batches of 3 records over 4 keys, the last key's
// last record a tombstone, with codec c, and closes the log.
func compactFixture(t *testing.T, fsys vfs.FS, dir string, c record.Codec) []refRec {
	l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentBytes: 600, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var ref []refRec
	for b := 0; b < 30; b++ {
		next := l.LogEndOffset()
		recs := make([]record.Record, 3)
		for i := range recs {
			o := next + int64(i)
			v := []byte("value-" + string(rune('a'+o%26)))
			if b == 29 && i == 2 {
				v = nil
			}
			recs[i] = record.Record{Timestamp: 1000 + o, Key: key(int(o % 4)), Value: v}
			ref = append(ref, refRec{Offset: o, Timestamp: 1000 + o, Key: recs[i].Key, Value: v})
		}
		if _, err := appendBatch(l, batchOf(t, c, recs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return ref
}

func dirState(t *testing.T, fsys *vfs.MemFS, dir string) map[string][]byte {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		f, err := fsys.Open(dir + "/" + n)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		b := make([]byte, st.Size())
		f.ReadAt(b, 0)
		f.Close()
		out[n] = b
	}
	return out
}

func TestCompactDirDryRun(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/data/topic-3"
	compactFixture(t, fsys, dir, record.CodecNone)
	before := dirState(t, fsys, dir)
	rep, err := CompactDir(dir, &CompactOptions{FS: fsys, DryRun: true, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RecordsIn != 90 || rep.RecordsOut != 4 || rep.Checkpoint != "" {
		t.Fatalf("dry run report: %+v", rep)
	}
	after := dirState(t, fsys, dir)
	if len(after) != len(before) {
		t.Fatalf("files changed: %d -> %d", len(before), len(after))
	}
	for n, b := range before {
		if !bytes.Equal(after[n], b) {
			t.Fatalf("%s changed by a dry run", n)
		}
	}
	if _, err := fsys.Stat("/data/" + checkpoint.CleanerOffsetFile); err == nil {
		t.Fatal("dry run wrote a checkpoint")
	}
}

// TestCompactDirOffline: the last segment is cleaned too, keeping its base and
// the log end so appends continue; compressed batches are re-encoded with the
// same codec and header fields; tombstones get a delete horizon (bit 6) and go
// once it passes; the checkpoint records the pass.
func TestCompactDirOffline(t *testing.T) {
	for _, c := range []record.Codec{record.CodecNone, record.CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			dir := "/data/topic-3"
			ref := compactFixture(t, fsys, dir, c)
			now := int64(50_000)
			opts := &CompactOptions{FS: fsys, SegmentIndexBytes: 4096, DeleteRetentionMs: 1000, Now: func() int64 { return now }, Logger: quiet}
			rep, err := CompactDir(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.RecordsOut != 4 || rep.SegmentsAfter != 1 || rep.EndOffset != 90 {
				t.Fatalf("report %+v", rep)
			}
			ck, err := checkpoint.ReadOffsets(fsys, "/data/"+checkpoint.CleanerOffsetFile)
			if err != nil || ck[checkpoint.TopicPartition{Topic: "topic", Partition: 3}] != 90 {
				t.Fatalf("checkpoint %v %v", ck, err)
			}
			l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			got, batches := readAll(t, l)
			checkSubsequence(t, got, ref)
			if len(got) != 4 || l.LogEndOffset() != 90 || batches[len(batches)-1][1] != 89 {
				t.Fatalf("%d records, end %d, batches %v", len(got), l.LogEndOffset(), batches)
			}
			r, _ := l.Read(87, 1<<20)
			buf, _ := r.ReadInto(nil)
			r.Release()
			b := record.Batch(buf[:record.Batch(buf).Length()+record.LogOverhead])
			if h, ok := b.DeleteHorizon(); !ok || h != now+1000 || b.Codec() != c || b.ProducerID() != 7 || b.PartitionLeaderEpoch() != 3 || b.BaseOffset() != 87 || b.LastOffset() != 89 {
				t.Fatalf("rebuilt batch: horizon %d %v codec %v producer %d epoch %d offsets [%d, %d]",
					h, ok, b.Codec(), b.ProducerID(), b.PartitionLeaderEpoch(), b.BaseOffset(), b.LastOffset())
			}
			// Appends continue after the cleaned last segment.
			if info, err := appendBatch(l, batchOf(t, c, []record.Record{{Timestamp: 1, Key: key(9), Value: []byte("z")}})); err != nil || info.FirstOffset != 90 {
				t.Fatalf("append after compaction: %+v %v", info, err)
			}
			l.Close()
			// Past the horizon, the next pass removes the tombstone.
			now += 2000
			opts.FromStart = true
			rep, err = CompactDir(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TombstonesRemoved != 1 {
				t.Fatalf("second pass removed %d tombstones", rep.TombstonesRemoved)
			}
			l, _ = segment.Open(dir, &segment.Options{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
			defer l.Close()
			got, _ = readAll(t, l)
			for _, r := range got {
				if r.Value == nil {
					t.Fatalf("tombstone at %d survived its horizon", r.Offset)
				}
			}
			if l.LogEndOffset() != 91 {
				t.Fatalf("log end %d", l.LogEndOffset())
			}
		})
	}
}

// TestCompactDirLegacy: v0/v1 message sets (0.8-era data) are copied
// unchanged, while the v2 batches after them are compacted.
func TestCompactDirLegacy(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/data/old-0"
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var legacy []byte
	for o := int64(0); o < 6; o++ {
		legacy = record.AppendLegacyMessage(legacy, record.LegacyMessage{Offset: o, Magic: int8(o % 2), Timestamp: 1, Key: key(0), Value: []byte("old")})
	}
	f, err := fsys.Create(segment.FilePath(dir, 0, segment.LogSuffix))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(legacy)
	f.Sync()
	f.Close()
	l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := appendBatch(l, batchOf(t, record.CodecNone, []record.Record{{Timestamp: 2, Key: key(0), Value: []byte("new")}})); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	rep, err := CompactDir(dir, &CompactOptions{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LegacyEntriesCopied != 6 || rep.RecordsIn != 5 || rep.RecordsOut != 1 || rep.EndOffset != 11 {
		t.Fatalf("report %+v", rep)
	}
	l, err = segment.Open(dir, &segment.Options{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := r.ReadInto(nil)
	r.Release()
	if !bytes.Equal(buf[:len(legacy)], legacy) {
		t.Fatal("legacy entries changed")
	}
	if l.LogEndOffset() != 11 {
		t.Fatalf("log end %d", l.LogEndOffset())
	}
}
