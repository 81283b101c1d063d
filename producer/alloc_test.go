package producer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestFileBlocks: ids are handed out in blocks recorded in Kafka's JSON
// before use; a restarted allocator never hands out an id again; ids above
// the newest block were never issued.
func TestFileBlocks(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := NewBlocks(NewFileBlocks(vfs.OS, dir, 7))
	seen := map[int64]bool{}
	for i := 0; i < BlockSize+5; i++ {
		id, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
	data, err := os.ReadFile(filepath.Join(dir, BlockFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"broker":7,"block_start":"1000","block_end":"1999"}`; string(data) != want {
		t.Fatalf("block file %s, want %s", data, want)
	}
	b := NewBlocks(NewFileBlocks(vfs.OS, dir, 7)) // a restart
	id, err := b.Next(ctx)
	if err != nil || id != 2000 {
		t.Fatalf("after restart: id %d, %v; want 2000", id, err)
	}
	for _, c := range []struct {
		id   int64
		want bool
	}{{-1, false}, {0, true}, {2999, true}, {3000, false}} {
		if ok, err := b.MayBeIssued(ctx, c.id); err != nil || ok != c.want {
			t.Errorf("MayBeIssued(%d) = %v, %v; want %v", c.id, ok, err, c.want)
		}
	}
}

// TestFileBlocksCorrupt: a damaged block file fails allocation with a clear
// error instead of starting again at 0 (which would reissue ids).
func TestFileBlocksCorrupt(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{`{"version":1,"broker":1,"block_start":"5","block_end":"`, `garbage`,
		`{"version":1,"broker":1,"block_start":"9","block_end":"3"}`} {
		if err := os.WriteFile(filepath.Join(dir, BlockFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := NewBlocks(NewFileBlocks(vfs.OS, dir, 1)).Next(context.Background())
		if !errors.Is(err, ErrBadBlock) {
			t.Errorf("%q: err %v, want ErrBadBlock", bad, err)
		}
	}
}
