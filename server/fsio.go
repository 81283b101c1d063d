package server

import (
	"io"
	"path/filepath"

	"github.com/stratalog/strata/internal/vfs"
)

// readFile reads a whole file through fsys.
func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// subdirs lists the names of dir's subdirectories (none when dir cannot be
// read).
func subdirs(fsys vfs.FS, dir string) []string {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if st, err := fsys.Stat(filepath.Join(dir, n)); err == nil && st.IsDir() {
			out = append(out, n)
		}
	}
	return out
}
