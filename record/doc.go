// Package record encodes, decodes, validates and iterates Kafka log entries:
// record batches v2 (magic 2) and, read-only, legacy message sets v0/v1. The
// bytes are Kafka's, on disk and on the wire. All integers are big-endian
// unless marked varint (zig-zag LEB128, at most 5 bytes for int32 fields and
// 10 for int64 fields; longer or overflowing encodings are rejected).
//
// # Log entry framing
//
// Every entry of a .log file starts with
//
//	offset int64 | size int32 | ...size bytes...
//
// (LogOverhead = 12 bytes). The magic byte is always at byte 16 of the entry.
// A size below 14 (the v0 minimum) or an unknown magic is corruption; an
// entry running past the end of the data is a torn tail (ErrTruncated).
//
// # Record batch v2 (61-byte header)
//
//	off  size  field
//	0    8     baseOffset            first offset; not covered by the CRC
//	8    4     batchLength           bytes after this field (total - 12)
//	12   4     partitionLeaderEpoch  -1 none; not covered by the CRC
//	16   1     magic                 2
//	17   4     crc                   CRC-32C (Castagnoli) of bytes [21, end)
//	21   2     attributes            see below
//	23   4     lastOffsetDelta       lastOffset = baseOffset + lastOffsetDelta
//	27   8     baseTimestamp         first record's timestamp (-1 if empty);
//	                                 the delete horizon when bit 6 is set
//	35   8     maxTimestamp          max record timestamp, or the append time
//	43   8     producerId            -1 none
//	51   2     producerEpoch         -1 none
//	53   4     baseSequence          -1 none
//	57   4     recordsCount          never compressed
//	61   ...   records               raw, or one compressed stream of them all
//
// Attribute bits: 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), 3
// timestamp type (1 = LogAppendTime), 4 transactional, 5 control batch, 6
// delete horizon set (KIP-534), 7-15 unused.
//
// After compaction a batch may hold fewer records than lastOffsetDelta+1
// (offset deltas have gaps), and an empty batch (count 0, 61 bytes) is legal;
// lastOffsetDelta+1 == count > 0 holds only for batches from producers
// (ValidateProduce).
//
// # Record v2
//
//	length varint          bytes after this field
//	attributes int8        unused, 0
//	timestampDelta varlong timestamp = baseTimestamp + delta
//	                       (maxTimestamp for LogAppendTime batches)
//	offsetDelta varint     offset = baseOffset + delta
//	keyLength varint       -1 = null key
//	key
//	valueLength varint     -1 = null value (a tombstone)
//	value
//	headersCount varint
//	headers: headerKeyLength varint (>= 0) | key (UTF-8) |
//	         headerValueLength varint (-1 = null) | value
//
// Each record's length must match the bytes its fields use, exactly count
// records must fill the (decompressed) records section, and headersCount
// must not exceed the bytes left.
//
// A control batch (bit 5) holds one record whose key is
// "version int16 | type int16" (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE,
// 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS); the
// value of an ABORT or COMMIT marker is "version int16 | coordinatorEpoch
// int32".
//
// # Legacy messages v0/v1
//
//	offset int64 | size int32 | crc uint32 | magic int8 | attributes int8 |
//	[timestamp int64, v1 only] | keyLength int32 | key | valueLength int32 | value
//
// The CRC is CRC-32 (IEEE) from the magic byte to the end. Lengths of -1 mean
// null. Attributes: bits 0-2 codec (zstd not allowed), bit 3 timestamp type
// (v1), bits 4-7 must be 0. A compressed message is a wrapper: null key, the
// value is a compressed inner message set ([offset][size][message]...), and
// the wrapper's offset is the last inner offset. v0 inner offsets are
// absolute; v1 inner offsets are relative (0..n-1) and absolute =
// wrapperOffset - lastInnerRelative + innerRelative (a wrapper offset of 0
// means base 0). Inner messages have the wrapper's magic and are never
// compressed themselves. In v1 with LogAppendTime every inner message takes
// the wrapper's timestamp.
//
// # Compression
//
// In v2 the 61-byte header stays raw and bytes 61..end are one compressed
// stream of all records, so the CRC covers compressed bytes. In v0/v1 the
// wrapper's value is the stream. Stream formats: gzip (RFC 1952), snappy in
// xerial snappy-java framing (magic 0x82 "SNAPPY" 0x00, int32 version 1, int32
// compatible version 1, then [int32 length][raw snappy block] chunks of 32 KiB
// of input; a raw snappy block is also accepted when reading), lz4 frames
// (independent 64 KiB blocks, no checksums; for magic 0 Kafka computed the
// frame header checksum over the magic number too, which DecompressLegacy
// accepts and CompressLegacy reproduces), and zstd frames (v2 only).
// Decompression is capped at MaxDecompressedSize.
//
// Batches from producers are validated as a stream (StreamValidator): the
// records section is decompressed through a 32 KiB window and checked record
// by record, keys, values and header bytes skipped rather than kept, as
// Kafka's LogValidator walks a compressed batch. Its memory is the window
// plus the decoder's, bounded from the stream's headers alone by
// StreamMemory (gzip: the deflate window; snappy: one xerial chunk, or a raw
// block of at most 22 times its encoded size; lz4: two blocks of the largest
// declared block size; zstd: the declared window, at most MaxStreamWindow,
// plus two blocks), whatever the batch expands to.
package record
