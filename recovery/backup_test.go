package recovery

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// TestBackupSaveAndCheck: Save keeps exactly the range cut, lists it in a
// durable MANIFEST.json, and fails cleanly (nothing listed, no stray copy)
// when the range does not end at the file's size or the manifest cannot be
// written; Check tells a matching cut from a mismatched one; a directory
// holding an earlier backup is refused.
func TestBackupSaveAndCheck(t *testing.T) {
	mem := vfs.NewMem()
	failRename := false
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if failRename && op.Kind == vfs.OpRename && strings.HasSuffix(op.NewPath, ManifestFile) {
			return errors.New("disk full")
		}
		return nil
	}))
	if err := mem.MkdirAll("/d/t-0", 0o755); err != nil {
		t.Fatal(err)
	}
	src := "/d/t-0/00000000000000000000.log"
	writeFile(t, mem, src, []byte("0123456789abcdef"))
	b, err := NewBackup(fsys, "/bk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Save(src, 4, 5, "tail"); !errors.Is(err, ErrBackup) {
		t.Fatalf("a range not ending at the file's size: %v", err)
	}
	failRename = true
	if _, err := b.Save(src, 10, 6, "tail"); !errors.Is(err, ErrBackup) || len(b.Manifest().Files) != 0 {
		t.Fatalf("manifest write failure: %v, %d files listed", err, len(b.Manifest().Files))
	}
	if _, err := mem.Stat("/bk/t-0/00000000000000000000.log@10"); err == nil {
		t.Fatal("an unlisted copy was left behind")
	}
	failRename = false
	saved, err := b.Save(src, 10, 6, "tail")
	if err != nil || saved != "/bk/t-0/00000000000000000000.log@10" || string(readFile(t, mem, saved)) != "abcdef" {
		t.Fatalf("save: %q %v", saved, err)
	}
	m := readManifest(t, mem, "/bk")
	if len(m.Files) != 1 || m.Files[0].Length != 6 || m.Files[0].OldSize != 16 {
		t.Fatalf("manifest %+v", m)
	}
	cut := segment.Cut{File: src, Position: 10, Bytes: 6}
	if err := b.Check([]segment.Cut{cut}); err == nil {
		t.Fatal("Check passed before the file was cut")
	}
	writeFile(t, mem, src, []byte("0123456789"))
	if err := b.Check([]segment.Cut{cut}); err != nil {
		t.Fatal(err)
	}
	cut.Position = 9
	if err := b.Check([]segment.Cut{cut}); err == nil {
		t.Fatal("Check passed a cut the backup does not hold")
	}
	if _, err := NewBackup(fsys, "/bk"); !errors.Is(err, ErrBackup) {
		t.Fatalf("a directory with a manifest: %v", err)
	}
	names, _ := mem.ReadDir(filepath.Join("/bk", "t-0"))
	if !slices.Equal(names, []string{"00000000000000000000.log@10"}) {
		t.Fatalf("backup holds %v", names)
	}
}
