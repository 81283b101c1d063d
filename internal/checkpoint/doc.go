// Package checkpoint reads and writes Kafka's checkpoint text files
// (kafka.server.checkpoints.CheckpointFile), byte for byte.
//
// Format:
//
//	<version>\n
//	<entry count>\n
//	<entry>\n ... (one per line, fields separated by whitespace)
//
// Offset checkpoints (version 0) have entries "topic partition offset"; they are
// recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint and cleaner-offset-checkpoint in a log directory.
// Example: "0\n2\nfoo 0 1234\nfoo 1 99\n". A partition directory's
// leader-epoch-checkpoint (version 0) has entries "epoch startOffset".
//
// Reading follows Kafka's reader: lines end in \n, \r\n or \r; an empty file is an
// empty checkpoint; fields split on runs of Java whitespace (space, \t, \n, \v,
// \f, \r), so a line may end in whitespace but not start with it; numbers are
// decimal with an optional sign; a repeated topic-partition keeps its last offset.
// A wrong version, a malformed line, too few or too many lines, or a negative
// partition is an error wrapping ErrMalformed that names the line (a *ParseError)
// and quotes at most 24 bytes of it, escaped, with its length: a garbage file
// must not flood the log line that reports it.
// Offsets and epochs are not range-checked. A missing file is returned as the
// filesystem's fs.ErrNotExist error, so callers can treat it as empty.
//
// Writing produces Kafka's bytes ("\n" line ends, single spaces), offsets sorted by
// topic then partition, epochs in the order given, and replaces the file with a
// durable atomic write (fsutil.WriteFileAtomic: <file>.tmp, fsync, rename, fsync
// of the directory). Topic names must be legal Kafka topic names (1 to 249 of
// [a-zA-Z0-9._-], not "." or ".."): others are refused with ErrInvalidTopic.
package checkpoint
