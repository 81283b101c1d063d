package segment

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// TestMissingIndexWarningNamesTheFile: when one index file of a trusted
// segment is missing, the rebuild warning names that file, not its sibling.
func TestMissingIndexWarningNamesTheFile(t *testing.T) {
	for _, suf := range []string{TimeIndexSuffix, IndexSuffix} {
		t.Run(strings.TrimPrefix(suf, "."), func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{FS: vfs.OS, Logger: quiet}
			l, err := Open(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(makeBatch(t, 1, 3, 1000, record.CodecNone, 10)); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			gone := filepath.Join(dir, FileName(0, suf))
			if err := vfs.OS.Remove(gone); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			l, err = Open(dir, &Options{FS: vfs.OS, CleanShutdown: true, RecoveryPoint: 3,
				Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			line := logged.String()
			if !strings.Contains(line, "rebuilding segment indexes") || !strings.Contains(line, gone+": ") {
				t.Fatalf("the warning does not name %s:\n%s", gone, line)
			}
			other := IndexSuffix
			if suf == IndexSuffix {
				other = TimeIndexSuffix
			}
			if strings.Contains(line, FileName(0, other)) {
				t.Fatalf("the warning names the present %s:\n%s", other, line)
			}
		})
	}
}
