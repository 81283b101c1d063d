// Package cleaner is Kafka-compatible log compaction and the background
// retention checker.
//
// # Algorithm
//
// A cleaning pass over one partition log follows Kafka's LogCleaner:
//
//  1. The dirty section starts at the partition's entry in the log dir's
//     cleaner-offset-checkpoint (reset to the log start offset when missing or
//     outside [log start, log end]) and stops at the first uncleanable offset:
//     the active segment's base (offline: the log end) or the last stable
//     offset, whichever is lower, or earlier, the base of the first dirty
//     segment whose largest timestamp is newer than now - min.compaction.lag.ms.
//  2. The offset map is built over the dirty section: for every keyed record of
//     every v2 batch, key → offset (later offsets overwrite), except the
//     records of control batches (markers) and of aborted transactions (see
//     Transactions), which never hide an older value. Mapping stops early, at a batch boundary, when the next batch's records
//     might not fit the map or its last offset would be 2^31-1 or more past
//     the pass's first offset: a partial pass, as in Kafka. The pass's end
//     offset is one past the last mapped batch's last offset.
//  3. Every segment from the log start with base below the end offset is
//     recopied, grouped as Kafka's groupSegmentsBySize does (summed log sizes ≤
//     segment.bytes, summed index sizes ≤ segment.index.bytes, offset span ≤
//     2^31-1). The active segment is never recopied by the background cleaner;
//     offline (CompactDir) the last segment is, and keeps its base offset and
//     last offset so appends continue.
//  4. A record is kept when its offset is at or past the end offset, or it has
//     a key whose mapped offset is not later than its own and it has a value or
//     is a tombstone still inside its delete horizon. Unkeyed records below the
//     end offset are dropped (Kafka counts them as invalid).
//  5. A batch whose records all stay and that needs no delete horizon is copied
//     byte for byte. Otherwise it is re-encoded with the same codec and header
//     fields: base offset and lastOffsetDelta, producer id/epoch/base sequence,
//     partition leader epoch, timestamp type (record.Batch.Options). A batch
//     that loses every record is dropped, except where Kafka's cleaner keeps it
//     empty (RETAIN_EMPTY): the last batch of an active producer (its epoch
//     and last sequence; active = its last batch is within
//     producer.id.expiration.ms of now, strata keeping no producer state) and
//     the last batch of the round (next offset = first uncleanable offset, so
//     the log end never moves back); and, strata's own, the last batch of a
//     group whose last segment keeps nothing else, so the cleaned segment's
//     offsets reach into that segment and the loader's swap roll-forward
//     removes every segment it replaced. A kept empty batch is Kafka's bare
//     61-byte header (writeEmptyHeader): uncompressed whatever its codec, no
//     records, first timestamp -1, its max timestamp, no delete horizon.
//  6. Tombstones (KIP-534): the first pass that keeps a tombstone in a batch
//     without a delete horizon rewrites the batch with attribute bit 6 set and
//     base timestamp = now + delete.retention.ms (record timestamp deltas taken
//     from it); later passes drop the batch's tombstones once now ≥ horizon.
//     delete.retention.ms=0 means 0 (the next pass drops them), as every
//     LogConfig value does: Kafka's defaults come from DefaultLogConfig and
//     DefaultCompactOptions, never from a zero.
//  7. Each group's output is written as <base>.log/.index/.timeindex.cleaned,
//     fsynced, and swapped in with segment.Log.ReplaceSegments (.cleaned →
//     .swap in descending order, one copy-on-write list store, old files →
//     .deleted and removed after file.delete.delay.ms, .swap → final names,
//     directory fsync). segment.Open rolls a crashed swap back or forward.
//  8. After the last group, cleaner-offset-checkpoint[partition] = end offset,
//     written durably through internal/checkpoint.
//
// # Transactions
//
// The pass reads the aborted-transaction indexes (.txnindex) of the log from
// its first recopied segment on, and follows the transactions through the
// recopy in offset order, over every group of the pass, as Kafka's
// CleanedTransactionMetadata does:
//
//   - a transactional batch of an aborted transaction (its producer's, base
//     offset between the entry's first offset and its marker) loses every
//     record, wherever it lies in the recopied segments (kept empty only
//     where rule 5 keeps empty batches);
//   - a committed (or still open: past the pass's end, which is at or below
//     the last stable offset) transactional batch is filtered like any other;
//   - an abort marker whose transaction had records in this pass is kept,
//     and its index entry is written to the cleaned segment's
//     <base>.txnindex.cleaned (swapped in with the segment); a commit marker
//     is kept when its transaction had a batch in this pass;
//   - a marker whose transaction has nothing left (or an emptied one) goes
//     in two passes: the first stamps its batch with the delete horizon
//     (now plus delete.retention.ms; its index entry, which filters nothing
//     any more, is dropped); a pass at or after the horizon removes it, or keeps
//     it as an empty header when rule 5 says so (its producer's last batch).
//
// A read_committed reader thus ends with the same value per key before and
// after a pass, and a read_uncommitted one loses exactly the aborted
// records (besides what compaction removes).
//
// Legacy v0/v1 entries are neither mapped nor filtered: they are copied
// unchanged (a later v2 value of the same key does not remove them).
//
// # Offset map format
//
// One byte slice of 16-byte slots (Kafka's SkimpyOffsetMap slot is 24: MD5
// plus an int64), so the same log.cleaner.dedupe.buffer.size holds 1.5 times
// as many keys. Unlike Kafka's, the slice starts at 1 MiB and doubles
// (rehashing from the stored fingerprints) whenever the load passes the load
// factor, up to the buffer size: a pass over few keys touches little memory
// and stays in cache. A slot is
//
//	bytes 0-7   h1 = xxhash64(key, seed 0), little endian
//	bytes 8-11  high 32 bits of h2 = xxhash64(key, seed 0x9e3779b97f4a7c15)
//	bytes 12-15 offset - base + 1 (uint32; 0 marks an empty slot)
//
// The home slot is ⌊h1 × slots / 2^64⌋, with linear probing; a key is found
// when all 96 fingerprint bits match. The map accepts slots × load factor
// keys (log.cleaner.io.buffer.load.factor, 0.9); a pass's offsets span less
// than 2^31 so relative offsets fit.
//
// Two keys sharing all 96 bits are treated as one key, as MD5 collisions are
// in Kafka: the older one's records would be dropped. By the birthday bound the
// probability that any two of n keys in one pass collide is at most
// n²/2^97; for n = 100 million keys that is 10^16/1.58·10^29 ≈ 6.3·10^-14,
// below 10^-12. (A 128 MiB map holds about 7.5 million keys per pass.)
//
// # Retention
//
// Manager.CheckRetention, run every log.retention.check.interval.ms, applies
// segment.Log.ApplyRetention to every log whose cleanup.policy includes
// delete: segments wholly below the log start offset, then retention.bytes,
// then retention.ms by each segment's largest timestamp; never the active
// segment (the log rolls first when everything is deletable). Files go
// through .deleted and file.delete.delay.ms so readers holding an old snapshot
// keep reading. Future timestamps: see segment.Log.ApplyRetention (a segment's
// timestamp is capped at its file's modification time, so a record stamped far
// in the future cannot pin retention forever).
package cleaner
