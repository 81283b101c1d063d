package segment

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// File name suffixes, Kafka's.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	TxnIndexSuffix  = ".txnindex"
	SnapshotSuffix  = ".snapshot"
	DeletedSuffix   = ".deleted"
	CleanedSuffix   = ".cleaned"
	SwapSuffix      = ".swap"
)

// FileName is the 20-digit zero-padded base offset followed by suffix.
func FileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// FilePath joins dir and FileName(base, suffix).
func FilePath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, FileName(base, suffix))
}

// ParseFileName splits a segment file name such as "00000000000000001234.log" or
// "00000000000000001234.index.swap" into its base offset and suffix (".log",
// ".index.swap"). ok is false for names that are not segment files.
func ParseFileName(name string) (base int64, suffix string, ok bool) {
	if len(name) < 21 || name[20] != '.' {
		return 0, "", false
	}
	for i := 0; i < 20; i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, "", false
		}
	}
	b, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return b, name[20:], true
}

// HasSuffix reports whether a parsed suffix is kind with an optional temporary
// suffix, e.g. HasSuffix(".log.swap", LogSuffix) is true.
func baseSuffix(suffix string) string {
	for _, t := range []string{DeletedSuffix, CleanedSuffix, SwapSuffix} {
		if strings.HasSuffix(suffix, t) {
			return strings.TrimSuffix(suffix, t)
		}
	}
	return suffix
}
