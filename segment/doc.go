// Package segment implements Kafka's partition log: a directory of segments, each
// a `%020d.log` file of record batches (magic 2 written; v0/v1 read) named after
// its base offset, with a sparse offset index (`.index`) and time index
// (`.timeindex`) beside it, byte-compatible with Apache Kafka.
//
// # Log
//
// A Log appends to its last (active) segment and rolls to a new one on
// segment.bytes, segment.ms, a full index, or an offset that would not fit the
// index's 32-bit relative offsets. Append assigns offsets by patching each
// batch's base offset in place (the CRC does not cover it); AppendAssigned keeps
// offsets already assigned (replicas, copies). Appends write the caller's bytes
// with one positional write, or one copy into a mapping of a preallocated
// segment (below), and allocate nothing.
//
// Readers never take the writer's lock: the segment list is an immutable slice
// replaced copy-on-write (an atomic pointer), and a reader reference-counts the
// segment it reads. Log.Read returns a Region (file, position, length) from the
// batch holding the offset, at least one whole batch, so the broker can send it
// with sendfile. Deleted segments are renamed `.deleted` at once and removed after
// file.delete.delay.ms; a reader holding one keeps its open file until Release.
//
// # Durability
//
// As in Kafka, appends go to the page cache and nothing is fsynced unless
// flush.messages or flush.ms say so (or the caller calls Flush/FlushTo). Flushes
// are grouped: concurrent callers share one fdatasync of the log files, and
// FlushedOffset (the recovery point) only moves after it. HighWatermark, what
// ReadToHighWatermark and Changed serve consumers, is the end of the appends
// that have returned, so under flush.messages it moves only after the fsync:
// an append that waits for one holds back every later append (they wait for
// a flush too, whatever flush.messages says meanwhile), the raise after the
// fsync never passes the recovery point, and a truncation only lowers it.
// Indexes are synced when a segment rolls; recovery rebuilds them above the
// recovery point.
//
// The directory fsync that makes a roll's new files, or a retention delete's
// renames, durable runs behind the writer lock, as Kafka syncs the directory
// after a roll in the background: appends to the new segment go on
// meanwhile. Nothing that depends on those names moves before it has
// returned: FlushTo completes it before it advances the recovery point (so
// acknowledgements under flush.messages, checkpoints and a clean shutdown
// come after it), and the recovery point jumps over deleted segments only
// after it. Truncation, which replication needs rarely, syncs the cut
// segment and the directory before it returns.
//
// # I/O errors
//
// Kafka's log-dir failure model (KIP-112), with undo where it is certain. Every
// error of a write, fsync, truncate, rename, remove or directory sync is
// either undone completely, the log left exactly as before the operation, or
// it takes the log's directory offline: the Health shared by the logs of the
// directory fails (Log.Err, wrapping ErrOffline and the cause), and from then
// on every log in it refuses appends, flushes, rolls, truncations, deletions
// and reads; neither the high watermark nor the recovery point moves again,
// nothing more is written (Close only closes the files), and whoever owns the
// directory (the recovery package's DataDir) writes no checkpoint and no
// clean-shutdown marker for it and reports it (Kafka: KAFKA_STORAGE_ERROR,
// the broker goes on with its other directories). The next start recovers
// the directory from its last recovery point, cutting what the failure left.
// Per operation:
//
//   - Append: a failed preallocation, pwrite, zero-fill or index write is
//     undone: the index entries it added are withdrawn, the .log file is cut
//     back to the appended data (a preallocated reserve goes with it and is
//     allocated again), the max timestamp, roll time and index spacing
//     restored; nothing was published. The append returns the error and the
//     log stays online. If the undo fails, or the file turns out shorter than
//     the data already in it (cut behind the log's back), the directory goes
//     offline; so it does after a failed write through a memory mapping (the
//     append mapping or a memory-mapped index: a fault, whose effect on the
//     file cannot be known).
//   - Roll: the new segment is created before the old one is sealed; a failed
//     creation removes what it created (the old segment stays active) and the
//     append fails; a failed removal or a failed seal takes the directory
//     offline.
//   - Any fsync (flush, the roll's background flush, the directory sync,
//     Close): offline. A failed fsync is never retried: Linux may have dropped
//     the dirty pages and report success to the next one (PostgreSQL's
//     "fsyncgate", 2018), so the records it covered could be served and
//     checkpointed without being on disk.
//   - TruncateTo, retention and prefix deletes (the renames to .deleted and
//     the removal of .deleted files), ReplaceSegments once its renames have
//     begun: offline; Open repairs the files.
//   - Cleaned segments (CreateCleaned, Cleaned.Append, Seal) are scratch
//     files outside the log: their errors are returned and Abort removes
//     them. Their aborted-transaction entries (Cleaned.AddAbortedTxn, in
//     marker order) are written and fsynced by Seal as
//     <base>.txnindex.cleaned, renamed with the other files.
//   - Reads and closes report their error and change nothing.
//
// Where we differ from Kafka: Kafka takes the directory offline on every
// I/O error, reads included; strata undoes a failed append or segment
// creation instead (a full disk costs the append, not the directory), and a
// read error fails only that read.
//
// With Options.Preallocate (Kafka's preallocate / log.preallocate) the active
// segment's file is fallocated ahead of the writer, so an fdatasync after an
// append inside the reserve need not commit a new file size. Reads and rolls use
// the logical size (Segment.Size); the file is trimmed to it on roll and clean
// close. A crash leaves the reserve as a zero-filled tail, which loading cuts and
// reports as LoadReport.BytesPreallocatedTrimmed, not as a truncation.
//
// A preallocated segment on the real filesystem also takes small appends
// (under Options.MapAppendsBelow, 4 KiB by default; under 1 KiB while the log
// is being flushed, as fdatasync must clean each mapped page) by copying them into a
// shared writable mapping of its reserve: the same page-cache pages a pwrite
// fills, so readers, fdatasync and a process crash see no difference, without
// a system call per append. When fsyncs come every few appends the segment
// unmaps and writes with pwrite, because each fsync would make the next mapped
// write fault. A fault in the mapping (an I/O error, a file cut by another
// process) fails the append with an error (debug.SetPanicOnFault) and takes
// the directory offline.
// While such a segment is being flushed, the writer also overwrites the
// reserve just ahead of itself with zeros, so that later fdatasyncs write data
// into blocks already written instead of converting unwritten extents.
//
// # Loading
//
// Open follows Kafka's LogLoader: leftover .deleted and .cleaned files are
// removed, .swap files finished or dropped. Two rules decide what a damaged
// segment costs:
//
//   - Below the recovery point (every segment after a clean shutdown) data was
//     flushed and is trusted: each segment's tail is walked and its indexes are
//     checked against the log, and a segment that fails is rebuilt by a scan.
//     If the scan finds a torn or garbage tail, only that segment's tail is
//     cut (logged at ERROR with the offsets and bytes lost) and the later
//     segments are kept, leaving a gap in the offsets, as Kafka's rebuild of a
//     segment failing its sanity check does. Data below the recovery point is
//     never removed at start.
//   - From the segment holding the recovery point on (unflushed after a crash)
//     every batch is scanned (framing, magic, size, CRC, offset order), the
//     indexes are rebuilt, the log is cut at the first invalid batch and every
//     later segment is removed, Kafka's rule.
//
// Options.SaveCut sees every byte before it is cut (recovery keeps a backup).
//
// # Producer state and transactions
//
// Every batch the log stores updates its producer state (package producer,
// Kafka's ProducerStateManager): Append and AppendAssigned alike, so a
// follower, and a log rebuilt by Open, hold the same state as the leader. A
// leader's Append checks its batches first: a producer's retry of one of its
// last five batches is answered with the original offsets
// (AppendInfo.Duplicate) and not stored; a sequence gap, an older epoch, a
// sequence from a producer the partition does not know (expired after
// producer.id.expiration.ms, or never issued) and a transaction marker from a
// fenced producer or coordinator epoch are refused with ErrProducer wrapping
// producer's error, the log unchanged. A data batch without a sequence (a
// coordinator's) and a control batch (a transaction marker, as the
// transaction coordinator's WriteTxnMarkers appends it) have only their
// epochs checked.
//
// The state is snapshotted to %020d.snapshot (Kafka's version 1, CRC-32C) at
// every roll, named after the new segment's base, without an fsync, and on
// Close at the log end, durably; a snapshot that cannot be written takes the
// log offline (as Kafka takes the log dir offline), the roll's append
// refused. A snapshot is no segment file: rolling a cleaner's swap forward
// leaves it. Open removes snapshots above the log end, loads the newest
// that passes its checks (a damaged one is logged, reported in
// LoadReport.SnapshotsIgnored, removed, and the next older tried) and
// replays the batches after it; with no snapshot at all after a clean
// shutdown (a log written before snapshots) only the last two segments are
// replayed, as Kafka does on upgrade. TruncateTo rebuilds the state the same
// way; retention removes the snapshots below the new first segment.
//
// An abort marker adds its transaction to the .txnindex of the segment
// holding the marker (Kafka's 34-byte AbortedTxn entries) and to that
// segment's copy in memory (AbortedTxns, for read_committed fetches). The
// last stable offset (LastStableOffset, FirstUnstableOffset) is the first
// offset of the oldest open transaction, capped by the high watermark;
// ReadStable reads below it. Open reads and checks each .txnindex (whole
// version-0 entries inside their segment, in marker order); the entries of
// the replayed range are recomputed and the file rewritten where it
// disagrees, and a damaged file below that range is rebuilt from a replay of
// the whole log (LoadReport.TxnIndexesRebuilt). In a segment Open cut, the
// entries past the cut are dropped (Kafka's TransactionIndex.truncateTo);
// elsewhere such an entry is damage.
//
// Open owns these files (it needs them to agree with the log to load the
// state): every snapshot it removes, first shown to Options.SaveCut (kind
// "snapshot"), and every .txnindex it rewrites is listed in
// LoadReport.SideFilesTrimmed; Inspect lists the same without changing
// anything. A snapshot or .txnindex it cannot remove or rewrite fails Open.
package segment
