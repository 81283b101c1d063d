package recovery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// ManifestFile lists a backup's files (BackupManifest as JSON).
const ManifestFile = "MANIFEST.json"

// BackupDirName is the directory inside a partition directory where broker
// start keeps what it cuts, one <UTC time> subdirectory per start that cut
// something. A partition directory may hold files Kafka does not know but no
// directory of the data directory may (Kafka refuses to start on a log dir
// holding one), hence one per partition.
const BackupDirName = "recovery-backup"

// Backup saves bytes about to be cut from segment files, the layout strata
// recover --backup documents:
//
//	DIR/MANIFEST.json               one entry per saved file (BackupEntry)
//	DIR/<partition-dir>/<file>@<P>  the bytes [P, old end) of <file>: a cut
//	                                tail (kind "tail"), or a whole removed
//	                                segment file (@0; "segment" for the .log,
//	                                "index" for its index files), or a removed
//	                                producer snapshot (@0; "snapshot")
//
// Each saved file is fsynced, its directory too, and MANIFEST.json is
// rewritten durably (atomic replace) after every file, so that once Save
// returns the bytes can be cut. Safe for concurrent use.
type Backup struct {
	fs      vfs.FS
	mu      sync.Mutex
	m       BackupManifest
	created map[string]bool // subdirectories made
}

// BackupManifest is MANIFEST.json.
type BackupManifest struct {
	Dir   string        `json:"dir"`
	Files []BackupEntry `json:"files"`
}

// BackupEntry is one saved file.
type BackupEntry struct {
	// Original is the file the bytes came from; Backup holds them.
	Original string `json:"original"`
	Backup   string `json:"backup"`
	// Position is where in Original the bytes began; Length how many.
	Position int64  `json:"position"`
	Length   int64  `json:"length"`
	SHA256   string `json:"sha256"`
	// Kind: "tail", "segment", "index" or "snapshot" (see Backup).
	Kind string `json:"kind"`
	// OldSize is Original's size before the cut.
	OldSize int64 `json:"old_size"`
}

// NewBackup starts a backup in dir, creating it. A dir that already holds a
// MANIFEST.json is refused: a backup is never mixed with an earlier one.
func NewBackup(fsys vfs.FS, dir string) (*Backup, error) {
	if _, err := fsys.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return nil, fmt.Errorf("%w: %s already holds a backup (%s); give a new directory", ErrBackup, dir, ManifestFile)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	if err := mkdirDurable(fsys, dir); err != nil {
		return nil, err
	}
	return &Backup{fs: fsys, m: BackupManifest{Dir: dir}, created: map[string]bool{dir: true}}, nil
}

// mkdirDurable creates dir and its missing parents, each new entry made
// durable in its parent.
func mkdirDurable(fsys vfs.FS, dir string) error {
	if _, err := fsys.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(fsys, parent); err != nil {
			return err
		}
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrBackup, err)
	}
	if err := fsys.SyncDir(parent); err != nil {
		return fmt.Errorf("%w: sync dir %s: %w", ErrBackup, parent, err)
	}
	return nil
}

// Save copies [pos, pos+n) of file into the backup and records it; the range
// must end at the file's size (it is what a cut drops). It returns the saved
// copy's path.
func (b *Backup) Save(file string, pos, n int64, kind string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, err := b.copy(file, pos, n, kind)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrBackup, file, err)
	}
	b.m.Files = append(b.m.Files, e)
	data, err := json.MarshalIndent(&b.m, "", "  ")
	if err == nil {
		err = fsutil.WriteFileAtomic(b.fs, filepath.Join(b.m.Dir, ManifestFile), append(data, '\n'))
	}
	if err != nil {
		b.m.Files = b.m.Files[:len(b.m.Files)-1]
		_ = b.fs.Remove(e.Backup) // unlisted, it would block a retry (O_EXCL)
		return "", fmt.Errorf("%w: %s: %w", ErrBackup, ManifestFile, err)
	}
	return e.Backup, nil
}

