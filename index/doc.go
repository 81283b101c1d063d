// Package index implements Kafka's offset index (.index) and time index
// (.timeindex) files, byte for byte.
//
// # Byte layout
//
// Both files are a bare array of fixed-size big-endian entries: no header, no
// checksum, no count, no end marker.
//
//	.index      8 bytes per entry   int32 relativeOffset | int32 position
//	.timeindex 12 bytes per entry   int64 timestamp      | int32 relativeOffset
//
// relativeOffset is offset - baseOffset of the segment (the number in the file name)
// and must lie in [0, MaxInt32]. An offset-index entry (O, P) says the batch that
// starts at byte P of the .log file ends at offset O; the index is sparse (one
// entry per index.interval.bytes of log). A time-index entry (T, O) says the largest
// timestamp seen up to and including offset O is T.
//
// # Invariants
//
//   - Offset index: relative offsets and positions strictly increasing; positions
//     below the log size. Append enforces both.
//   - Time index: timestamps strictly increasing (Append is a no-op unless the
//     timestamp is larger than the last one), offsets non-decreasing; offsets below
//     the log end offset. The last slot is reserved for AppendFinal (Kafka's
//     skipFullCheck), so IsFull is Entries >= MaxEntries-1.
//   - A new file is preallocated (sparse) to roundDown(maxBytes, entrySize) and has
//     no entries. An existing file is trusted as Kafka trusts it: entries =
//     length/entrySize. So a file left untrimmed by a crash reads as "full of zero
//     entries"; Check detects that (and disorder, and positions past the log end)
//     and returns an ErrCorruptIndex the caller answers by rebuilding (Reset, then
//     Append from the log). SanityCheck is Kafka's weaker check. A length that is
//     not a multiple of the entry size is corrupt at open. Bad bytes never panic.
//   - Trim (on roll and Close) sets the file length to the valid entries; Resize
//     sets it back to the maximum for an active segment.
//
// # Memory mapping and the fallback
//
// When the vfs file is an operating-system file (vfs.AsOSFile), the index is mapped
// MAP_SHARED once at open with length max(file length, roundDown(maxBytes,
// entrySize)); a read-only index maps only the file length. Mapping past the end of
// the file is allowed on Linux (mmap-go's MapRegion passes the length to mmap(2)
// unchanged); touching a page wholly past EOF would fault, but the index only reads
// slots below the entry count and writes the next slot, and those always lie inside
// the file: Trim never cuts below the entries, and Append grows a trimmed file back
// with ftruncate before writing. The mapping is never replaced while the index is
// open (Resize changes only the file length and refuses to go past the mapped
// length), so readers need no lock; it is unmapped in Close.
//
// Files without a descriptor (the in-memory vfs) use the fallback: entries are read
// into memory at open, lookups read that copy, and Append writes the entry into the
// copy and through to the file with WriteAt. The copy grows by reallocation; the
// new slice is published atomically and old ones are never written again.
//
// Both backends share every line of logic above the byte buffer; the tests run one
// conformance suite over both.
//
// # Concurrency
//
// One writer (the segment's appender) calls Append, AppendFinal, Trim, Resize,
// TruncateTo, Reset, Sync and Close; these are not safe for concurrent use with each
// other. Lookup, LookupPosition, Entry, Entries, LastOffset, LastEntry, MaxEntries,
// IsFull, SizeBytes and Check may run from any number of goroutines concurrently with
// the writer's Append, AppendFinal, Trim, Resize and Sync, without locks: the entry
// count is an atomic published after the entry bytes are written, so a reader only
// ever sees complete entries. Callers must ensure that:
//
//   - no reader runs during or after Close (the segment layer's reference count
//     guarantees it; Close unmaps the file);
//   - TruncateTo and Reset do not run concurrently with readers (a reader could see
//     an entry being dropped or zeroed; with mmap it never faults);
//   - nobody else truncates the file while it is mapped.
//
// # Durability
//
// Sync is File.Sync (fdatasync). On Linux the pages written through a shared
// mapping are the file's page-cache pages, so fdatasync writes them; no msync is
// needed. Going through the vfs keeps error injection working; an injected
// file also sees every entry written through the mapping (vfs.OpMapWrite)
// before it is published, and a failed one is not.
//
// # Lookups
//
// Lookups use Kafka's warm-section search (AbstractIndex.indexSlotRangeFor): when
// the target lies beyond the first of the last 8192 bytes of entries, only that
// tail is binary-searched, so lookups near the end touch the same few pages. A
// target in the cold part is first narrowed by one interpolation guess and probes
// 32 and 64 slots from it (offsets, positions and timestamps grow roughly linearly
// with the slot, so this usually leaves a window of a few hundred bytes), and then
// binary-searched as Kafka does. The answers are Kafka's on any valid index (keys
// are unique there); the guess only saves most of the cache and TLB misses of a
// 20-step search over a full 10 MiB index, and on skewed keys costs three extra
// probes. On a corrupt
// (unsorted) index every search still returns a slot in range. Keys are read
// big-endian straight from the mapped bytes; lookups and appends do not allocate.
package index
