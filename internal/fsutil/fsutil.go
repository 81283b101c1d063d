// Package fsutil holds small durable-file helpers built on vfs.
//
// WriteFileAtomic is the durable atomic replace Kafka uses for checkpoint files:
// write <path>.tmp, fsync it, close it, rename it over path, fsync the parent
// directory. After a crash at any point the file holds either its old or its new
// content (a stray <path>.tmp may be left behind; the next write replaces it).
package fsutil

import (
	"fmt"
	"path/filepath"

	"github.com/stratalog/strata/internal/vfs"
)

// TmpSuffix is appended to a file's name while WriteFileAtomic writes it.
const TmpSuffix = ".tmp"

// WriteFileAtomic durably replaces path's content with data (see the package
// doc). On error before the rename the temporary file is removed and path is
// untouched; an error from the final directory sync means the new content is in
// place but may not survive a crash.
func WriteFileAtomic(fsys vfs.FS, path string, data []byte) (err error) {
	tmp := path + TmpSuffix
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAtomicWrite, err)
	}
	renamed := false
	defer func() {
		if err != nil && !renamed {
			if f != nil {
				_ = f.Close()
			}
			_ = fsys.Remove(tmp)
			err = fmt.Errorf("%w: %w", ErrAtomicWrite, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	err = f.Close()
	f = nil
	if err != nil {
		return err
	}
	if err = fsys.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	if err = fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%w: %w", ErrAtomicWrite, err)
	}
	return nil
}