func (b *Backup) copy(file string, pos, n int64, kind string) (BackupEntry, error) {
	var e BackupEntry
	f, err := b.fs.Open(file)
	if err != nil {
		return e, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return e, err
	}
	if pos < 0 || n < 0 || pos+n != st.Size() {
		return e, fmt.Errorf("the cut [%d, %d) does not end at the file's size %d", pos, pos+n, st.Size())
	}
	sub := filepath.Join(b.m.Dir, filepath.Base(filepath.Dir(file)))
	if !b.created[sub] {
		if err := mkdirDurable(b.fs, sub); err != nil {
			return e, err
		}
		b.created[sub] = true
	}
	dst := filepath.Join(sub, fmt.Sprintf("%s@%d", filepath.Base(file), pos))
	out, err := b.fs.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return e, err
	}
	h := sha256.New()
	copied, err := io.Copy(io.MultiWriter(out, h), io.NewSectionReader(f, pos, n))
	if err == nil && copied != n {
		err = fmt.Errorf("read %d of %d bytes", copied, n)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = b.fs.SyncDir(sub)
	}
	if err != nil {
		_ = b.fs.Remove(dst)
		return e, err
	}
	return BackupEntry{Original: file, Backup: dst, Position: pos, Length: n,
		SHA256: hex.EncodeToString(h.Sum(nil)), Kind: kind, OldSize: st.Size()}, nil
}

// Manifest returns a copy of what the backup holds.
func (b *Backup) Manifest() *BackupManifest {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.m
	m.Files = append([]BackupEntry(nil), b.m.Files...)
	return &m
}

// Check compares the backup with the cuts recovery reports it made, and with
// the files as recovery left them: every cut is held as such, every file cut
// to a tail ends exactly where its saved bytes begin, every file saved whole
// is gone.
func (b *Backup) Check(cuts []segment.Cut) error {
	m := b.Manifest()
	saved := map[string]BackupEntry{}
	for _, e := range m.Files {
		saved[e.Original] = e
	}
	for _, c := range cuts {
		e, ok := saved[c.File]
		if !ok || e.Position != c.Position || e.Length != c.Bytes {
			return fmt.Errorf("%w: recovery cut [%d, +%d) of %s, which the backup does not hold as such", ErrBackup, c.Position, c.Bytes, c.File)
		}
	}
	for _, e := range m.Files {
		st, err := b.fs.Stat(e.Original)
		switch {
		case e.Kind == "tail" && (err != nil || st.Size() != e.Position):
			return fmt.Errorf("%w: %s: expected it cut to %d bytes (%v)", ErrBackup, e.Original, e.Position, err)
		case e.Kind != "tail" && err == nil:
			return fmt.Errorf("%w: %s: expected it removed, it is still there", ErrBackup, e.Original)
		}
	}
	return nil
}

// partitionBackup is the SaveCut of one partition's load at broker start: on
// the first cut it starts a backup in <partition>/recovery-backup/<UTC time>
// (or, with Options.BackupDir, in that shared backup).
type partitionBackup struct {
	fs     vfs.FS
	pdir   string
	now    time.Time
	shared func() (*Backup, error)
	b      *Backup
}

func (p *partitionBackup) save(file string, pos, n int64, kind string) (string, error) {
	if p.b == nil {
		var err error
		if p.shared != nil {
			p.b, err = p.shared()
		} else {
			p.b, err = p.start()
		}
		if err != nil {
			return "", err
		}
	}
	return p.b.Save(file, pos, n, kind)
}

// start makes a new timestamped backup directory in the partition's
// recovery-backup directory.
func (p *partitionBackup) start() (*Backup, error) {
	root := filepath.Join(p.pdir, BackupDirName)
	stamp := p.now.UTC().Format("20060102T150405.000Z")
	for i := 0; ; i++ {
		dir := filepath.Join(root, stamp)
		if i > 0 {
			dir = fmt.Sprintf("%s-%d", dir, i)
		}
		if _, err := p.fs.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return NewBackup(p.fs, dir)
		} else if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBackup, err)
		}
	}
}

// dir is the backup directory, "" before the first cut.
func (p *partitionBackup) dir() string {
	if p.b == nil {
		return ""
	}
	return p.b.m.Dir
}

// sharedBackup returns the constructor of the one backup all partitions share
// when Options.BackupDir is set (made on the first cut), else nil.
func sharedBackup(o *Options) func() (*Backup, error) {
	if o.BackupDir == "" || o.NoBackup {
		return nil
	}
	var (
		mu  sync.Mutex
		b   *Backup
		err error
	)
	return func() (*Backup, error) {
		mu.Lock()
		defer mu.Unlock()
		if b == nil && err == nil {
			b, err = NewBackup(o.FS, o.BackupDir)
		}
		return b, err
	}
}

// logBackups names, per partition, the backup holding what start cut.
func logBackups(o *Options, rep *Report) {
	for _, p := range rep.Partitions {
		if p.BackupDir != "" {
			o.Logger.Warn("bytes cut at start were saved", "partition", p.Topic+"-"+strconv.Itoa(int(p.Partition)),
				"backup", p.BackupDir, "bytes_truncated", p.BytesTruncated)
		}
	}
}
