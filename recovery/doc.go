// Package recovery opens a Kafka data directory (one entry of log.dirs) the way
// Kafka's LogManager does at broker start, and closes it the way a clean
// shutdown does.
//
// OpenDataDir, in order:
//
//  1. Locks the directory (<dir>/.lock, an OFD lock that also keeps a Kafka
//     broker out) on the OS filesystem.
//  2. Notes whether .kafka_cleanshutdown exists and deletes it durably (remove,
//     then fsync the directory) before loading anything, so a crash while loading
//     makes the next start unclean (KAFKA-10471).
//  3. Reads recovery-point-offset-checkpoint and log-start-offset-checkpoint. A
//     missing file is empty. An unreadable or malformed one is logged at ERROR
//     (quoting at most a short prefix of the bad line), recorded in the report
//     and treated as empty: every recovery point is then 0, as in Kafka, and
//     every partition is scanned from its first segment even after a clean
//     shutdown (Report.FullScan) — Kafka trusts the marker and scans nothing
//     then, but a checkpoint garbled after a clean shutdown means the directory
//     was damaged since, and a scan is what finds the rest of the damage. An
//     unreadable log-start checkpoint starts each log at its first segment's
//     base, as in Kafka, and scans nothing.
//  4. Loads every partition directory (<topic>-<partition>; directories ending in
//     -delete, -future or -stray and other names are skipped) in parallel with
//     num.recovery.threads.per.data.dir workers (default 2, Kafka 4.0), each with
//     segment.OpenWithReport given its recovery point (0 when the partition is
//     missing from the checkpoint: a full scan), log start offset and whether the
//     shutdown was clean. Per partition that removes .deleted/.cleaned leftovers,
//     finishes or drops .swap files and loads the segments by the two rules
//     below (What damage costs), saving every byte it cuts first.
//  5. Trims what lies past each log's end, as Kafka's loader does: producer
//     snapshots named above it are removed (saved in the backup first, kind
//     "snapshot") and aborted transactions whose lastOffset is at or past it
//     dropped from the .txnindex files by segment.Open itself, which owns
//     those files (see the segment package); after an unclean shutdown
//     leader-epoch-checkpoint entries starting at or past it are dropped
//     here (after a clean one the files agree with the logs by
//     construction, and the walk is skipped to keep a clean start fast).
//     Each change is listed in PartitionReport.SideFilesTrimmed.
//
// # What damage costs
//
// Below the recovery point (every segment after a clean shutdown) the data was
// flushed and is trusted: tails are walked and indexes checked against the
// log; a segment that fails is rebuilt by a scan, and a torn or garbage tail
// found there is cut from that segment alone, logged at ERROR with the offsets
// and bytes lost. The later segments are kept and the log has a gap in its
// offsets: data below the recovery point is never removed at start (Kafka too
// keeps the later segments when it rebuilds a segment failing its sanity
// check).
//
// From the segment holding the recovery point on (data unflushed at a crash)
// every entry is scanned, the log is cut at the first invalid one and the later
// segments are removed: Kafka's rule.
//
// Every byte cut, tails and removed segments alike, is first saved in the
// partition's recovery-backup/<UTC time of the start>/ directory
// (BackupDirName; or in Options.BackupDir), in the layout of Backup, the one
// strata recover --backup writes, so it can be put back with dd or cp. A
// directory in the partition directory, because Kafka refuses to start on a
// log dir holding a directory that is not a partition. If the bytes cannot be
// saved nothing is cut and the partition fails to load.
//
// # Offline directories
//
// Every log of a DataDir shares one segment.Health (Kafka's
// LogDirFailureChannel for the directory): an I/O error a log cannot undo, or
// a failed checkpoint write, takes the whole directory offline. Its logs then
// refuse appends, flushes and reads (segment.ErrOffline), no checkpoint is
// written and Close writes no clean-shutdown marker, so the next start
// recovers it from its last checkpoint (strata verify / recover find and cut
// what the failure left first, if asked). The failure is logged once with
// its cause and reported to Options.OnOffline (see offline.go).
//
// # Shutdown
//
// DataDir.Close (Shutdown) flushes and closes every log, writes both checkpoints
// (recovery point = the flushed offset; log start only where it is above the
// first segment's base), writes the clean-shutdown marker
// ({"version":0,"brokerEpoch":N}) and unlocks. WriteCheckpoints is the periodic
// checkpoint (log.flush.offset.checkpoint.interval.ms).
//
// Inspect does the same checks read-only, for strata recover --dry-run: it opens
// nothing for writing, and reports what OpenDataDir would cut, rebuild, remove
// and rename.
//
// Aborted transactions are dropped by lastOffset, as Kafka's
// TransactionIndex.truncateTo does: an aborted transaction whose abort marker is
// cut off is no longer known to be aborted (every entry whose firstOffset is at
// or past the end is dropped too, since firstOffset <= lastOffset).
//
// Where we differ from Kafka: what is cut is saved first (above); segments
// after a cut are removed at once rather than renamed .deleted for
// asynchronous deletion; a trusted segment's tail is walked at load (Kafka
// checks only its indexes), so a torn tail below the recovery point is found
// and cut at start rather than served; producer state is not rebuilt
// (the broker owns it), so no producer snapshot is taken after recovery; index
// files are rebuilt in place; a partition that fails to load with an I/O error
// fails OpenDataDir instead of taking the directory offline; the clean-shutdown
// marker is written even for a data directory with no partitions.
package recovery
