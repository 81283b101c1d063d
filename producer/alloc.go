package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
)

// IDAllocator hands out producer ids, each once across the broker's (or
// the cluster's) lifetime. InitProducerId takes one per new producer; the
// transaction coordinator takes one per new transactional id.
type IDAllocator interface {
	Next(ctx context.Context) (int64, error)
}

// BlockSize is the number of ids reserved at once (Kafka's
// ProducerIdsBlock size).
const BlockSize = 1000

// Block is a reserved range of producer ids, bounds inclusive.
type Block struct {
	Start, End int64
}

// BlockSource reserves the next block of producer ids, durably: an id of a
// block it returned is never returned again, whatever crashes meanwhile.
// Latest is the end of the newest block reserved by anyone (the highest id
// that may have been issued), -1 when none.
type BlockSource interface {
	NextBlock(ctx context.Context) (Block, error)
	Latest(ctx context.Context) (int64, error)
}

// Blocks is the IDAllocator over a BlockSource: ids from the current block,
// a new block reserved when it runs out.
type Blocks struct {
	src BlockSource

	mu     sync.Mutex
	cur    Block
	next   int64 // next id of cur; > cur.End: reserve a new block
	latest int64 // the newest block end the source reported
}

// NewBlocks returns an allocator over src.
func NewBlocks(src BlockSource) *Blocks {
	return &Blocks{src: src, next: 0, cur: Block{Start: 0, End: -1}, latest: -1}
}

// Next returns a producer id never returned before.
func (b *Blocks) Next(ctx context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next > b.cur.End {
		blk, err := b.src.NextBlock(ctx)
		if err != nil {
			return -1, err
		}
		b.cur, b.next = blk, blk.Start
	}
	id := b.next
	b.next++
	return id, nil
}

// MayBeIssued reports whether id can be a producer id some allocator over
// the same source handed out: 0 <= id <= the newest block's end. The
// newest end is asked of the source only when id lies above this
// allocator's own block (another broker may have reserved later blocks).
func (b *Blocks) MayBeIssued(ctx context.Context, id int64) (bool, error) {
	if id < 0 {
		return false, nil
	}
	b.mu.Lock()
	end := max(b.cur.End, b.latest)
	b.mu.Unlock()
	if id <= end {
		return true, nil
	}
	latest, err := b.src.Latest(ctx)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	b.latest = max(b.latest, latest)
	b.mu.Unlock()
	return id <= latest, nil
}

// BlockFile is the name, in a single node's data directory, of the file
// that records the newest reserved block, in the JSON Kafka keeps in
// ZooKeeper's /latest_producer_id_block.
const BlockFile = "producer_id_block"

// FileBlocks is the single-node BlockSource: the newest block is recorded
// in dir/producer_id_block, written with fsutil.WriteFileAtomic before any
// id of the block is handed out.
type FileBlocks struct {
	fs     vfs.FS
	path   string
	broker int32
	mu     sync.Mutex
}

// NewFileBlocks returns the source kept in dir (broker is recorded in the
// JSON, as Kafka does).
func NewFileBlocks(fsys vfs.FS, dir string, broker int32) *FileBlocks {
	return &FileBlocks{fs: fsys, path: filepath.Join(dir, BlockFile), broker: broker}
}

type blockJSON struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// EncodeBlock returns Kafka's JSON for a block reserved by broker.
func EncodeBlock(broker int32, b Block) []byte {
	out, _ := json.Marshal(blockJSON{Version: 1, Broker: broker,
		BlockStart: strconv.FormatInt(b.Start, 10), BlockEnd: strconv.FormatInt(b.End, 10)})
	return out
}

// DecodeBlock parses Kafka's block JSON.
func DecodeBlock(data []byte) (Block, error) {
	var j blockJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return Block{}, fmt.Errorf("%w: %w", ErrBadBlock, err)
	}
	start, err1 := strconv.ParseInt(j.BlockStart, 10, 64)
	end, err2 := strconv.ParseInt(j.BlockEnd, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Block{}, fmt.Errorf("%w: %w", ErrBadBlock, err)
	}
	if j.Version != 1 || start < 0 || end < start {
		return Block{}, fmt.Errorf("%w: version %d, block [%d, %d]", ErrBadBlock, j.Version, start, end)
	}
	return Block{Start: start, End: end}, nil
}

func (f *FileBlocks) read() (int64, error) {
	r, err := f.fs.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("%w: %w", ErrBlockIO, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return -1, fmt.Errorf("%w: %s: %w", ErrBlockIO, f.path, err)
	}
	b, err := DecodeBlock(data)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", f.path, err)
	}
	return b.End, nil
}

// NextBlock reserves the block after the recorded one. A file that does
// not parse is an error: guessing could hand out ids twice.
func (f *FileBlocks) NextBlock(context.Context) (Block, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end, err := f.read()
	if err != nil {
		return Block{}, err
	}
	b := Block{Start: end + 1, End: end + BlockSize}
	if err := fsutil.WriteFileAtomic(f.fs, f.path, EncodeBlock(f.broker, b)); err != nil {
		return Block{}, fmt.Errorf("%w: %w", ErrBlockIO, err)
	}
	return b, nil
}

// Latest is the recorded block's end, -1 when none.
func (f *FileBlocks) Latest(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read()
}
