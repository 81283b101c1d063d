package checkpoint

import (
	"fmt"
	"io"
	"strconv"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
)

// File names of Kafka's checkpoints.
const (
	RecoveryPointFile     = "recovery-point-offset-checkpoint"
	LogStartOffsetFile    = "log-start-offset-checkpoint"
	ReplicationOffsetFile = "replication-offset-checkpoint"
	CleanerOffsetFile     = "cleaner-offset-checkpoint"
	LeaderEpochFile       = "leader-epoch-checkpoint"
)

// Versions of the formats this package reads and writes.
const (
	OffsetsVersion = 0
	EpochsVersion  = 0
)

// lines splits data like Java's BufferedReader.readLine: a line ends at \n, \r or
// \r\n; text after the last terminator is a last line.
func lines(data []byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			out = append(out, string(data[start:i]))
			start = i + 1
		case '\r':
			out = append(out, string(data[start:i]))
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(data) {
		out = append(out, string(data[start:]))
	}
	return out
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// fields splits s like Java's s.split("\\s+"): separators are runs of whitespace, a
// leading separator gives an empty first field, trailing empty fields are dropped.
func fields(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		if !isSpace(s[i]) {
			i++
			continue
		}
		out = append(out, s[start:i])
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		start = i
	}
	out = append(out, s[start:])
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// parse checks the header and hands each entry line's fields to entry.
func parse(data []byte, version, nfields int, what string, entry func(line int, f []string) error) error {
	ls := lines(data)
	if len(ls) == 0 {
		return nil
	}
	v, err := strconv.ParseInt(ls[0], 10, 32)
	if err != nil {
		return malformed(1, "version %s is not a number", excerpt(ls[0]))
	}
	if v != int64(version) {
		return malformed(1, "unsupported version %d, expected %d", v, version)
	}
	if len(ls) < 2 {
		return malformed(0, "missing entry count")
	}
	n, err := strconv.ParseInt(ls[1], 10, 32)
	if err != nil || n < 0 {
		return malformed(2, "entry count %s is not a non-negative number", excerpt(ls[1]))
	}
	for i := range int(n) {
		if 2+i >= len(ls) {
			return malformed(0, "expected %d entries, found %d", n, i)
		}
		f := fields(ls[2+i])
		if len(f) != nfields {
			return malformed(3+i, "expected %s, found %d fields in %s", what, len(f), excerpt(ls[2+i]))
		}
		if err := entry(3+i, f); err != nil {
			return err
		}
	}
	if len(ls) > 2+int(n) {
		return malformed(3+int(n), "expected %d entries, found more: %s", n, excerpt(ls[2+int(n)]))
	}
	return nil
}

// maxExcerpt is how many bytes of a bad line an error quotes.
const maxExcerpt = 24

// excerpt quotes at most maxExcerpt bytes of s, escaped (Go syntax), and says
// how many more there were: a garbage file must not flood the log line that
// reports it.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxExcerpt]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

func parseInt(line int, name, s string, bits int) (int64, error) {
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, malformed(line, "%s %s is not a %d-bit number", name, excerpt(s), bits)
	}
	return v, nil
}

func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr // reported, not swallowed (the caller treats the file as unreadable)
	}
	return b, err
}

func read[T any](fsys vfs.FS, path string, parse func([]byte) (T, error)) (T, error) {
	data, err := readFile(fsys, path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(data)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func write(fsys vfs.FS, path string, data []byte, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return fsutil.WriteFileAtomic(fsys, path, data)
}
